package worker

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"net"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ax-scheduler/ax/action"
	"github.com/ax-scheduler/ax/action/proc"
	"github.com/ax-scheduler/ax/action/redact"
	"github.com/ax-scheduler/ax/client"
	"github.com/ax-scheduler/ax/model"
)

// Config configures a Worker.
type Config struct {
	Servers  []string // agent HTTP addresses; any node works
	Name     string   // unique executor name
	Host     string   // reported with attempts; default the hostname
	Labels   map[string]string
	Capacity int // attempts at once; default 16
	Token    string
	// TLS, when set, is used to reach the agents, and "host:port" servers
	// mean https (see client.Config.TLS).
	TLS      *tls.Config
	Handlers map[string]Handler // sdk handlers, by name
	// Shell and HTTP make the worker run shell and http actions too. A
	// worker runs only what it declares: the cluster leases it nothing
	// else. `ax executor` sets both (its -shell and -http flags).
	Shell, HTTP bool
	Logger      hclog.Logger
	// PollWait is the long-poll wait; default 20s.
	PollWait time.Duration
	// ShutdownGrace is how long running attempts may go on once Run's
	// context is done (no new work is taken meanwhile); then they are
	// stopped and reported. Default 30s; negative: stop them at once.
	// Run returns at the latest ShutdownGrace + 10s after its context is
	// done.
	ShutdownGrace time.Duration
	// KillGrace is the time between SIGTERM and SIGKILL when an attempt
	// is stopped; default action.DefaultKillGrace.
	KillGrace time.Duration
	// Reaper is the command line of a helper that stops the processes
	// of running shell attempts if the worker dies (package action/proc; for
	// ax: `ax executor-supervise`). Without it they may outlive a killed
	// worker.
	Reaper []string
}

// Worker is one executor's connection to the cluster.
type Worker struct {
	cfg Config
	log hclog.Logger
	// The protocol over one HTTP client each, so that a parked poll or a
	// slow report never holds up a heartbeat.
	poll, beat, report *Protocol
	runner             *action.Runner
	caps               model.Capabilities
	// legacy: the cluster refused the capabilities field (its nodes are
	// older than protocol 3), so polls go without it; noSession the same
	// for the session (older than protocol 6).
	legacy, noSession atomic.Bool
	// session identifies this process to the cluster (PollRequest.Session).
	session string

	mu      sync.Mutex
	running map[string]*attempt // by execution id
	lease   time.Duration       // the cluster's lease, from its last poll answer
	slots   chan struct{}
	reports chan pendingReport
	// giveUp is when undelivered reports are dropped: set when Run's
	// context ends, to its end plus ShutdownGrace plus 10s less a margin.
	giveUp time.Time

	reaperTried bool // by the poll loop only

	// proto is the cluster's protocol, from its last poll answer.
	proto atomic.Int64
	// highest is the highest attempt number this worker was handed per
	// instance (by the poll loop only): a job whose attempt is not above
	// it is refused (the fencing promise: attempt numbers only grow).
	highest map[string]seenAttempt
}

// seenAttempt is the highest attempt of an instance a worker was handed,
// and when.
type seenAttempt struct {
	attempt int
	at      time.Time
}

// defaultLease is assumed until the cluster says (it is the agents'
// default).
const defaultLease = 10 * time.Second

