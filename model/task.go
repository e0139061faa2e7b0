package model

import "github.com/ax-scheduler/ax/trigger"

// Trigger types.
const (
	TriggerCron     = "cron"
	TriggerInterval = "interval"
	TriggerOnce     = "once"
	TriggerEvent    = "event"
)

// Action types.
const (
	ActionShell = "shell"
	ActionHTTP  = "http"
	ActionSDK   = "sdk"
)

// Task is the recipe of a job: when it fires (Trigger), what runs (Action)
// and how runs are governed (Policy). Version, CreatedAt, UpdatedAt,
// UpdatedBy, NextFireTimes, Runs and Completed are set by the server; on a write a non-zero
// Version is a precondition (the write fails with a conflict unless it is
// the current version) and the other server fields are ignored.
type Task struct {
	Name    string            `json:"name"`
	Trigger Trigger           `json:"trigger"`
	Action  Action            `json:"action"`
	Policy  Policy            `json:"policy"`
	Labels  map[string]string `json:"labels,omitempty"`
	Paused  bool              `json:"paused"`
	// Params declares the task's parameters (protocol 8; ParamSpec):
	// once it declares any, a trigger may pass only those, must pass the
	// required ones, and every instance gets the defaults of the others.
	Params map[string]ParamSpec `json:"params,omitempty"`
	// Rollout, on a write only, rolls the definition out as a canary
	// (RolloutSpec); it is not stored.
	Rollout *RolloutSpec `json:"rollout,omitempty"`

	Version       uint64 `json:"version,omitempty"`
	CreatedAt     Time   `json:"createdAt"`
	UpdatedAt     Time   `json:"updatedAt"`
	UpdatedBy     string `json:"updatedBy,omitempty"`
	NextFireTimes []Time `json:"nextFireTimes,omitempty"`
	// Runs counts the trigger's fires (from protocol 7; docs/tasks.md);
	// Completed says why the trigger fires no more ("" while it may).
	Runs      uint64 `json:"runs,omitempty"`
	Completed string `json:"completed,omitempty"`
	// Resolved is set by the state machine's reads (Resolved).
	Resolved *Resolved `json:"-"`
}

// Trigger says when a task fires. Which fields apply depends on Type:
// cron (Expression, Timezone), interval (Every, StartAt), once (At or Delay)
// or event (none). Cron and interval take StartAt, EndAt, MaxRuns and
// Jitter, once Jitter (protocol 7 but interval's StartAt; docs/tasks.md).
type Trigger struct {
	Type       string   `json:"type"`
	Expression string   `json:"expression,omitempty"`
	Timezone   string   `json:"timezone,omitempty"`
	Every      Duration `json:"every,omitempty"`
	StartAt    *Time    `json:"startAt,omitempty"`
	At         *Time    `json:"at,omitempty"`
	Delay      Duration `json:"delay,omitempty"`
	EndAt      *Time    `json:"endAt,omitempty"`
	MaxRuns    int64    `json:"maxRuns,omitempty"`
	Jitter     Duration `json:"jitter,omitempty"`
	// Calendars names the calendars whose excluded days the trigger does
	// not fire on, and OnExcluded what becomes of such a fire: skip
	// (default), next or previous (trigger.Exclude; protocol 8).
	Calendars  []string `json:"calendars,omitempty"`
	OnExcluded string   `json:"onExcluded,omitempty"`
}

// Resolved is what a stored task's firing depends on beside its
// definition, compiled by the state machine's reads: its trigger's
// calendars, in the trigger's order, and the blackout windows whose
// selector matches its labels (none for a task not read from the state).
type Resolved struct {
	Calendars []*trigger.Calendar
	Blackouts []*trigger.Blackout
}

// Action says what runs on an executor: a shell command, an HTTP request or
// a handler registered with the Go SDK. Command, URL and Body are
// templates (see ParseTemplate); Env and Headers values are literal or
// taken from a secret (see Value).
type Action struct {
	Type    string           `json:"type"`
	Command string           `json:"command,omitempty"`
	Env     map[string]Value `json:"env,omitempty"`
	Workdir string           `json:"workdir,omitempty"`
	Method  string           `json:"method,omitempty"`
	URL     string           `json:"url,omitempty"`
	Headers map[string]Value `json:"headers,omitempty"`
	Body    string           `json:"body,omitempty"`
	Timeout Duration         `json:"timeout,omitempty"`
	Handler string           `json:"handler,omitempty"`
	// ResultFrom, for an http action, is a JSON pointer (RFC 6901) to the
	// part of the JSON response body that is the attempt's result
	// (protocol 8; see MaxResult).
	ResultFrom string `json:"resultFrom,omitempty"`
}

