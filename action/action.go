package action

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/ax-scheduler/ax/action/proc"
	"github.com/ax-scheduler/ax/action/redact"
	"github.com/ax-scheduler/ax/model"
)

// OutputLimit is how much output a Result keeps: the last OutputLimit bytes
// of a shell command's stdout+stderr or of an SDK handler's output, the
// first OutputLimit bytes of an HTTP response body.
const OutputLimit = 64 << 10

// DefaultKillGrace is the time between SIGTERM and SIGKILL when a shell
// attempt is stopped, and the time an SDK handler is given to return after
// its context is done, when Runner.KillGrace is zero.
const DefaultKillGrace = 5 * time.Second

// DefaultHTTPTimeout bounds an HTTP action when neither the action nor the
// policy sets a timeout.
const DefaultHTTPTimeout = 60 * time.Second

// drainTimeout bounds the wait for the last output of a shell attempt after
// its process group is gone (a process that left the group may still hold
// the pipe open).
const drainTimeout = time.Second

// ErrPermanent marks an SDK handler error that retrying cannot fix: a
// handler error that wraps it (errors.Is) fails the attempt without retry.
// Wrap with fmt.Errorf("bad order %s: %w", id, action.ErrPermanent) or use
// Permanent.
var ErrPermanent = errors.New("permanent failure")

// Permanent returns err marked as permanent: its message is err's, and
// errors.Is(…, ErrPermanent) and errors.Is(…, err) both hold. Permanent(nil)
// is nil.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return permanentError{err}
}

type permanentError struct{ err error }

func (e permanentError) Error() string   { return e.err.Error() }
func (e permanentError) Unwrap() []error { return []error{e.err, ErrPermanent} }

// Job is everything an executor knows about the attempt it runs: which
// instance and attempt it is, the task's action and policy, the caller's
// params and payload, and extra environment from the executor.
type Job struct {
	// InstanceID is the instance the attempt belongs to. It is the same
	// on every attempt: HTTP actions send it as X-AX-Request-ID (and the
	// attempt number as X-AX-Attempt), shell actions get AX_INSTANCE_ID,
	// so that work can be made idempotent across retries.
	InstanceID string
	// ExecutionID identifies the attempt: "<instanceId>-<attempt>"
	// (AX_EXECUTION_ID).
	ExecutionID string
	// Task is the task's name.
	Task string
	// Attempt is the attempt number, from 1.
	Attempt int
	// ScheduledAt is the fire time the instance stands for.
	ScheduledAt time.Time
	// Timezone is the IANA zone in which {{.Date}} and {{.Yesterday}} are
	// computed (the trigger's timezone); "" means UTC.
	Timezone string
	// Params are the caller's parameters. They are untrusted: in a shell
	// command they are always quoted.
	Params map[string]string
	// Payload is the caller's JSON payload; it may be nil. It is untrusted
	// like Params.
	Payload json.RawMessage
	// Action is what runs.
	Action model.Action
	// Policy governs the attempt; Run uses Timeout and RetryableExitCodes.
	Policy model.Policy
	// Upstream are the results of the instance's upstream tasks, by task
	// name (an onSuccess instance's parent, its dependsOn tasks' instances
	// for its date), as the leader delivered them with the lease:
	// templates read them as {{.Upstream.<task>.Result}}.
	Upstream map[string]json.RawMessage
	// Env is extra environment for a shell action (for example AX_ADDR and
	// AX_TOKEN, so that the script can call `ax approval request`). It
	// overrides the action's Env.
	Env map[string]string
	// Secrets are the values of the secrets the action references
	// ({{secret "name"}} in its templates, {"fromSecret": "name"} in its
	// env or headers), by name, as the leader delivered them with the
	// lease. They are masked (redact.Mask) in the Result's Output and
	// Error and in the live output.
	Secrets map[string]string
	// Shard is, for a shard of a sharded instance (policy.shards,
	// broadcast), its place: shell actions get AX_SHARD_INDEX and
	// AX_SHARD_TOTAL, HTTP actions the header X-AX-Shard: index/total,
	// templates {{.Shard.Index}} and {{.Shard.Total}}. Parent is the
	// sharded instance (AX_PARENT_ID); InstanceID is the shard's own.
	Shard  *model.ShardRef
	Parent string
	// Traceparent is the attempt span's W3C trace context when the
	// leader traces: HTTP actions send it as the traceparent header,
	// shell actions get TRACEPARENT, SDK handlers a context whose remote
	// span it is.
	Traceparent string
}

// Result is the outcome of one attempt.
type Result struct {
	// Success reports that the attempt succeeded: exit 0, HTTP 2xx or a
	// handler that returned nil, within the timeout and without
	// cancellation.
	Success bool
	// Retryable reports, when !Success, whether the retry policy allows
	// another attempt (whether one happens depends on maxRetries). It is
	// false for a canceled attempt.
	Retryable bool
	// TimedOut reports that the attempt ran past its timeout and was
	// stopped. A timed-out attempt is retryable.
	TimedOut bool
	// Canceled reports that the context given to Run was done (an operator
	// terminated the instance, the attempt was fenced, the executor is
	// shutting down) and the attempt was stopped.
	Canceled bool
	// ExitCode is a shell attempt's exit status: -1 if the shell was killed
	// by a signal or never started. It is 0 for other action types.
	ExitCode int
	// HTTPStatus is an HTTP attempt's final status code, 0 if there was no
	// response.
	HTTPStatus int
	// Error says why the attempt failed, for humans: "exit status 3",
	// "timeout after 2s: killed process group with SIGTERM", "HTTP 503
	// Service Unavailable", "dial tcp …: connection refused", a handler's
	// error text. It is empty on success.
	Error string
	// PID is the shell's process id, which is also its process group id.
	PID int
	// Output is the last OutputLimit bytes of a shell attempt's stdout and
	// stderr (interleaved as written), the first OutputLimit bytes of an
	// HTTP response body, or the last OutputLimit bytes an SDK handler wrote
	// to Output(ctx). It is nil when there was none.
	Output []byte
	// Result is what a successful attempt published (see SetResult and
	// ResultEnv): compact JSON of at most MaxResult bytes, nil for none.
	// A result that cannot be kept (not JSON, too big, holding a secret's
	// value) fails the attempt without retry, with Error saying why.
	Result json.RawMessage
}

