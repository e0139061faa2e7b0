package model

import "encoding/json"

// Attempt outcomes.
const (
	OutcomeSuccess    = "success"
	OutcomeFailed     = "failed"
	OutcomeTimeout    = "timeout"
	OutcomeLost       = "lost"
	OutcomeCanceled   = "canceled"
	OutcomeTerminated = "terminated"
	// OutcomeInterrupted: the attempt ended for a reason that is not the
	// work's (its executor or agent shut down, its lease lapsed before
	// its executor confirmed it or across a leader change). It does not
	// count against maxRetries: the instance runs again.
	OutcomeInterrupted = "interrupted"
)

// Attempt is one execution of an instance on one executor.
type Attempt struct {
	Number      int    `json:"number"`
	ExecutionID string `json:"executionId"`
	Executor    string `json:"executor"`
	Host        string `json:"host,omitempty"`
	PID         int    `json:"pid,omitempty"`
	StartedAt   Time   `json:"startedAt"`
	EndedAt     Time   `json:"endedAt"`
	Outcome     string `json:"outcome,omitempty"`
	ExitCode    *int   `json:"exitCode,omitempty"`
	HTTPStatus  int    `json:"httpStatus,omitempty"`
	Error       string `json:"error,omitempty"`
	// Output is the last KiB of the attempt's output; the whole kept tail
	// (64 KiB) is at GET /v1/instances/{id}/log.
	Output string `json:"output,omitempty"`
}

// Job is what an executor receives for one attempt.
type Job struct {
	InstanceID  string            `json:"instanceId"`
	ExecutionID string            `json:"executionId"`
	Task        string            `json:"task"`
	Attempt     int               `json:"attempt"`
	ScheduledAt Time              `json:"scheduledAt"`
	Timezone    string            `json:"timezone,omitempty"`
	Params      map[string]string `json:"params,omitempty"`
	Payload     json.RawMessage   `json:"payload,omitempty"`
	Action      Action            `json:"action"`
	Policy      Policy            `json:"policy"`
	// Secrets are the values of the secrets the action references (see
	// action.SecretRefs), by name, filled by the leader when it leases
	// the job. The executor masks them in the attempt's output and error.
	Secrets map[string]string `json:"secrets,omitempty"`
	// Shard is the shard this job runs of a sharded instance (its own
	// InstanceID is the shard's; Parent the sharded instance).
	Shard  *ShardRef `json:"shard,omitempty"`
	Parent string    `json:"parent,omitempty"`
	// Upstream are the results of the instance's upstream tasks, by task
	// name (protocol 8): an onSuccess instance's parent, a dependsOn
	// task's successful instance for the same date. Templates read them
	// as {{.Upstream.<task>.Result}}.
	Upstream map[string]json.RawMessage `json:"upstream,omitempty"`
	// Traceparent is the W3C trace context of the attempt's span, when
	// the leader traces (tracing): HTTP actions send it as the
	// traceparent header, shell actions get $TRACEPARENT, SDK handlers
	// a context with it as the remote parent.
	Traceparent string `json:"traceparent,omitempty"`
}

// PollRequest asks for up to Free jobs, waiting up to WaitMs.
type PollRequest struct {
	Executor string            `json:"executor"`
	Host     string            `json:"host,omitempty"`
	Labels   map[string]string `json:"labels,omitempty"`
	Free     int               `json:"free"`
	Capacity int               `json:"capacity,omitempty"` // all its slots (absent from older executors)
	WaitMs   int64             `json:"waitMs,omitempty"`
	// Capabilities say which actions the executor runs; nil (an executor
	// older than capabilities) means shell and http.
	Capabilities *Capabilities `json:"capabilities,omitempty"`
	// Session identifies the executor process (random, new at every
	// start): a lease the executor never confirmed whose executor polls
	// as a new process is charged, as the attempt may have crashed it.
	Session string `json:"session,omitempty"`
}

// Capabilities are the actions an executor runs: the leader leases it
// only instances whose action it can run (and whose executorLabels its
// labels match).
type Capabilities struct {
	Shell bool `json:"shell"`
	HTTP  bool `json:"http"`
	// Handlers are the names of its sdk handlers.
	Handlers []string `json:"handlers,omitempty"`
}

// MaxHandlers bounds Capabilities.Handlers.
const MaxHandlers = 256

// OldExecutorCapabilities are those of an executor that declares none.
var OldExecutorCapabilities = Capabilities{Shell: true, HTTP: true}

// Runs reports whether an executor with capabilities c (nil: an old
// executor) can run action a.
func (c *Capabilities) Runs(a *Action) bool {
	if c == nil {
		c = &OldExecutorCapabilities
	}
	switch a.Type {
	case ActionShell:
		return c.Shell
	case ActionHTTP:
		return c.HTTP
	case ActionSDK:
		for _, h := range c.Handlers {
			if h == a.Handler {
				return true
			}
		}
	}
	return false
}

// LabelsMatch reports whether an executor with labels have may run work
// that needs the labels need: it has each of them.
func LabelsMatch(need, have map[string]string) bool {
	for k, v := range need {
		if have[k] != v {
			return false
		}
	}
	return true
}