// newProtocol returns the protocol over a client of its own for cfg's
// servers.
func newProtocol(cfg Config) *Protocol {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 16
	tr.TLSClientConfig = cfg.TLS
	// A server that does not accept a connection within two seconds is
	// down or cut off: try the next one (and say so).
	tr.DialContext = (&net.Dialer{Timeout: 2 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	return NewProtocol(client.New(client.Config{Addrs: cfg.Servers, TLS: cfg.TLS, Token: cfg.Token, Actor: "executor:" + cfg.Name,
		HTTPClient: &http.Client{Transport: tr}, RetryFor: 30 * time.Second}))
}

// New returns a worker; Run starts it.
func New(cfg Config) (*Worker, error) {
	if cfg.Name == "" || len(cfg.Servers) == 0 {
		return nil, errors.New("worker: worker Name and Servers are required")
	}
	if err := model.ValidateName("name", cfg.Name); err != nil {
		return nil, err
	}
	if !cfg.Shell && !cfg.HTTP && len(cfg.Handlers) == 0 {
		return nil, errors.New("worker: the worker runs nothing: give it Handlers, or set Shell or HTTP")
	}
	if len(cfg.Handlers) > model.MaxHandlers {
		return nil, errors.New("worker: more than " + strconv.Itoa(model.MaxHandlers) + " handlers")
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
	if cfg.ShutdownGrace == 0 {
		cfg.ShutdownGrace = 30 * time.Second
	}
	if cfg.KillGrace <= 0 {
		cfg.KillGrace = action.DefaultKillGrace
	}
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	caps := model.Capabilities{Shell: cfg.Shell, HTTP: cfg.HTTP}
	for h := range cfg.Handlers {
		if err := model.ValidateName("handlers", h); err != nil {
			return nil, err
		}
		caps.Handlers = append(caps.Handlers, h)
	}
	sort.Strings(caps.Handlers)
	e := &Worker{
		cfg: cfg, log: cfg.Logger.Named("executor").With("executor", cfg.Name),
		poll: newProtocol(cfg), beat: newProtocol(cfg), report: newProtocol(cfg),
		runner: &action.Runner{Handlers: cfg.Handlers, KillGrace: cfg.KillGrace}, caps: caps,
		running: map[string]*attempt{}, lease: defaultLease, highest: map[string]seenAttempt{}, session: newSession(),
		slots: make(chan struct{}, cfg.Capacity), reports: make(chan pendingReport, cfg.Capacity),
	}
	return e, nil
}

// Capabilities returns what the worker declares it runs.
func (e *Worker) Capabilities() model.Capabilities { return e.caps }

// Run polls and runs jobs until ctx ends. Then it takes no new work, lets
// running attempts go on for ShutdownGrace, stops those still running
// (reported canceled and retryable: the work may run elsewhere), reports
// them, and returns, ShutdownGrace + 10s after ctx ended at the latest.
func (e *Worker) Run(ctx context.Context) error {
	e.log.Info("executor started", "servers", strings.Join(e.cfg.Servers, ","), "capacity", e.cfg.Capacity,
		"labels", e.cfg.Labels, "shell", e.caps.Shell, "http", e.caps.HTTP, "handlers", strings.Join(e.caps.Handlers, ","))
	// Heartbeats, lease fencing and reports outlive ctx: running attempts
	// keep their leases during the shutdown grace.
	life, endLife := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(3)
	go func() { defer wg.Done(); e.heartbeats(life) }()
	go func() { defer wg.Done(); e.fence(life) }()
	go func() { defer wg.Done(); e.reporter() }()
	var work sync.WaitGroup
	e.pollLoop(ctx, &work)

	// Shutting down: no new work.
	grace := max(e.cfg.ShutdownGrace, 0)
	hard := time.Now().Add(grace + 10*time.Second)
	e.mu.Lock()
	e.giveUp = hard.Add(-time.Second)
	n := len(e.running)
	e.mu.Unlock()
	e.log.Info("executor stopping: no new work; running attempts may finish", "running", n, "grace", grace)
	stopAll := time.AfterFunc(grace, func() {
		for _, a := range e.attempts() {
			a.stop(shutdownReason, min(e.cfg.KillGrace, 5*time.Second))
		}
	})
	defer stopAll.Stop()
	finished := make(chan struct{})
	go func() { work.Wait(); close(finished) }()
	select {
	case <-finished:
		close(e.reports)
		endLife()
		wg.Wait()
		if rp := e.runner.Reaper; rp != nil {
			_ = rp.Close(5 * time.Second) // nothing left for it to stop
		}
		e.log.Info("executor stopped")
	case <-time.After(time.Until(hard)):
		endLife()
		e.log.Error("executor stopped with attempts it could not end or report", "running", len(e.attempts()))
		if rp := e.runner.Reaper; rp != nil {
			_ = rp.Close(0) // it stops what is left, on its own
		}
	}
	return nil
}

// startReaper starts the reaper helper, if configured, before the first
// shell attempt: its grace fits in the lease like the fence's.
func (e *Worker) startReaper(lease time.Duration) {
	if len(e.cfg.Reaper) == 0 || !e.caps.Shell || e.reaperTried {
		return
	}
	e.reaperTried = true
	rp, err := proc.StartReaper(e.cfg.Reaper, e.fenceGrace(lease), os.Stderr)
	if err != nil {
		e.log.Warn("no reaper: shell attempts' processes may outlive a killed executor", "error", err)
		return
	}
	e.runner.Reaper = rp // before any attempt runs
}

// pollLoop asks for work while there are free slots, until ctx ends.
func (e *Worker) pollLoop(ctx context.Context, work *sync.WaitGroup) {
	backoff := 100 * time.Millisecond
	connected := false
	for ctx.Err() == nil {
		// Wait for a free slot before asking for work.
		select {
		case e.slots <- struct{}{}:
			<-e.slots
		case <-ctx.Done():
			return
		}
		free := e.cfg.Capacity - len(e.slots)
		pctx, cancel := context.WithTimeout(ctx, e.cfg.PollWait+10*time.Second)
		sent := time.Now()
		req := model.PollRequest{Executor: e.cfg.Name, Host: e.cfg.Host, Labels: e.cfg.Labels,
			Free: free, Capacity: e.cfg.Capacity, WaitMs: e.cfg.PollWait.Milliseconds(), Capabilities: &e.caps, Session: e.session}
		if e.legacy.Load() {
			req.Capabilities = nil
		}
		if e.noSession.Load() {
			req.Session = ""
		}
		// A poll parked on a node that gets cut off from this executor
		// would wait out its wait: the node is checked every second and
		// the poll goes to the next server once it stops answering.
		// Each server is tried once per poll: this loop retries, and
		// logs each failure with its backoff, so an executor started
		// before its servers, or cut off from them, says so at once.
		resp, err := e.poll.poll(pctx, req, pollWatch, true)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			if req.Session != "" && unknownField(err, "session") {
				e.noSession.Store(true) // a node older than protocol 6
				continue
			}
			if req.Capabilities != nil && unknownField(err, "capabilities") {
				e.legacy.Store(true)
				e.log.Warn("the cluster does not take the capabilities of executors (its nodes are older than protocol 3): " +
					"polling without them, so it may lease work this executor cannot run; upgrade the nodes first")
				continue
			}
			msg := "poll failed; retrying"
			if me := (*model.Error)(nil); errors.Is(err, client.ErrNotSent) || errors.As(err, &me) && me.Code == model.CodeUnavailable {
				msg = "cannot reach the cluster; retrying"
			}
			e.log.Warn(msg, "servers", strings.Join(e.cfg.Servers, ","), "error", err, "retry_in", backoff)
			connected = false
			select {
			case <-time.After(backoff):
			case <-ctx.Done():
				return
			}
			backoff = min(backoff*2, 5*time.Second)
			continue
		}
		backoff = 100 * time.Millisecond
		if !connected {
			e.log.Info("connected to the cluster", "servers", strings.Join(e.cfg.Servers, ","), "protocol", resp.Protocol)
			connected = true
		}
		lease := e.leaseOf(resp)
		e.proto.Store(int64(resp.Protocol))
		// The leases start after the poll was sent plus the time the
		// leader held it (an older leader does not say: count from now).
		start := time.Now()
		if resp.HeldMs > 0 {
			start = sent.Add(time.Duration(resp.HeldMs) * time.Millisecond)
		}
		jobs := e.accept(resp.Jobs)
		if len(jobs) > 0 && time.Since(start) > lease/2 {
			// Less than half the lease is left (the poll or its answer
			// waited long on the way, or this process was frozen):
			// renew the leases before starting anything.
			jobs, start = e.confirm(jobs, lease, start)
		}
		if len(jobs) > 0 {
			e.startReaper(lease)
		}
		for _, job := range jobs {
			e.slots <- struct{}{}
			a := e.track(job, lease, start)
			work.Add(1)
			go func() {
				defer work.Done()
				defer func() { <-e.slots }()
				e.runJob(a)
			}()
		}
	}
}

// accept returns the jobs this worker may run: those whose attempt number
// is above every attempt of the same instance it was handed before. A
// job with another number was never the cluster's current attempt (or is
// an old one handed again): it is refused, logged, and left to the
// cluster, which gives its lease back unconfirmed.
func (e *Worker) accept(jobs []model.Job) []model.Job {
	out := jobs[:0:0]
	now := time.Now()
	for _, job := range jobs {
		last, seen := e.highest[job.InstanceID]
		if job.Attempt < 1 || seen && job.Attempt <= last.attempt {
			e.log.Error("refusing a job: its attempt is not above one already handed to this executor",
				"execution", job.ExecutionID, "attempt", job.Attempt, "highest", last.attempt)
			continue
		}
		e.highest[job.InstanceID] = seenAttempt{attempt: job.Attempt, at: now}
		out = append(out, job)
	}
	if len(e.highest) > 4096 {
		// An instance's attempts are handed out at least a lease apart
		// only when one is lost: an hour covers them.
		for id, s := range e.highest {
			if now.Sub(s.at) > time.Hour {
				delete(e.highest, id)
			}
		}
	}
	return out
}

// confirm renews the leases of jobs (leased from start) with a heartbeat
// before they start, and returns those renewed, with the new start of
// their leases. Jobs the cluster says to stop, or all of them if the
// heartbeat fails, are not started: their leases lapse unconfirmed and
// the cluster gives them back without using a retry.
func (e *Worker) confirm(jobs []model.Job, lease time.Duration, start time.Time) ([]model.Job, time.Time) {
	req := model.HeartbeatRequest{Executor: e.cfg.Name}
	for _, j := range jobs {
		// Not started yet: renewed, not confirmed (a heartbeat whose
		// answer is lost must not make a job that never ran count).
		req.Running = append(req.Running, model.RunningAttempt{InstanceID: j.InstanceID, Attempt: j.Attempt,
			NotStarted: e.proto.Load() >= 6})
	}
	sent := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), max(lease-time.Since(start), lease/4))
	resp, err := e.beat.heartbeat(ctx, req, lease/4)
	cancel()
	if err != nil {
		e.log.Warn("not starting jobs whose lease is nearly over and could not be renewed; the cluster gives them back",
			"jobs", len(jobs), "lease_age", sent.Sub(start).Round(time.Millisecond), "error", err)
		return nil, start
	}
	stop := map[string]string{}
	for _, s := range resp.Stop {
		stop[s.InstanceID+"-"+strconv.Itoa(s.Attempt)] = s.Reason
	}
	out := jobs[:0:0]
	for _, j := range jobs {
		if why, ok := stop[j.ExecutionID]; ok {
			e.log.Warn("not starting a job the cluster no longer leases to this executor", "execution", j.ExecutionID, "reason", why)
			continue
		}
		out = append(out, j)
	}
	e.log.Info("renewed the leases of late jobs before starting them", "jobs", len(out), "lease_age", sent.Sub(start).Round(time.Millisecond))
	return out, sent
}

