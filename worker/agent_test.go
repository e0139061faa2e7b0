package worker_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/action"
	"github.com/ax-scheduler/ax/agent"
	"github.com/ax-scheduler/ax/client"
	"github.com/ax-scheduler/ax/internal/agenttest"
	"github.com/ax-scheduler/ax/internal/testkit"
	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/worker"
)

// startWorker runs a worker with handlers against a's API until the test
// ends.
func startWorker(t *testing.T, a *agent.Agent, handlers map[string]worker.Handler) {
	t.Helper()
	w, err := worker.New(worker.Config{Servers: []string{a.HTTPAddr()}, Name: "sdk", Handlers: handlers,
		PollWait: time.Second, ShutdownGrace: -1})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = w.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
}

// over lists the states an instance ends in.
var over = []string{model.StateSuccess, model.StateFailed, model.StateTerminated, model.StateCanceled, model.StateSkipped}

// numbered writes lines "line 00001" to "line <n>" to w.
func numbered(w interface{ Write([]byte) (int, error) }, n int) {
	for i := 1; i <= n; i++ {
		fmt.Fprintf(w, "line %05d\n", i)
	}
}

// TestOutput_IsTheAttemptLog: what a handler writes to worker.Output(ctx)
// is the instance's log (GET /v1/instances/{id}/log), for a failed
// attempt too, and only its last action.OutputLimit bytes are kept: the
// same log as a shell action that prints the same lines.
func TestOutput_IsTheAttemptLog(t *testing.T) {
	a := agenttest.Start(t, func(c *agent.Config) { c.Executor = true })
	const many = 10_000 // 110,000 bytes: over the limit
	tests := []struct {
		name      string
		handler   worker.Handler
		shell     string // a shell action whose log must be the same, if set
		wantState string
		wantError string
		wantLog   func(string) bool
	}{
		{name: "success", wantState: model.StateSuccess,
			handler: func(ctx context.Context, job worker.Job) error {
				fmt.Fprintln(worker.Output(ctx), "line 1")
				fmt.Fprintf(worker.Output(ctx), "line 2 of attempt %d\n", job.Attempt)
				return nil
			},
			wantLog: func(l string) bool { return l == "line 1\nline 2 of attempt 1\n" }},
		{name: "failure", wantState: model.StateFailed, wantError: "order 42 is gone",
			handler: func(ctx context.Context, job worker.Job) error {
				fmt.Fprintln(worker.Output(ctx), "looking for order 42")
				return worker.Permanent(errors.New("order 42 is gone"))
			},
			wantLog: func(l string) bool { return l == "looking for order 42\n" }},
		{name: "panic", wantState: model.StateFailed, wantError: "handler panicked: boom",
			handler: func(ctx context.Context, job worker.Job) error {
				fmt.Fprintln(worker.Output(ctx), "about to panic")
				panic("boom")
			},
			wantLog: func(l string) bool { return strings.HasPrefix(l, "about to panic\nhandler panicked: boom\n") }},
		{name: "over the limit", wantState: model.StateSuccess, shell: fmt.Sprintf(`awk 'BEGIN { for (i = 1; i <= %d; i++) printf "line %%05d\n", i }'`, many),
			handler: func(ctx context.Context, job worker.Job) error {
				numbered(worker.Output(ctx), many)
				return nil
			},
			wantLog: func(l string) bool {
				return len(l) == action.OutputLimit && strings.HasSuffix(l, fmt.Sprintf("line %05d\n", many))
			}},
	}
	handlers := map[string]worker.Handler{}
	for i, tt := range tests {
		handlers[fmt.Sprint("h", i)] = tt.handler
	}
	startWorker(t, a, handlers)
	c := client.New(client.Config{Addrs: []string{a.HTTPAddr()}})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			run := func(name string, act model.Action) (*model.Instance, string) {
				t.Helper()
				task := &model.Task{Name: name, Trigger: model.Trigger{Type: model.TriggerEvent}, Action: act}
				if _, err := c.PutTask(ctx, task); err != nil {
					t.Fatal(err)
				}
				s, err := c.Trigger(ctx, name, model.TriggerRequest{})
				if err != nil {
					t.Fatal(err)
				}
				in := agenttest.WaitState(t, c, s.ID, 30*time.Second, over...)
				l, err := c.InstanceLog(ctx, s.ID, 0)
				if err != nil {
					t.Fatal(err)
				}
				if l.Live || l.Attempt != 1 {
					t.Errorf("log of an ended attempt: live %v attempt %d, want false 1", l.Live, l.Attempt)
				}
				return in, l.Output
			}
			in, log := run(fmt.Sprint("sdk-", i), model.Action{Type: model.ActionSDK, Handler: fmt.Sprint("h", i)})
			if in.State != tt.wantState || !strings.Contains(in.LastError, tt.wantError) {
				t.Errorf("instance %s (%s), want %s (%q)", in.State, in.LastError, tt.wantState, tt.wantError)
			}
			if !tt.wantLog(log) {
				t.Errorf("log (%d bytes) %.300q: not what the handler wrote", len(log), log)
			}
			if tt.shell == "" {
				return
			}
			sin, slog := run(fmt.Sprint("shell-", i), model.Action{Type: model.ActionShell, Command: tt.shell})
			if sin.State != model.StateSuccess || slog != log {
				t.Errorf("shell action: %s, log of %d bytes (%.80q...); want SUCCESS and the handler's log of %d bytes",
					sin.State, len(slog), slog, len(log))
			}
		})
	}
}

