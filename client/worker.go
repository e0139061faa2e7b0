package client

// Worker is the executor side of ax: it long-polls any agent for jobs,
// runs each attempt with package action (never more than Capacity at
// once), renews the attempts' leases with batched heartbeats, and reports
// each attempt's end. Polling and heartbeats use their own HTTP clients and
// goroutines, apart from the work itself, so a slow or stuck action never
// delays a heartbeat. `ax executor` is a Worker; a Go program becomes an
// executor for its own "sdk" handlers with NewWorker and Run.

import (
	"context"
	"crypto/tls"
	"errors"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"ax/action"
	"ax/model"
)

// WorkerConfig configures a Worker.
type WorkerConfig struct {
	Servers  []string // agent HTTP addresses; any node works
	Name     string   // unique executor name
	Host     string   // reported with attempts; default the hostname
	Labels   map[string]string
	Capacity int // attempts at once; default 16
	Token    string
	// TLS, when set, is used to reach the agents, and "host:port" servers
	// mean https (see Config.TLS).
	TLS      *tls.Config
	Handlers map[string]Handler // sdk handlers, by name
	Logger   hclog.Logger
	// PollWait is the long-poll wait; default 20s.
	PollWait time.Duration
}

// Worker is one executor's connection to the cluster.
type Worker struct {
	cfg    WorkerConfig
	log    hclog.Logger
	poll   *Client
	beat   *Client
	report *Client
	runner *action.Runner

	mu      sync.Mutex
	running map[string]*attempt // by execution id
	hbEvery time.Duration
	slots   chan struct{}
	reports chan pendingReport
}

type attempt struct {
	job    model.Job
	cancel context.CancelFunc
	reason string // why it was stopped, when it was

	outMu   sync.Mutex
	pending []byte // output not yet sent with a heartbeat
}

func (a *attempt) Write(p []byte) (int, error) {
	a.outMu.Lock()
	defer a.outMu.Unlock()
	a.pending = append(a.pending, p...)
	if over := len(a.pending) - 64<<10; over > 0 {
		a.pending = a.pending[over:]
	}
	return len(p), nil
}

func (a *attempt) takeOutput() string {
	a.outMu.Lock()
	defer a.outMu.Unlock()
	s := string(a.pending)
	a.pending = a.pending[:0]
	return s
}

func newWorkerClient(cfg WorkerConfig) *Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 16
	tr.TLSClientConfig = cfg.TLS
	return New(Config{Addrs: cfg.Servers, TLS: cfg.TLS, Token: cfg.Token, Actor: "executor:" + cfg.Name,
		HTTPClient: &http.Client{Transport: tr}, RetryFor: 30 * time.Second})
}