// leaseOf records the cluster's lease from a poll answer and returns it.
func (e *Worker) leaseOf(resp *model.PollResponse) time.Duration {
	e.mu.Lock()
	defer e.mu.Unlock()
	if l := time.Duration(resp.LeaseMs) * time.Millisecond; l > 0 {
		e.lease = l
	}
	return e.lease
}

// runJob runs one attempt and reports its end.
func (e *Worker) runJob(a *attempt) {
	job := a.job
	e.log.Info("attempt started", "execution", job.ExecutionID, "task", job.Task)
	var res action.Result
	began := time.Now()
	if !e.caps.Runs(&job.Action) {
		// Only if the task changed while it was being leased.
		res = action.Result{Retryable: true, Error: "executor " + e.cfg.Name + " does not run this action (" + job.Action.Type + " " + job.Action.Handler + ")"}
	} else {
		res = e.runner.Run(a.ctx, e.actionJob(job, a.lease), a)
	}
	report := e.completeReport(job, res, a.end())
	if e.proto.Load() >= 6 {
		report.RanMs = max(time.Since(began).Milliseconds(), 1)
	}
	p := newPendingReport(model.CompleteItem{ExecutionID: job.ExecutionID, Report: report}, a)
	e.reports <- p
	<-p.done // keep heartbeating the attempt until its end is recorded
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
	red := redact.Secrets(job.Secrets)
	report := model.CompleteRequest{
		Executor: e.cfg.Name, Host: e.cfg.Host, PID: res.PID, Success: res.Success, Retryable: res.Retryable,
		TimedOut: res.TimedOut, Canceled: res.Canceled, ExitCode: res.ExitCode, HTTPStatus: res.HTTPStatus,
		Error: red.Redact(res.Error), Output: red.Redact(string(res.Output)),
	}
	if e.proto.Load() >= 8 {
		// A result is kept from protocol 8 (the Runner refused one that
		// holds a secret's value).
		report.Result = res.Result
	}
	if res.Canceled && reason != "" {
		report.Error = "stopped: " + red.Redact(reason)
		// Work cut short by this executor (its shutdown, a lease it
		// could not renew) may run elsewhere.
		report.Retryable = reason == shutdownReason || strings.HasPrefix(reason, leaseLostReason)
		// From protocol 6 such an attempt is interrupted, not failed: it
		// runs again without using a retry.
		report.Interrupted = report.Retryable && e.proto.Load() >= 6
	}
	return report
}

