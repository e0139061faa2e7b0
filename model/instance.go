package model

import (
	"encoding/json"
	"fmt"
	"strconv"
)

// Instance states (DESIGN §5).
const (
	StateScheduled       = "SCHEDULED"
	StateReady           = "READY"
	StateRunning         = "RUNNING"
	StateSuccess         = "SUCCESS"
	StateRetrying        = "RETRYING"
	StateFailed          = "FAILED"
	StateWaitingApproval = "WAITING_APPROVAL"
	StateTerminated      = "TERMINATED"
	StateBlocked         = "BLOCKED"
	StateSkipped         = "SKIPPED"
	StateCanceled        = "CANCELED"
)

// Instance sources: what created an instance.
const (
	SourceCron       = "cron"
	SourceInterval   = "interval"
	SourceOnce       = "once"
	SourceDelay      = "delay"
	SourceAPI        = "api"
	SourceRetry      = "retry"
	SourceBackfill   = "backfill"
	SourceDependency = "dependency"
	SourceOnFailure  = "on_failure"
)

// DefaultMaxPayload is the default bound of a submission's payload.
const DefaultMaxPayload = 64 << 10

// MaxSubmitBatch is the largest array accepted by one submit request.
const MaxSubmitBatch = 10000

// Instance is one run of a task for one fire time.
type Instance struct {
	ID             string            `json:"id"`
	Task           string            `json:"task"`
	TaskVersion    uint64            `json:"taskVersion"`
	Source         string            `json:"source"`
	State          string            `json:"state"`
	Params         map[string]string `json:"params,omitempty"`
	Payload        json.RawMessage   `json:"payload,omitempty"`
	IdempotencyKey string            `json:"idempotencyKey"`
	Attempts       int               `json:"attempts"`
	CreatedAt      Time              `json:"createdAt"`
	ScheduledAt    Time              `json:"scheduledAt"`
	FiredAt        Time              `json:"firedAt"`
	StartedAt      Time              `json:"startedAt"`
	FinishedAt     Time              `json:"finishedAt"`
	Executor       string            `json:"executor,omitempty"`
	LastError      string            `json:"lastError,omitempty"`
	RetryAt        Time              `json:"retryAt"`
	AttemptList    []Attempt         `json:"attemptList,omitempty"`
	Events         []Event           `json:"events,omitempty"`
	// Why says in one sentence what an unfinished instance waits for
	// (GET /v1/instances/{id} only).
	Why string `json:"why,omitempty"`
	// Parent and Shard name, for a shard of a sharded instance, the
	// instance it is a shard of and its place; Shards counts, for a
	// sharded instance, its shards by state (policy.shards, broadcast).
	Parent string        `json:"parent,omitempty"`
	Shard  *ShardRef     `json:"shard,omitempty"`
	Shards *ShardSummary `json:"shards,omitempty"`
	// Lineage names the instances dependsOn links to this one for its
	// scheduled date, if any (GET /v1/instances/{id} only).
	Lineage *Lineage `json:"lineage,omitempty"`
	// Canary: the task's rollout picked it to run the canary version,
	// TaskVersion (protocol 8).
	Canary bool `json:"canary,omitempty"`
}

// ShardRef is a shard's place in its instance: Index of Total (0-based),
// and for a broadcast the executor it runs on.
type ShardRef struct {
	Index    int    `json:"index"`
	Total    int    `json:"total"`
	Executor string `json:"executor,omitempty"`
}

// Lineage is what dependsOn links to a scheduled instance for its date:
// Upstream, each dependsOn task's success for the date (or, when none,
// its failure); Downstream, the scheduled instances of that date of the
// tasks that depend on the instance's task.
type Lineage struct {
	Date       string        `json:"date"`
	Upstream   []LineageLink `json:"upstream,omitempty"`
	Downstream []LineageLink `json:"downstream,omitempty"`
}

// LineageLink is one linked instance, with its task and state.
type LineageLink struct {
	Task     string `json:"task"`
	Instance string `json:"instance"`
	State    string `json:"state"`
}

// ShardList is a sharded instance's shards, in order (GET
// /v1/instances/{id}/shards): empty until it fanned out.
type ShardList struct {
	Instance string        `json:"instance"`
	Summary  *ShardSummary `json:"summary,omitempty"`
	Shards   []Instance    `json:"shards"`
}

// ShardSummary counts a sharded instance's shards: Total, and how many
// are in each state (only states some shard is in).
type ShardSummary struct {
	Total   int            `json:"total"`
	ByState map[string]int `json:"byState,omitempty"`
}

// Event is one thing that happened to an instance or a task.
type Event struct {
	Time    Time   `json:"time"`
	Type    string `json:"type"`
	Node    string `json:"node,omitempty"`
	Actor   string `json:"actor,omitempty"`
	Message string `json:"message,omitempty"`
}

// InstanceList is one page of instances, newest first.
type InstanceList struct {
	Instances  []Instance `json:"instances"`
	NextCursor string     `json:"nextCursor,omitempty"`
}