// Handler is a Go function registered on an executor for SDK actions: an
// action {"type": "sdk", "handler": name} runs Runner.Handlers[name].
//
// A nil return is success; an error fails the attempt and is retryable
// unless it wraps ErrPermanent. ctx is done when the attempt times out or
// is canceled, and handlers must return promptly then: a handler that
// ignores its context is abandoned (its goroutine keeps running, its result
// is dropped) KillGrace after that. Output(ctx) is where a handler writes
// its log for the attempt's output.
type Handler func(ctx context.Context, job Job) error

// Runner runs attempts. The zero value runs shell and HTTP actions; set
// Handlers to run SDK actions. A Runner is safe for concurrent use and must
// not be changed while in use.
type Runner struct {
	// Handlers are the SDK handlers of this executor, by name.
	Handlers map[string]Handler
	// KillGrace is the time between SIGTERM and SIGKILL when a shell
	// attempt is stopped, and the time an SDK handler gets to return after
	// its context is done; 0 means DefaultKillGrace.
	KillGrace time.Duration
	// HTTPClient sends HTTP actions; nil means a client with Go's default
	// transport. Its redirect policy applies; the attempt's timeout comes
	// from the request context.
	HTTPClient *http.Client
	// Reaper, when set, is told about every shell attempt, so that the
	// attempts' processes are stopped if the executor dies (see package
	// action/reaper).
	Reaper *proc.Reaper
}

// Run runs one attempt of job and reports its outcome. It returns only when
// the attempt is over: for a shell action, when the shell has exited and
// the rest of its process group is gone (killed if need be). The values of
// job.Secrets are masked in the output (live and kept) and the error (see
// package action/redact).
//
// live, which may be nil, receives the output as it is produced, for
// streaming logs: a shell command's stdout and stderr, an HTTP response's
// body head, what an SDK handler writes to Output(ctx). Its errors are
// ignored, and it is not written after Run returns. It should not block:
// output is not read while it does.
//
// The timeout is the action's Timeout if set, else the policy's (for HTTP,
// else DefaultHTTPTimeout). Cancelling ctx stops the attempt the same way
// as a timeout (SIGTERM, then SIGKILL to the process group of a shell
// action; the request context of an HTTP action; the handler's context of
// an SDK action) and the Result is Canceled.
func (r *Runner) Run(ctx context.Context, job Job, live io.Writer) Result {
	if err := ctx.Err(); err != nil {
		res := Result{Canceled: true, Error: fmt.Sprintf("canceled before start (%v)", context.Cause(ctx))}
		if job.Action.Type == model.ActionShell {
			res.ExitCode = -1
		}
		return res
	}
	red := redact.Secrets(job.Secrets)
	var res Result
	switch job.Action.Type {
	case model.ActionShell:
		res = r.runShell(ctx, job, live, red)
	case model.ActionHTTP:
		res = r.runHTTP(ctx, job, live, red)
	case model.ActionSDK:
		res = r.runSDK(ctx, job, live, red)
	default:
		res = Result{Error: fmt.Sprintf("unknown action type %q", job.Action.Type)}
	}
	res.Error = red.Redact(res.Error)
	return res
}

func (r *Runner) killGrace() time.Duration {
	if r.KillGrace > 0 {
		return r.KillGrace
	}
	return DefaultKillGrace
}

// timeout is the attempt's timeout: the action's, else the policy's; 0 means
// none.
func timeout(job Job) time.Duration {
	if d := job.Action.Timeout.Std(); d > 0 {
		return d
	}
	if d := job.Policy.Timeout.Std(); d > 0 {
		return d
	}
	return 0
}

// canceledError describes why ctx is done.
func canceledError(ctx context.Context) string {
	return fmt.Sprintf("canceled (%v)", context.Cause(ctx))
}

// StopError is a cause to cancel Run's context with
// (context.WithCancelCause): it says why the attempt is stopped and, with
// Grace, how long its processes get between SIGTERM and SIGKILL (an SDK
// handler: to return), instead of Runner.KillGrace. An executor that has
// lost its lease stops the attempt with a short grace, so that it is gone
// before the cluster may run the instance elsewhere.
type StopError struct {
	Reason string
	Grace  time.Duration
	// Kill: no grace at all, SIGKILL at once (an executor that noticed
	// its lease ran out late, when the time for a grace has passed).
	Kill bool
}

func (e *StopError) Error() string { return e.Reason }

// stopGrace is the kill grace for an attempt whose context is done: the
// StopError's Grace if its cause carries one, else the Runner's.
func (r *Runner) stopGrace(ctx context.Context) time.Duration {
	var se *StopError
	switch {
	case errors.As(context.Cause(ctx), &se) && se.Kill:
		return 0
	case se != nil && se.Grace > 0:
		return se.Grace
	}
	return r.killGrace()
}