func (e *Worker) actionJob(job model.Job, lease time.Duration) action.Job {
	return action.Job{
		InstanceID: job.InstanceID, ExecutionID: job.ExecutionID, Task: job.Task, Attempt: job.Attempt,
		ScheduledAt: job.ScheduledAt.Time, Timezone: job.Timezone, Params: job.Params, Payload: job.Payload,
		Action: job.Action, Policy: job.Policy, Secrets: job.Secrets, Shard: job.Shard, Parent: job.Parent, Upstream: job.Upstream,
		Traceparent: job.Traceparent,
		Env: map[string]string{"AX_ADDR": strings.Join(e.cfg.Servers, ","), "AX_TOKEN": e.cfg.Token,
			"AX_EXECUTOR": e.cfg.Name, "AX_ATTEMPT": strconv.Itoa(job.Attempt),
			// `ax approval request` gives up once the cluster has been
			// out of reach this long.
			"AX_LEASE_MS": strconv.FormatInt(lease.Milliseconds(), 10)},
	}
}

// shutdownReason is why a worker stops the attempts still running when
// its shutdown grace ends.
const shutdownReason = "executor shutting down"

// pollWatch is how often a parked poll's server is checked
// (client.Request.Watch).
const pollWatch = time.Second

// unknownField reports whether a poll was refused because the server does
// not know one of its fields (nodes decode polls strictly): capabilities
// before protocol 3, session before 6.
func unknownField(err error, field string) bool {
	var me *model.Error
	return errors.As(err, &me) && me.Code == model.CodeInvalid && strings.Contains(me.Message, `unknown field "`+field+`"`)
}

