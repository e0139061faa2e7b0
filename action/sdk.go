package action

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"time"

	"go.opentelemetry.io/otel/propagation"

	"github.com/ax-scheduler/ax/action/redact"
	"github.com/ax-scheduler/ax/action/result"
)

// runSDK runs an SDK action: the registered handler, in a goroutine, with
// the attempt's timeout on its context.
func (r *Runner) runSDK(ctx context.Context, job Job, live io.Writer, red *redact.Masker) Result {
	var res Result
	name := job.Action.Handler
	h := r.Handlers[name]
	if h == nil {
		res.Error = fmt.Sprintf("no handler named %q on this executor", name)
		return res
	}
	out := newSink(live, OutputLimit, red)
	hctx := context.WithValue(ctx, outputKey{}, io.Writer(out))
	hctx, box := result.WithBox(hctx)
	if job.Traceparent != "" {
		// The attempt's span is the remote parent of the handler's own
		// spans (OpenTelemetry's trace.SpanContextFromContext reads it).
		hctx = propagation.TraceContext{}.Extract(hctx, propagation.MapCarrier{"traceparent": job.Traceparent})
	}
	d := timeout(job)
	if d > 0 {
		var cancel context.CancelFunc
		hctx, cancel = context.WithTimeout(hctx, d)
		defer cancel()
	}
	done := make(chan error, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				fmt.Fprintf(out, "handler panicked: %v\n%s", p, debug.Stack())
				done <- fmt.Errorf("handler panicked: %v", p)
			}
		}()
		done <- h(hctx, job)
	}()

	var err error
	select {
	case err = <-done:
		res.Output = out.close()
		switch {
		case err == nil:
			res.Success = true
			sdkResult(&res, box, red)
		default:
			res.Error = err.Error()
			res.Retryable = !errors.Is(err, ErrPermanent)
		}
		return res
	case <-hctx.Done():
	}

	// Timed out or canceled: the handler has KillGrace (or the stop's
	// grace) to notice and return, then it is abandoned. Either way the
	// attempt failed.
	wait := r.killGrace()
	if ctx.Err() != nil {
		res.Canceled = true
		res.Error = canceledError(ctx)
		wait = r.stopGrace(ctx)
	} else {
		res.TimedOut = true
		res.Retryable = true
		res.Error = fmt.Sprintf("timeout after %s", d)
	}
	grace := time.NewTimer(wait)
	defer grace.Stop()
	select {
	case err = <-done:
		if err != nil {
			res.Error += ": handler returned: " + err.Error()
		}
	case <-grace.C:
		res.Error += fmt.Sprintf(": handler abandoned (still running %s later)", wait)
	}
	res.Output = out.close()
	return res
}