// TestOutput_StreamedWhileRunning: a handler's output reaches the instance
// log while the attempt runs (with the heartbeats), as a shell action's
// does (every quarter lease: 2.5s with the default lease), and is kept
// whole when it ends.
func TestOutput_StreamedWhileRunning(t *testing.T) {
	a := agenttest.Start(t, nil)
	release := make(chan struct{})
	startWorker(t, a, map[string]worker.Handler{"slow": func(ctx context.Context, job worker.Job) error {
		fmt.Fprintln(worker.Output(ctx), "started")
		select {
		case <-release:
		case <-ctx.Done():
			return ctx.Err()
		}
		fmt.Fprintln(worker.Output(ctx), "finished")
		return nil
	}})
	c := client.New(client.Config{Addrs: []string{a.HTTPAddr()}})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := c.PutTask(ctx, &model.Task{Name: "slow", Trigger: model.Trigger{Type: model.TriggerEvent},
		Action: model.Action{Type: model.ActionSDK, Handler: "slow"}}); err != nil {
		t.Fatal(err)
	}
	s, err := c.Trigger(ctx, "slow", model.TriggerRequest{})
	if err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 20*time.Second, func() error {
		l, err := c.InstanceLog(ctx, s.ID, 0)
		if err != nil {
			return err
		}
		if !l.Live || l.Output != "started\n" {
			return fmt.Errorf("live log %+v; want \"started\" while the attempt runs", l)
		}
		return nil
	})
	close(release)
	in := agenttest.WaitState(t, c, s.ID, 20*time.Second, over...)
	l, err := c.InstanceLog(ctx, s.ID, 0)
	if err != nil || in.State != model.StateSuccess || l.Live || l.Output != "started\nfinished\n" {
		t.Fatalf("after the end: %s, log %+v, %v; want SUCCESS and the whole output kept", in.State, l, err)
	}
}

// TestSetResult_PassedDownstream: what an SDK handler publishes with
// worker.SetResult is its instance's result (client.InstanceResult), and
// the handler of its onSuccess task reads it in its job's Upstream; an
// HTTP task's resultFrom selects a part of its JSON response.
func TestSetResult_PassedDownstream(t *testing.T) {
	a := agenttest.Start(t, func(c *agent.Config) { c.Executor = true })
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"data": {"batch": "b-7"}, "noise": [1, 2, 3]}`))
	}))
	t.Cleanup(srv.Close)
	got := make(chan string, 1)
	startWorker(t, a, map[string]worker.Handler{
		"extract": func(ctx context.Context, job worker.Job) error {
			return worker.SetResult(ctx, map[string]any{"rows": 42, "file": "orders.csv"})
		},
		"load": func(ctx context.Context, job worker.Job) error {
			got <- string(job.Upstream["extract"])
			return nil
		},
	})
	c := client.New(client.Config{Addrs: []string{a.HTTPAddr()}})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// onSuccess and results need the cluster at protocol 8, which a new
	// agent raises it to a moment after it starts.
	testkit.Eventually(t, 20*time.Second, func() error {
		h, err := c.Health(ctx)
		if err == nil && h.Protocol < 8 {
			err = fmt.Errorf("protocol %d", h.Protocol)
		}
		return err
	})
	for _, task := range []*model.Task{
		{Name: "extract", Trigger: model.Trigger{Type: model.TriggerEvent}, Action: model.Action{Type: model.ActionSDK, Handler: "extract"},
			Policy: model.Policy{OnSuccess: []model.Chain{{Task: "load"}}}},
		{Name: "load", Trigger: model.Trigger{Type: model.TriggerEvent}, Action: model.Action{Type: model.ActionSDK, Handler: "load"}},
		{Name: "hook", Trigger: model.Trigger{Type: model.TriggerEvent}, Action: model.Action{Type: model.ActionHTTP, URL: srv.URL, ResultFrom: "/data/batch"}},
	} {
		if _, err := c.PutTask(ctx, task); err != nil {
			t.Fatal(err)
		}
	}
	s, err := c.Trigger(ctx, "extract", model.TriggerRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if in := agenttest.WaitState(t, c, s.ID, 20*time.Second, over...); in.State != model.StateSuccess {
		t.Fatalf("extract ended %s: %s", in.State, in.LastError)
	}
	if r, err := c.InstanceResult(ctx, s.ID); err != nil || string(r.Result) != `{"file":"orders.csv","rows":42}` {
		t.Fatalf("extract's result: %+v, %v", r, err)
	}
	select {
	case up := <-got:
		if up != `{"file":"orders.csv","rows":42}` {
			t.Errorf("load's job has Upstream extract %q, want extract's result", up)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("load did not run")
	}
	h, err := c.Trigger(ctx, "hook", model.TriggerRequest{})
	if err != nil {
		t.Fatal(err)
	}
	agenttest.WaitState(t, c, h.ID, 20*time.Second, over...)
	if r, err := c.InstanceResult(ctx, h.ID); err != nil || string(r.Result) != `"b-7"` {
		t.Fatalf("hook's result: %+v, %v; want the part resultFrom points to", r, err)
	}
}