// rejectSettle is how long an attempt whose mid-run approval was rejected
// (or whose instance was canceled while it waited for approval) may go on
// before the worker stops it: `ax approval request` hears the decision
// within a second and exits 1, and the script may end on its own, its
// rejection path included. A quarter lease at most: the stop comes with a
// heartbeat (a quarter lease after the last renewal, which it is not),
// and the lease's own fence (at 3/4 of it) must not come first.
const rejectSettle = 3 * time.Second

// stopOver stops attempt a, which the cluster says is over for reason
// (a heartbeat's stop): at once, or min(rejectSettle, lease/4) later
// when its instance was canceled, which happens to a leased attempt only
// through its mid-run approval (the state machine's reason "instance is
// CANCELED").
func (e *Worker) stopOver(a *attempt, reason string) {
	if reason != "instance is "+model.StateCanceled {
		e.log.Info("stopping attempt", "execution", a.job.ExecutionID, "reason", reason)
		a.stop(reason, e.cfg.KillGrace)
		return
	}
	a.mu.Lock()
	first := !a.settle
	a.settle = true
	a.mu.Unlock()
	if first {
		settle := min(rejectSettle, a.lease/4)
		e.log.Info("approval rejected: the attempt is stopped unless it ends first", "execution", a.job.ExecutionID, "within", settle)
		time.AfterFunc(settle, func() { a.stop(reason, e.cfg.KillGrace) })
	}
}

// newSession returns a random id for this worker process.
func newSession() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