// PollResponse hands jobs to an executor, leased to it for LeaseMs.
type PollResponse struct {
	Jobs        []Job `json:"jobs"`
	LeaseMs     int64 `json:"leaseMs"`
	HeartbeatMs int64 `json:"heartbeatMs"`
	// Released says the node answering stopped leading while the poll
	// waited: it holds no jobs, and the executor should poll again at
	// once (the node it asks forwards to the new leader).
	Released bool `json:"released,omitempty"`
	// HeldMs is how long the leader held the poll before it leased Jobs,
	// on its own monotonic clock, at least 1 when Jobs are leased (0: a
	// leader that does not say). The executor counts each lease from the
	// moment it sent the poll plus HeldMs, a moment no later than the
	// lease's start, so that its deadline comes before the leader's.
	HeldMs int64 `json:"heldMs,omitempty"`
	// Protocol is the protocol the cluster has reached (every member
	// speaks it) when the poll is answered. From 6 an executor may report
	// attempts Interrupted, from 8 with their results.
	Protocol int `json:"protocol,omitempty"`
}

// RunningAttempt is one attempt an executor reports alive.
type RunningAttempt struct {
	InstanceID string `json:"instanceId"`
	Attempt    int    `json:"attempt"`
	// Output is new output since the previous heartbeat (for live logs).
	Output string `json:"output,omitempty"`
	// NotStarted renews a lease the executor has not acted on yet (a job
	// that arrived late is renewed before it starts): it does not confirm
	// the attempt (protocol 6; sent only to a cluster that reached it).
	NotStarted bool `json:"notStarted,omitempty"`
}

// HeartbeatRequest renews the leases of an executor's running attempts.
type HeartbeatRequest struct {
	Executor string           `json:"executor"`
	Running  []RunningAttempt `json:"running"`
}

// StopAttempt tells an executor to kill an attempt: it was terminated,
// canceled, or fenced (a newer attempt exists or its lease was lost).
type StopAttempt struct {
	InstanceID string `json:"instanceId"`
	Attempt    int    `json:"attempt"`
	Reason     string `json:"reason"`
}

// HeartbeatResponse lists attempts the executor must stop.
type HeartbeatResponse struct {
	Stop []StopAttempt `json:"stop"`
}

// CompleteRequest reports the end of an attempt. The attempt is named by
// its execution id in the URL (POST /v1/attempts/{executionId}/complete).
type CompleteRequest struct {
	Executor   string `json:"executor"`
	Host       string `json:"host,omitempty"`
	PID        int    `json:"pid,omitempty"`
	Success    bool   `json:"success"`
	Retryable  bool   `json:"retryable"`
	TimedOut   bool   `json:"timedOut,omitempty"`
	Canceled   bool   `json:"canceled,omitempty"`
	ExitCode   int    `json:"exitCode"`
	HTTPStatus int    `json:"httpStatus,omitempty"`
	Error      string `json:"error,omitempty"`
	Output     string `json:"output,omitempty"`
	// Interrupted says the executor stopped the attempt for a reason of
	// its own (it shut down, or its lease could not be renewed), not the
	// work's: the attempt is recorded interrupted, the instance runs
	// again and no retry is used (protocol 6; see PollResponse.Protocol).
	Interrupted bool `json:"interrupted,omitempty"`
	// RanMs is how long the action ran on the executor's monotonic clock.
	// The leader uses it to detect a fenced attempt that outlived its
	// lease (an overlap with the next attempt) and records it.
	RanMs int64 `json:"ranMs,omitempty"`
	// Result is what a successful attempt publishes: JSON, at most
	// MaxResult bytes (protocol 8; dropped before).
	Result json.RawMessage `json:"result,omitempty"`
}

// MaxResult bounds an attempt's result (JSON).
const MaxResult = 64 << 10

// CheckResult checks a report's result: only with a success, at most
// MaxResult bytes, one JSON value.
func (r *CompleteRequest) CheckResult() *Error {
	switch {
	case len(r.Result) == 0:
		return nil
	case !r.Success:
		return FieldErrorf("result", "only a successful attempt publishes a result")
	case len(r.Result) > MaxResult:
		return FieldErrorf("result", "%d bytes, over the limit of %d (64 KiB)", len(r.Result), MaxResult)
	case !json.Valid(r.Result):
		return FieldErrorf("result", "not JSON")
	}
	return nil
}

// InstanceResult is the result an instance's successful attempt
// published (GET /v1/instances/{id}/result).
type InstanceResult struct {
	InstanceID string          `json:"instanceId"`
	Task       string          `json:"task"`
	Attempt    int             `json:"attempt"`
	Result     json.RawMessage `json:"result"`
}

// ApprovalRequest asks an operator to approve a running attempt.
type ApprovalRequest struct {
	Attempt int    `json:"attempt"`
	Summary string `json:"summary"`
}

// Decision is an operator's answer (approve, reject, cancel, terminate).
type Decision struct {
	Comment string `json:"comment,omitempty"`
}

// InstanceLog is the kept output of an instance's latest attempt.
type InstanceLog struct {
	InstanceID string `json:"instanceId"`
	Attempt    int    `json:"attempt"`
	State      string `json:"state"`
	// Live is true while the attempt runs: Output is what the executor has
	// streamed so far, not yet committed.
	Live bool `json:"live"`
	// Offset is the position of Output's first byte in the attempt's
	// output (a follower passes it back as ?offset= to get only new bytes).
	Offset int64  `json:"offset"`
	Output string `json:"output"`
}

// CompleteItem is one report in a batch (POST /v1/attempts/complete).
type CompleteItem struct {
	ExecutionID string          `json:"executionId"`
	Report      CompleteRequest `json:"report"`
}

// CompleteOutcome answers one report of a batch: the instance's new state,
// or why the report was refused (Code "conflict" for a fenced attempt).
type CompleteOutcome struct {
	ExecutionID string `json:"executionId"`
	State       string `json:"state,omitempty"`
	Code        string `json:"code,omitempty"`
	Error       string `json:"error,omitempty"`
}