// Policy governs retries, timeouts, concurrency, catch-up, approval,
// notifications, dependencies and retention of a task's instances.
type Policy struct {
	MaxRetries         int      `json:"maxRetries,omitempty"`
	RetryInterval      Duration `json:"retryInterval,omitempty"`
	Backoff            string   `json:"backoff,omitempty"`
	MaxRetryInterval   Duration `json:"maxRetryInterval,omitempty"`
	RetryableExitCodes []int    `json:"retryableExitCodes,omitempty"`
	Timeout            Timeout  `json:"timeout,omitempty"`
	MaxConcurrency     int      `json:"maxConcurrency,omitempty"`
	// Overlap says what a fire does when every concurrency slot is
	// busy: queue (BLOCKED until a slot frees), skip (SKIPPED) or, from
	// protocol 8, replace (OverlapReplace).
	Overlap        string            `json:"overlap,omitempty"`
	Catchup        string            `json:"catchup,omitempty"`
	CatchupWindow  Duration          `json:"catchupWindow,omitempty"`
	Approval       string            `json:"approval,omitempty"`
	IdempotencyKey string            `json:"idempotencyKey,omitempty"`
	Notify         []string          `json:"notify,omitempty"`
	OnFailure      []string          `json:"onFailure,omitempty"`
	DependsOn      []string          `json:"dependsOn,omitempty"`
	Retention      Duration          `json:"retention,omitempty"`
	ExecutorLabels map[string]string `json:"executorLabels,omitempty"`

	// Protocol 4 (see UsesProto4).

	// OnUpstreamFailure says what a scheduled instance waiting for its
	// dependsOn does when an upstream instance for its date ends FAILED
	// or TERMINATED: wait (default: stay BLOCKED until a success for
	// that date), skip (SKIPPED) or fail (FAILED).
	OnUpstreamFailure string `json:"onUpstreamFailure,omitempty"`
	// OnSuccess lists the tasks to run when an instance of this task
	// succeeds: one instance of each (source dependency), created by the
	// state machine with the success.
	OnSuccess []Chain `json:"onSuccess,omitempty"`
	// MaxQueued bounds the BLOCKED queue of overlap=queue (0: the default,
	// DefaultMaxQueued): an instance that would queue beyond it is SKIPPED.
	MaxQueued int `json:"maxQueued,omitempty"`

	// Protocol 8.

	// KeepSuccessful keeps at most this many SUCCESS instances of the
	// task, the newest by finish time (0: no count limit), on top of
	// retention: retention deletes the older ones, whichever comes first
	// (Kubernetes' successfulJobsHistoryLimit).
	KeepSuccessful int `json:"keepSuccessful,omitempty"`
	// KeepFailed keeps at most this many finished instances of the task
	// that did not succeed (FAILED, TERMINATED, CANCELED, SKIPPED), the
	// newest (0: no count limit); an instance whose failure alert is
	// still pending is kept until it is handled.
	KeepFailed int `json:"keepFailed,omitempty"`
	// Deadline is when each instance should have succeeded at the latest
	// (Deadline); past it, unfinished, it raises deadline_missed.
	Deadline *Deadline `json:"deadline,omitempty"`
	// Priority orders the task's READY instances against other tasks'
	// (protocol 8; -MaxPriority..MaxPriority, default 0): an executor is
	// handed the highest first, FIFO within a priority, and each second
	// an instance waits READY raises it by one (aging), so that low
	// priorities never starve.
	Priority int `json:"priority,omitempty"`
	// Pool names a shared pool of slots (Pool; protocol 8) the task's
	// instances also need one of to run.
	Pool string `json:"pool,omitempty"`
	// Shards runs each instance as this many shards (1..MaxShards;
	// protocol 8): each leased, retried and reported on its own, at most
	// one per executor while free executors remain. Broadcast runs one
	// shard on every executor that can run the task when it starts.
	// ShardFailure says what a shard that fails for good does: fail-fast
	// (default: the instance fails at once, its unfinished shards are
	// stopped) or finish (the others run to their end first).
	Shards       int    `json:"shards,omitempty"`
	Broadcast    bool   `json:"broadcast,omitempty"`
	ShardFailure string `json:"shardFailure,omitempty"`
	// RateLimit bounds how often the task's instances start (RateLimit;
	// protocol 8).
	RateLimit *RateLimit `json:"rateLimit,omitempty"`
}

// MaxShards bounds policy.shards and the executors a broadcast runs on.
const MaxShards = 1000

