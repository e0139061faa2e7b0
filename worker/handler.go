package worker

import (
	"context"
	"io"

	"github.com/ax-scheduler/ax/action"
)

// Handler is a Go function that runs jobs of tasks whose action is
// {"type": "sdk", "handler": NAME} (Config.Handlers). Returning nil is
// success; an error is a retryable failure unless it wraps ErrPermanent.
// ctx is done when the attempt times out or is stopped (terminated,
// fenced, the worker shutting down): return promptly then, or the handler
// is abandoned Config.KillGrace later. Write the attempt's log to
// Output(ctx).
type Handler = action.Handler

// Job is what a Handler receives: the instance and attempt, the task's
// action and policy, the caller's params and payload.
type Job = action.Job

// ErrPermanent marks a handler error as not retryable: wrap it,
// fmt.Errorf("bad order %s: %w", id, worker.ErrPermanent), or use
// Permanent.
var ErrPermanent = action.ErrPermanent

// Permanent returns err marked as not retryable (errors.Is(…,
// ErrPermanent) holds); Permanent(nil) is nil.
func Permanent(err error) error { return action.Permanent(err) }

// Output returns the writer a Handler writes its log to: what it writes
// is the attempt's output, exactly like a shell action's stdout and
// stderr. It is streamed to the cluster with the heartbeats while the
// attempt runs (GET /v1/instances/{id}/log answers it live, `ax instance
// log -f` follows it), and its last 64 KiB (action.OutputLimit) are kept
// with the attempt when it ends, whether it succeeded or failed. The
// values of the job's secrets are masked in it. Writes never fail and are
// dropped once the attempt is over. It is safe for concurrent use.
//
// ctx must be the handler's context or one derived from it; elsewhere
// Output returns io.Discard. Output of fmt.Print and the log package goes
// to the process's stdout and stderr, not to the attempt.
func Output(ctx context.Context) io.Writer { return action.Output(ctx) }

// SetResult publishes v, marshalled to JSON, as the result of the attempt
// whose handler's context is ctx: kept with the instance if the handler
// returns nil (GET /v1/instances/{id}/result), and read by downstream
// tasks' templates as {{.Upstream.<task>.Result}}. At most 64 KiB of JSON
// (action.MaxResult); a later call replaces it. The error says why v
// cannot be a result; such a result fails the attempt without retry. See
// action.SetResult.
func SetResult(ctx context.Context, v any) error { return action.SetResult(ctx, v) }