// InstanceFilter selects instances in a listing.
type InstanceFilter struct {
	Task   string
	State  string
	Source string // one of Sources
	Since  Time   // created at or after
	Until  Time   // created before
	Cursor string // list instances older than this id
	Limit  int
}

// SubmitRequest is one delayed submission: a payload for an instance due
// after Delay (from the leader's clock when it commits) or At.
type SubmitRequest struct {
	Payload        json.RawMessage `json:"payload,omitempty"`
	Delay          Duration        `json:"delay,omitempty"`
	At             *Time           `json:"at,omitempty"`
	IdempotencyKey string          `json:"idempotencyKey,omitempty"`
}

// Submitted is the answer for one submission.
type Submitted struct {
	ID          string `json:"id"`
	ScheduledAt Time   `json:"scheduledAt"`
	State       string `json:"state"`
	// Existing is true when the idempotency key was already used: ID is
	// the instance the first submission created.
	Existing bool `json:"existing,omitempty"`
}

// SubmitResult answers a submit request, one entry per submission in order.
type SubmitResult struct {
	Instances []Submitted `json:"instances"`
}

// AppendJSON appends r encoded as encoding/json encodes it (without the
// trailing newline of an Encoder). An answer to 10,000 submissions is the
// API's largest hot-path reply; writing it directly costs a fraction of the
// reflective encoder.
func (r *SubmitResult) AppendJSON(b []byte) []byte {
	b = append(b, `{"instances":`...)
	if r.Instances == nil {
		return append(b, "null}"...)
	}
	b = append(b, '[')
	for i := range r.Instances {
		s := &r.Instances[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"id":`...)
		b = appendJSONString(b, s.ID)
		b = append(b, `,"scheduledAt":`...)
		b = s.ScheduledAt.AppendJSON(b)
		b = append(b, `,"state":`...)
		b = appendJSONString(b, s.State)
		if s.Existing {
			b = append(b, `,"existing":true`...)
		}
		b = append(b, '}')
	}
	return append(b, "]}"...)
}

// appendJSONString appends s as a JSON string, as encoding/json writes it.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s) // rare: let encoding/json escape it
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// TriggerRequest runs a task now with parameters.
type TriggerRequest struct {
	Params         map[string]string `json:"params,omitempty"`
	IdempotencyKey string            `json:"idempotencyKey,omitempty"`
}

// TaskEvents lists a task's own events (misfires, ...), oldest first.
type TaskEvents struct {
	Task   string  `json:"task"`
	Events []Event `json:"events"`
}

// FormatID renders an instance id: 16 hex digits, so ids sort by creation.
func FormatID(id uint64) string { return fmt.Sprintf("%016x", id) }

// ParseID parses an instance id rendered by FormatID.
func ParseID(s string) (uint64, error) {
	if len(s) != 16 {
		return 0, FieldErrorf("id", "%q is not an instance id (16 hex digits)", s)
	}
	v, err := strconv.ParseUint(s, 16, 64)
	if err != nil {
		return 0, FieldErrorf("id", "%q is not an instance id (16 hex digits)", s)
	}
	return v, nil
}

// Validate checks a submission against the payload bound.
func (r *SubmitRequest) Validate(field string, maxPayload int) error {
	if r.Delay < 0 {
		return FieldErrorf(field+"delay", "must not be negative, got %s", r.Delay.Std())
	}
	if r.At != nil && r.Delay != 0 {
		return FieldErrorf(field+"delay", "give delay or at, not both")
	}
	if len(r.Payload) > maxPayload {
		return &Error{Code: CodeTooLarge, Field: field + "payload", Message: fmt.Sprintf("payload is %d bytes, more than the %d allowed", len(r.Payload), maxPayload)}
	}
	if len(r.IdempotencyKey) > 256 {
		return FieldErrorf(field+"idempotencyKey", "longer than 256 bytes")
	}
	return nil
}

// MaxBackfill bounds the fire times one backfill request may create.
const MaxBackfill = 10000

// BackfillRequest asks for one instance per fire time in [From, To].
type BackfillRequest struct {
	From Time `json:"from"`
	To   Time `json:"to"`
}

// RerunRequest selects a task's finished instances to run again: fire
// times in [From, To] and a state of States (default FAILED).
type RerunRequest struct {
	From   Time     `json:"from"`
	To     Time     `json:"to"`
	States []string `json:"states,omitempty"`
}

// RerunResult lists the instances a task's re-run ran again, each in the
// state it is in now.
type RerunResult struct {
	Rerun     int         `json:"rerun"`
	Instances []Submitted `json:"instances"`
}

// BackfillResult lists the instances a backfill created; Existing counts
// fire times that already had an instance (fired or backfilled before).
type BackfillResult struct {
	Created  []string `json:"created"`
	Existing int      `json:"existing"`
}

// Sources lists every instance source.
var Sources = []string{SourceCron, SourceInterval, SourceOnce, SourceDelay, SourceAPI, SourceRetry,
	SourceBackfill, SourceDependency, SourceOnFailure}

// ActiveStates are the states of the active index: fired and not
// finished.
var ActiveStates = []string{StateReady, StateRunning, StateRetrying, StateBlocked, StateWaitingApproval}