// NewWorker returns a worker.
func NewWorker(cfg WorkerConfig) (*Worker, error) {
	if cfg.Name == "" || len(cfg.Servers) == 0 {
		return nil, errors.New("client: worker Name and Servers are required")
	}
	if err := model.ValidateName("name", cfg.Name); err != nil {
		return nil, err
	}
	if cfg.Capacity <= 0 {
		cfg.Capacity = 16
	}
	if cfg.Host == "" {
		cfg.Host, _ = os.Hostname()
	}
	if cfg.PollWait == 0 {
		cfg.PollWait = 20 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	e := &Worker{
		cfg: cfg, log: cfg.Logger.Named("executor").With("executor", cfg.Name),
		poll: newWorkerClient(cfg), beat: newWorkerClient(cfg), report: newWorkerClient(cfg),
		runner:  &action.Runner{Handlers: cfg.Handlers},
		running: map[string]*attempt{}, hbEvery: 2 * time.Second,
		slots: make(chan struct{}, cfg.Capacity), reports: make(chan pendingReport, cfg.Capacity),
	}
	return e, nil
}

// Run polls and runs jobs until ctx ends; running attempts are then
// stopped and reported as canceled.
func (e *Worker) Run(ctx context.Context) error {
	e.log.Info("executor started", "servers", strings.Join(e.cfg.Servers, ","), "capacity", e.cfg.Capacity, "labels", e.cfg.Labels)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); e.heartbeats(ctx) }()
	go func() { defer wg.Done(); e.reporter() }()
	var work sync.WaitGroup
	defer func() {
		work.Wait()
		close(e.reports)
		wg.Wait()
	}()
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		// Wait for a free slot before asking for work.
		select {
		case e.slots <- struct{}{}:
			<-e.slots
		case <-ctx.Done():
			return nil
		}
		free := e.cfg.Capacity - len(e.slots)
		pctx, cancel := context.WithTimeout(ctx, e.cfg.PollWait+10*time.Second)
		resp, err := e.poll.Poll(pctx, model.PollRequest{Executor: e.cfg.Name, Host: e.cfg.Host, Labels: e.cfg.Labels,
			Free: free, WaitMs: e.cfg.PollWait.Milliseconds()})
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			e.log.Warn("poll failed; retrying", "error", err, "retry_in", backoff)
			select {
			case <-time.After(backoff):
			case <-ctx.Done():
				return nil
			}
			backoff = min(backoff*2, 5*time.Second)
			continue
		}
		backoff = 100 * time.Millisecond
		if hb := time.Duration(resp.HeartbeatMs) * time.Millisecond; hb > 0 {
			e.mu.Lock()
			e.hbEvery = hb
			e.mu.Unlock()
		}
		for _, job := range resp.Jobs {
			e.slots <- struct{}{}
			work.Add(1)
			go func() {
				defer work.Done()
				defer func() { <-e.slots }()
				e.runJob(ctx, job)
			}()
		}
	}
	return nil
}

// runJob runs one attempt and reports its end.
func (e *Worker) runJob(ctx context.Context, job model.Job) {
	actx, cancel := context.WithCancel(context.Background())
	a := &attempt{job: job, cancel: cancel}
	e.mu.Lock()
	e.running[job.ExecutionID] = a
	e.mu.Unlock()
	stopOnShutdown := context.AfterFunc(ctx, func() { a.reason = "executor shutting down"; cancel() })
	defer stopOnShutdown()
	e.log.Info("attempt started", "execution", job.ExecutionID, "task", job.Task)
	res := e.runner.Run(actx, e.actionJob(job), a)
	cancel()
	report := e.completeReport(job, res, a.reason)
	done := make(chan struct{})
	e.reports <- pendingReport{item: model.CompleteItem{ExecutionID: job.ExecutionID, Report: report}, done: done}
	<-done // keep heartbeating the attempt until its end is recorded
	e.mu.Lock()
	delete(e.running, job.ExecutionID)
	e.mu.Unlock()
	e.log.Info("attempt ended", "execution", job.ExecutionID, "success", res.Success, "error", report.Error)
}

// completeReport is the report of an attempt of job that ended with res;
// reason is why the worker stopped it, if it did. The values of the job's
// secrets are masked in its error and output: the Runner masks them
// already (and in the live output, which it streams to the attempt), this
// is a second guard on what leaves the executor.
func (e *Worker) completeReport(job model.Job, res action.Result, reason string) model.CompleteRequest {
	red := action.SecretRedactor(job.Secrets)
	report := model.CompleteRequest{
		Executor: e.cfg.Name, Host: e.cfg.Host, PID: res.PID, Success: res.Success, Retryable: res.Retryable,
		TimedOut: res.TimedOut, Canceled: res.Canceled, ExitCode: res.ExitCode, HTTPStatus: res.HTTPStatus,
		Error: red.Redact(res.Error), Output: red.Redact(string(res.Output)),
	}
	if res.Canceled && reason != "" {
		report.Error = "stopped: " + red.Redact(reason)
		// Work cut short by this executor's own shutdown may run elsewhere.
		report.Retryable = reason == "executor shutting down"
	}
	return report
}