// policy.shardFailure values.
const (
	ShardFailFast = "fail-fast"
	ShardFinish   = "finish"
)

// Sharded reports whether the policy runs an instance as shards.
func (p *Policy) Sharded() bool { return p.Shards > 0 || p.Broadcast }

// MaxPriority bounds policy.priority, both ways.
const MaxPriority = 1000

// MaxKeep bounds policy.keepSuccessful and policy.keepFailed.
const MaxKeep = 1_000_000

// OverlapReplace is policy.overlap "replace" (protocol 8): a fire that
// finds every slot busy ends the oldest instance holding one as
// TERMINATED ("replaced by" the new one; a running attempt is stopped
// within its executor's grace) and takes its slot, as Kubernetes'
// concurrencyPolicy Replace and Temporal's TerminateOther do. Delayed
// submissions, backfills and re-runs queue instead: each is work asked
// for by name, and a backfill's instances would replace one another.
const OverlapReplace = "replace"

// Chain is one entry of policy.onSuccess: a task to run and the params to
// run it with (literal values; parent_task and parent_instance are added).
type Chain struct {
	Task   string            `json:"task"`
	Params map[string]string `json:"params,omitempty"`
}

// Bounds and defaults of the protocol 4 policy fields.
const (
	// DefaultMaxQueued is policy.maxQueued when unset.
	DefaultMaxQueued = 100
	// MaxMaxQueued is the largest policy.maxQueued.
	MaxMaxQueued = 100_000
	// MaxOnSuccess bounds the entries of policy.onSuccess.
	MaxOnSuccess = 16
	// MaxChainParams bounds the params of one onSuccess entry.
	MaxChainParams = 32
)

// Params that an onSuccess instance gets from its parent, and an
// onFailure instance from the failed one.
const (
	ParamParentTask     = "parent_task"
	ParamParentInstance = "parent_instance"
	ParamFailedTask     = "failed_task"
	ParamFailedInstance = "failed_instance"
)

// SystemParam reports whether name is a parameter ax itself passes
// (onSuccess's parent_task and parent_instance, onFailure's failed_task
// and failed_instance): a task cannot declare one, and its parameter
// declarations do not refuse them.
func SystemParam(name string) bool {
	switch name {
	case ParamParentTask, ParamParentInstance, ParamFailedTask, ParamFailedInstance:
		return true
	}
	return false
}

// UsesProto4 returns the first policy field that needs every member at
// protocol 4 ("" when none is set): onUpstreamFailure, onSuccess,
// maxQueued, or a timeout of "none".
func (p *Policy) UsesProto4() string {
	switch {
	case p.OnUpstreamFailure != "":
		return "policy.onUpstreamFailure"
	case len(p.OnSuccess) > 0:
		return "policy.onSuccess"
	case p.MaxQueued != 0:
		return "policy.maxQueued"
	case p.Timeout == NoTimeout:
		return "policy.timeout"
	}
	return ""
}

// QueueLimit is the effective maxQueued.
func (p *Policy) QueueLimit() int {
	if p.MaxQueued > 0 {
		return p.MaxQueued
	}
	return DefaultMaxQueued
}

// TaskList is one page of tasks. NextCursor, when set, is passed as
// ?cursor= to fetch the next page.
type TaskList struct {
	Tasks      []Task `json:"tasks"`
	NextCursor string `json:"nextCursor,omitempty"`
}

// TaskVersion is one entry of a task's history: the definition as it was
// after the change, the operation, who made it and when (leader time).
type TaskVersion struct {
	Version uint64 `json:"version"`
	Op      string `json:"op"` // create, update, pause, resume, delete
	Actor   string `json:"actor,omitempty"`
	Time    Time   `json:"time"`
	Task    *Task  `json:"task,omitempty"`
}

// TaskHistory is the list of versions of a task, oldest first.
type TaskHistory struct {
	Name     string        `json:"name"`
	Versions []TaskVersion `json:"versions"`
}

// WriteResult is the answer to a task write.
type WriteResult struct {
	Name    string `json:"name"`
	Version uint64 `json:"version"`
	// Changed is false when the write left the task as it was (an apply of
	// an identical definition, a pause of a paused task).
	Changed bool `json:"changed"`
	// Created is true when a PUT created the task (from protocol 5).
	Created bool `json:"created,omitempty"`
}

// TaskFilter selects tasks in a listing.
type TaskFilter struct {
	Labels map[string]string // all must match
	Paused *bool
	Cursor string // list names strictly after this one
	Limit  int
}
