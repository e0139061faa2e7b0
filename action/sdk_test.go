package action

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/internal/testkit"
	"github.com/ax-scheduler/ax/model"
)

func sdkJob(handler string) Job {
	return Job{
		InstanceID:  "inst1",
		ExecutionID: "inst1-1",
		Task:        "t",
		Attempt:     1,
		Params:      map[string]string{"order": "7"},
		Action:      model.Action{Type: model.ActionSDK, Handler: handler},
	}
}

func TestRunner_Run_sdk(t *testing.T) {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	r := &Runner{
		KillGrace: 50 * time.Millisecond,
		Handlers: map[string]Handler{
			"ok": func(ctx context.Context, job Job) error {
				fmt.Fprintf(Output(ctx), "order %s done", job.Params["order"])
				return nil
			},
			"fail":      func(context.Context, Job) error { return errors.New("boom") },
			"permanent": func(context.Context, Job) error { return fmt.Errorf("bad order: %w", ErrPermanent) },
			"wrapped":   func(context.Context, Job) error { return Permanent(io.ErrUnexpectedEOF) },
			"panics":    func(context.Context, Job) error { panic("oops") },
			"honest": func(ctx context.Context, _ Job) error {
				<-ctx.Done()
				return ctx.Err()
			},
			"stuck": func(ctx context.Context, _ Job) error {
				io.WriteString(Output(ctx), "working")
				<-release
				io.WriteString(Output(ctx), " too late")
				return nil
			},
		},
	}
	tests := []struct {
		handler       string
		timeout       time.Duration
		wantSuccess   bool
		wantRetryable bool
		wantTimedOut  bool
		wantErr       string
		wantOutput    string
	}{
		{handler: "ok", wantSuccess: true, wantOutput: "order 7 done"},
		{handler: "fail", wantRetryable: true, wantErr: "boom"},
		{handler: "permanent", wantErr: "bad order: permanent failure"},
		{handler: "wrapped", wantErr: "unexpected EOF"},
		{handler: "panics", wantRetryable: true, wantErr: "handler panicked: oops"},
		{handler: "missing", wantErr: `no handler named "missing" on this executor`},
		{handler: "honest", timeout: 100 * time.Millisecond, wantRetryable: true, wantTimedOut: true,
			wantErr: "timeout after 100ms: handler returned: context deadline exceeded"},
		{handler: "stuck", timeout: 100 * time.Millisecond, wantRetryable: true, wantTimedOut: true,
			wantErr: "timeout after 100ms: handler abandoned", wantOutput: "working"},
	}
	for _, tt := range tests {
		t.Run(tt.handler, func(t *testing.T) {
			var live testkit.Buffer
			job := sdkJob(tt.handler)
			job.Policy.Timeout = model.Timeout(tt.timeout)
			got := r.Run(context.Background(), job, &live)
			if got.Success != tt.wantSuccess || got.Retryable != tt.wantRetryable || got.TimedOut != tt.wantTimedOut {
				t.Errorf("got Success=%v Retryable=%v TimedOut=%v, want %v %v %v (error %q)",
					got.Success, got.Retryable, got.TimedOut, tt.wantSuccess, tt.wantRetryable, tt.wantTimedOut, got.Error)
			}
			if tt.wantErr == "" && got.Error != "" || len(got.Error) < len(tt.wantErr) || got.Error[:len(tt.wantErr)] != tt.wantErr {
				t.Errorf("Error = %q, want it to start with %q", got.Error, tt.wantErr)
			}
			if tt.wantOutput != "" && (string(got.Output) != tt.wantOutput || live.String() != tt.wantOutput) {
				t.Errorf("Output %q, live %q, want %q", got.Output, live.String(), tt.wantOutput)
			}
		})
	}
}

func TestRunner_Run_sdkCancel(t *testing.T) {
	started := make(chan struct{})
	r := &Runner{Handlers: map[string]Handler{
		"wait": func(ctx context.Context, _ Job) error {
			close(started)
			<-ctx.Done()
			return ctx.Err()
		},
	}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-started
		cancel()
	}()
	got := r.Run(ctx, sdkJob("wait"), nil)
	if !got.Canceled || got.TimedOut {
		t.Errorf("Canceled=%v TimedOut=%v, want true false", got.Canceled, got.TimedOut)
	}
	checkFailure(t, got, false, "canceled (context canceled)")
}

func TestPermanent(t *testing.T) {
	base := errors.New("bad input")
	err := Permanent(base)
	if !errors.Is(err, ErrPermanent) || !errors.Is(err, base) || err.Error() != "bad input" {
		t.Errorf("Permanent(%v) = %v; Is ErrPermanent %v, Is base %v", base, err, errors.Is(err, ErrPermanent), errors.Is(err, base))
	}
	if Permanent(nil) != nil {
		t.Error("Permanent(nil) != nil")
	}
}

func TestRunner_Run_unknownType(t *testing.T) {
	got := (&Runner{}).Run(context.Background(), Job{Action: model.Action{Type: "ftp"}}, nil)
	checkFailure(t, got, false, `unknown action type "ftp"`)
}