func (e *Worker) actionJob(job model.Job) action.Job {
	return action.Job{
		InstanceID: job.InstanceID, ExecutionID: job.ExecutionID, Task: job.Task, Attempt: job.Attempt,
		ScheduledAt: job.ScheduledAt.Time, Timezone: job.Timezone, Params: job.Params, Payload: job.Payload,
		Action: job.Action, Policy: job.Policy, Secrets: job.Secrets,
		Env: map[string]string{"AX_ADDR": strings.Join(e.cfg.Servers, ","), "AX_TOKEN": e.cfg.Token,
			"AX_EXECUTOR": e.cfg.Name, "AX_ATTEMPT": strconv.Itoa(job.Attempt)},
	}
}

type pendingReport struct {
	item model.CompleteItem
	done chan struct{}
}

// reporter sends attempt reports in batches (whatever queued while the
// previous batch was in flight), retrying across servers until each is
// recorded or refused (a fenced attempt).
func (e *Worker) reporter() {
	for first := range e.reports {
		batch := []pendingReport{first}
	drain:
		for len(batch) < 256 {
			select {
			case p := <-e.reports:
				batch = append(batch, p)
			default:
				break drain
			}
		}
		items := make([]model.CompleteItem, len(batch))
		for i, p := range batch {
			items[i] = p.item
		}
		key := NewRequestID()
		for try := 0; ; try++ {
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			var out []model.CompleteOutcome
			err := e.report.Do(ctx, Request{Method: http.MethodPost, Path: "/v1/attempts/complete",
				Body: items, Header: http.Header{HeaderIdempotencyKey: {key}}}, &out)
			cancel()
			if err == nil {
				for _, o := range out {
					if o.Error != "" {
						e.log.Warn("attempt report refused", "execution", o.ExecutionID, "error", o.Error)
					}
				}
				break
			}
			var me *model.Error
			if errors.As(err, &me) && me.Code != model.CodeUnavailable && me.Code != model.CodeInternal || try >= 60 {
				e.log.Error("reporting attempts failed", "count", len(items), "error", err)
				break
			}
			e.log.Warn("reporting attempts failed; retrying", "count", len(items), "error", err)
			time.Sleep(time.Duration(min(try+1, 10)) * 500 * time.Millisecond)
		}
		for _, p := range batch {
			close(p.done)
		}
	}
}

// heartbeats renews leases of running attempts and stops the ones the
// cluster says to stop (terminated, canceled, fenced).
func (e *Worker) heartbeats(ctx context.Context) {
	for {
		e.mu.Lock()
		every := e.hbEvery
		e.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-time.After(every):
		}
		e.mu.Lock()
		req := model.HeartbeatRequest{Executor: e.cfg.Name}
		for _, a := range e.running {
			req.Running = append(req.Running, model.RunningAttempt{InstanceID: a.job.InstanceID, Attempt: a.job.Attempt, Output: a.takeOutput()})
		}
		e.mu.Unlock()
		if len(req.Running) == 0 {
			continue
		}
		hctx, cancel := context.WithTimeout(ctx, every*2)
		resp, err := e.beat.Heartbeat(hctx, req)
		cancel()
		if err != nil {
			e.log.Warn("heartbeat failed", "error", err)
			continue
		}
		for _, s := range resp.Stop {
			id := s.InstanceID + "-" + strconv.Itoa(s.Attempt)
			e.mu.Lock()
			a := e.running[id]
			e.mu.Unlock()
			if a != nil {
				e.log.Info("stopping attempt", "execution", id, "reason", s.Reason)
				a.reason = s.Reason
				a.cancel()
			}
		}
	}
}

// Handler is a Go function that runs jobs of tasks whose action is
// {"type": "sdk", "handler": NAME}. Returning nil is success; an error is a
// retryable failure unless it wraps ErrPermanent.
type Handler = action.Handler

// Job is what a Handler receives.
type Job = action.Job

// ErrPermanent marks a handler error as not retryable.
var ErrPermanent = action.ErrPermanent
