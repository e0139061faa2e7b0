// Package scale is ax-bench's scale scenario (issue 27): it fills a
// temporary loopback cluster step by step with pending delayed
// submissions, over cron and interval tasks and long-polling executors,
// and measures at each step the submission rate, a paced probe's fire
// lateness, every node's state file, data directory, memory and latest
// Raft snapshot; then a leader's kill -9, the killed node's restart and a
// fresh node's join, each until caught up.
package scale

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ax-scheduler/ax/client"
	"github.com/ax-scheduler/ax/internal/benchkit"
	"github.com/ax-scheduler/ax/internal/localcluster"
	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/model/member"
	"github.com/ax-scheduler/ax/worker"
)

// Options are the scenario's flags.
type Options struct {
	Target, Step   int           // pending delayed submissions in all, and per step
	Batch, Clients int           // submissions per request, concurrent submitting clients
	Delay          time.Duration // of the fill's submissions (24 h: pending throughout)
	Tasks          int           // cron and interval tasks made before the fill
	Executors      int           // in-process SDK workers long-polling
	Probes         int           // probe submissions per step, at least
	// MachineCrash adds a restart after a simulated machine crash (the
	// restarted node killed again, its state file's boot marker naming
	// another boot, its files evicted from the page cache).
	MachineCrash bool
	// Log receives progress lines; the tables are printed by Result.Print.
	Log io.Writer
}

// Register adds the scenario's flags to fs.
func (o *Options) Register(fs *flag.FlagSet) {
	fs.IntVar(&o.Target, "target", 10_000_000, "pending delayed submissions to fill the cluster with")
	fs.IntVar(&o.Step, "step", 1_000_000, "submissions per step (a table row each)")
	fs.IntVar(&o.Batch, "batch", 1000, "submissions per request (array)")
	fs.IntVar(&o.Clients, "clients", 4, "concurrent submitting clients")
	fs.DurationVar(&o.Delay, "delay", 24*time.Hour, "delay of each fill submission (pending throughout)")
	fs.IntVar(&o.Tasks, "tasks", 100_000, "cron and interval tasks made before the fill")
	fs.IntVar(&o.Executors, "executors", 1000, "long-polling SDK workers in this process")
	fs.IntVar(&o.Probes, "probes", 8, "probe submissions per step, at least")
	fs.BoolVar(&o.MachineCrash, "machine-crash", false, "after the restart, kill the node again as a machine crash would leave it "+
		"(its state file's boot marker naming another boot, so it rebuilds from its snapshot and log; its files evicted from the page cache) "+
		"and measure that restart too")
}

// Check refuses options that cannot run, naming the flag.
func (o Options) Check() error {
	switch {
	case o.Target < 1:
		return errors.New("-target must be positive")
	case o.Step < 1:
		return errors.New("-step must be positive")
	case o.Batch < 1:
		return errors.New("-batch must be positive")
	case o.Clients < 1:
		return errors.New("-clients must be positive")
	case o.Delay < time.Hour:
		return errors.New("-delay must be at least 1h (the fill stays pending throughout)")
	case o.Tasks < 0:
		return errors.New("-tasks must not be negative")
	case o.Executors < 0:
		return errors.New("-executors must not be negative")
	case o.Probes < 1:
		return errors.New("-probes must be positive")
	}
	return nil
}

// Cluster is the temporary cluster the scenario runs on: it kills,
// restarts and adds agents, and reads their processes and directories.
type Cluster struct {
	Local  *localcluster.Cluster
	Client *client.Client // fails over across the agents
	TLS    *tls.Config
	Token  string
}

// node returns the temporary cluster's node named id, nil if none.
func (c Cluster) node(id string) *localcluster.Node {
	for _, n := range c.Local.Members() {
		if n.ID == id {
			return n
		}
	}
	return nil
}

// nodeClient is a client of one agent that gives up soon.
func (c Cluster) nodeClient(addr string) *client.Client {
	return client.New(client.Config{Addrs: []string{addr}, TLS: c.TLS, Token: c.Token, RetryFor: time.Second})
}

// Step is what one step of the fill measured.
type Step struct {
	Pending   int           // SCHEDULED instances the leader counts after the step
	Submitted int           // submissions of this step
	Elapsed   time.Duration // of its batched submissions
	// ProbeP50 and ProbeP99 are the lateness (firedAt - scheduledAt) of
	// the step's probes, submitted one every 250 ms during the step, due
	// 2 s later.
	ProbeP50, ProbeP99 time.Duration
	Probes             int
	Leader             string
	Term               uint64 // the leader's after the step: a rise is an election during it
	Nodes              []NodeSample
}

// Rate is the batched submissions per second within the step.
func (s Step) Rate() float64 { return float64(s.Submitted) / s.Elapsed.Seconds() }

// Result is what the run measured.
type Result struct {
	Tasks, Executors int
	TasksTook        time.Duration
	ExecutorsSeen    int // executors the leader had heard from before the fill
	Steps            []Step
	Failover         Failover
	Restart, Join    CatchUp
	// Crash is the restart after a simulated machine crash (MachineCrash).
	Crash CatchUp
}

// Failover is a leader's kill -9.
type Failover struct {
	Old, New string
	Pending  int           // the fill, which the new leader must count
	Elected  time.Duration // kill -> a survivor says it leads
	Visible  time.Duration // kill -> the new leader counts every pending instance (GET /healthz "pending")
	Fired    time.Duration // kill -> firedAt of the first timer due after the kill (timers due every 10 ms)
}

// CatchUp is a node's (re)start until its applied index reaches the
// leader's commit index as of the start.
type CatchUp struct {
	Node  string
	Index uint64        // the leader's commit index at the start
	Took  time.Duration // start -> applied index >= Index
	// PeakRSSKB and PeakAnonKB are the highest VmRSS (and its RssAnon),
	// sampled every 100 ms from the start until caught up.
	PeakRSSKB, PeakAnonKB int64
	Samples               int
	// RefRSSKB is the steady VmRSS to compare with: the restarted node's
	// just before the kill; for a join, a follower's at the last step.
	RefRSSKB int64
	RefWhat  string
	// Snapshot is the latest Raft snapshot in the node's directory once
	// caught up: for a join, the one it was sent (or took since).
	Snapshot Snapshot
}

const (
	fillTask  = "scale-fill"
	probeTask = "scale-probe"
	timerTask = "scale-timers"
	handler   = "noop"
	// probeDue is how far ahead a probe is due; probeEvery how often one
	// is submitted during a step.
	probeDue   = 2 * time.Second
	probeEvery = 250 * time.Millisecond
)

// Run runs the scenario on c. A failure after some steps returns what
// was measured with the error.
func Run(ctx context.Context, c Cluster, o Options) (*Result, error) {
	if err := o.Check(); err != nil {
		return nil, err
	}
	if c.Local == nil || len(c.Local.Members()) < 3 {
		return nil, errors.New("scale needs a temporary cluster of at least 3 nodes (it kills the leader)")
	}
	logf := func(format string, args ...any) {
		if o.Log != nil {
			fmt.Fprintf(o.Log, format+"\n", args...)
		}
	}
	res := &Result{Tasks: o.Tasks, Executors: o.Executors}
	wctx, stopWorkers := context.WithCancel(ctx)
	var workers sync.WaitGroup
	defer func() { stopWorkers(); workers.Wait() }()
	start := time.Now()
	if err := makeTasks(ctx, c.Client, o.Tasks, logf); err != nil {
		return res, err
	}
	res.TasksTook = time.Since(start)
	logf("made %d cron/interval tasks in %s", o.Tasks, res.TasksTook.Round(time.Millisecond))
	var ran atomic.Int64
	for i := range o.Executors {
		w, err := worker.New(worker.Config{Servers: c.Local.Addrs(), Name: fmt.Sprintf("scale-%04d", i), Capacity: 1,
			TLS: c.TLS, Token: c.Token, Labels: map[string]string{"kind": "scale"}, Logger: hclog.NewNullLogger(),
			ShutdownGrace: -1, Handlers: map[string]worker.Handler{handler: func(context.Context, worker.Job) error { ran.Add(1); return nil }}})
		if err != nil {
			return res, err
		}
		workers.Add(1)
		go func() { defer workers.Done(); _ = w.Run(wctx) }()
	}
	if o.Executors > 0 {
		// The leader counts the executors it heard from in the last minute.
		_ = localcluster.WaitFor(ctx, time.Minute, func() error {
			h, err := leaderHealth(ctx, c)
			if err != nil {
				return err
			}
			if res.ExecutorsSeen = h.Executors; h.Executors < o.Executors {
				return fmt.Errorf("the leader has heard from %d of %d executors", h.Executors, o.Executors)
			}
			return nil
		})
		logf("%d in-process SDK workers long-polling (the leader has heard from %d)", o.Executors, res.ExecutorsSeen)
	}
	filled := 0
	for filled < o.Target {
		n := min(o.Step, o.Target-filled)
		logf("step %d: submitting %d (%d pending so far)", len(res.Steps)+1, n, filled)
		st, err := fillStep(ctx, c, o, n, logf)
		if err != nil {
			return res, fmt.Errorf("step %d: %w", len(res.Steps)+1, err)
		}
		filled += n
		res.Steps = append(res.Steps, st)
		logf("step %d: %d pending, %.0f/s batched, probe p50 %s p99 %s; SDK jobs run so far %d",
			len(res.Steps), st.Pending, st.Rate(), st.ProbeP50, st.ProbeP99, ran.Load())
	}
	var err error
	if res.Failover, err = killLeader(ctx, c, filled); err != nil {
		return res, fmt.Errorf("leader kill: %w", err)
	}
	logf("leader %s killed: new leader %s in %s, every pending instance visible in %s, first timer fired %s after the kill",
		res.Failover.Old, res.Failover.New, res.Failover.Elected.Round(time.Millisecond), res.Failover.Visible.Round(time.Millisecond), res.Failover.Fired.Round(time.Millisecond))
	if res.Restart, err = restart(ctx, c, res.Failover.Old, lastRSS(res, res.Failover.Old), logf); err != nil {
		return res, fmt.Errorf("restart: %w", err)
	}
	logf("%s restarted: caught up in %s", res.Restart.Node, res.Restart.Took.Round(time.Millisecond))
	if o.MachineCrash {
		if res.Crash, err = crashMachine(ctx, c, res.Failover.Old, lastRSS(res, res.Failover.Old), logf); err != nil {
			return res, fmt.Errorf("machine crash: %w", err)
		}
		logf("%s restarted after the simulated machine crash: caught up in %s", res.Crash.Node, res.Crash.Took.Round(time.Millisecond))
	}
	if res.Join, err = join(ctx, c, res, logf); err != nil {
		return res, fmt.Errorf("join: %w", err)
	}
	logf("%s joined: caught up in %s", res.Join.Node, res.Join.Took.Round(time.Millisecond))
	return res, nil
}

// makeTasks creates the fill's, the probe's and the timers' event tasks
// and n cron and interval tasks, half each, due rarely (daily crons at
// minutes spread over the day, intervals of 6 to 30 hours), all run by
// the workers' no-op handler.
func makeTasks(ctx context.Context, cl *client.Client, n int, logf func(string, ...any)) error {
	mk := func(name string, trig model.Trigger) error {
		_, err := cl.PutTask(ctx, &model.Task{Name: name, Trigger: trig, Action: model.Action{Type: model.ActionSDK, Handler: handler},
			Policy: model.Policy{MaxConcurrency: 1_000_000, ExecutorLabels: map[string]string{"kind": "scale"}}})
		return err
	}
	for _, name := range []string{fillTask, probeTask, timerTask} {
		if err := mk(name, model.Trigger{Type: model.TriggerEvent}); err != nil {
			return err
		}
	}
	var next atomic.Int64
	defer progress(func() { logf("  tasks: %d of %d made", min(next.Load(), int64(n)), n) })()
	_, err := benchkit.RunLoad(ctx, 16, n, func() error {
		i := int(next.Add(1) - 1)
		trig := model.Trigger{Type: model.TriggerCron, Expression: fmt.Sprintf("%d %d * * *", i%60, (i/60)%24)}
		if i%2 == 1 {
			trig = model.Trigger{Type: model.TriggerInterval, Every: model.Duration(6*time.Hour + time.Duration(i%1440)*time.Minute)}
		}
		return mk(fmt.Sprintf("scale-task-%06d", i), trig)
	})
	return err
}

// fillStep submits n delayed instances in batches from the clients while
// probes are paced, then reads the probes' lateness and samples every
// node.
func fillStep(ctx context.Context, c Cluster, o Options, n int, logf func(string, ...any)) (Step, error) {
	var st Step
	payload := json.RawMessage(`{"order":123456,"action":"close"}`)
	reqs := make([]model.SubmitRequest, o.Batch)
	for i := range reqs {
		reqs[i] = model.SubmitRequest{Payload: payload, Delay: model.Duration(o.Delay)}
	}
	requests := (n + o.Batch - 1) / o.Batch
	last := n - (requests-1)*o.Batch // the last request's size
	var sent atomic.Int64
	fillDone := make(chan struct{})
	probes := make(chan []model.Submitted, 1)
	pctx, stopProbes := context.WithCancel(ctx)
	defer stopProbes()
	go func() { probes <- paceProbes(pctx, c.Client, o.Probes, fillDone) }()
	stop := progress(func() { logf("  %d of %d requests of %d sent", min(sent.Load(), int64(requests)), requests, o.Batch) })
	r, err := benchkit.RunLoad(ctx, o.Clients, requests, func() error {
		batch := reqs
		if int(sent.Add(1)) == requests {
			batch = reqs[:last]
		}
		_, err := c.Client.SubmitBatch(ctx, fillTask, batch)
		return err
	})
	stop()
	close(fillDone)
	subs := <-probes
	if err != nil {
		return st, err
	}
	st.Submitted, st.Elapsed = n, r.Elapsed
	late, err := probeLateness(ctx, c.Client, subs)
	if err != nil {
		return st, err
	}
	pct := benchkit.PercentileOf(late)
	st.ProbeP50, st.ProbeP99, st.Probes = pct(0.5).Round(100*time.Microsecond), pct(0.99).Round(100*time.Microsecond), len(late)
	h, err := leaderHealth(ctx, c)
	if err != nil {
		return st, err
	}
	st.Pending, st.Leader, st.Term = h.Pending, h.Node, h.Term
	for _, node := range c.Local.Members() {
		s := sampleNode(node)
		s.Role = "follower"
		if node.ID == h.Node {
			s.Role = member.RoleLeader
		}
		st.Nodes = append(st.Nodes, s)
	}
	return st, nil
}

// paceProbes submits one probe due probeDue later every probeEvery until
// done is closed and at least least were submitted. A failed submission
// (a busy leader's timeout) is skipped.
func paceProbes(ctx context.Context, cl *client.Client, least int, done <-chan struct{}) []model.Submitted {
	var out []model.Submitted
	tick := time.NewTicker(probeEvery)
	defer tick.Stop()
	finished := false
	for {
		if s, err := cl.Submit(ctx, probeTask, model.SubmitRequest{Delay: model.Duration(probeDue)}); err == nil {
			out = append(out, *s)
		}
		select {
		case <-done:
			finished = true
		default:
		}
		if finished && len(out) >= least {
			return out
		}
		select {
		case <-ctx.Done():
			return out
		case <-tick.C:
		}
	}
}

// probeLateness waits until every probe has fired and answers their
// lateness.
func probeLateness(ctx context.Context, cl *client.Client, subs []model.Submitted) ([]time.Duration, error) {
	if len(subs) == 0 {
		return nil, errors.New("no probe could be submitted")
	}
	var late []time.Duration
	for _, s := range subs {
		err := localcluster.WaitFor(ctx, time.Minute, func() error {
			in, err := cl.GetInstance(ctx, s.ID)
			if err != nil {
				return err
			}
			if in.FiredAt.IsZero() {
				return fmt.Errorf("probe %s due %s is %s", in.ID, in.ScheduledAt.Format(time.RFC3339Nano), in.State)
			}
			late = append(late, in.FiredAt.Sub(in.ScheduledAt.Time))
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return late, nil
}

// leaderHealth waits (up to a minute: an election may be under way) for
// a running agent that says it leads, and answers its health.
func leaderHealth(ctx context.Context, c Cluster) (*member.Health, error) {
	var h *member.Health
	err := localcluster.WaitFor(ctx, time.Minute, func() error {
		for _, n := range c.Local.Members() {
			if !n.Running() {
				continue
			}
			got, err := c.nodeClient(n.HTTPAddr).Health(ctx)
			if err == nil && got.Role == member.RoleLeader {
				h = got
				return nil
			}
		}
		return errors.New("no leader")
	})
	return h, err
}

// lastRSS is a node's VmRSS at the last step, -1 if unknown.
func lastRSS(r *Result, id string) int64 {
	if len(r.Steps) == 0 {
		return -1
	}
	for _, s := range r.Steps[len(r.Steps)-1].Nodes {
		if s.ID == id {
			return s.RSSKB
		}
	}
	return -1
}

// progress calls report every 10 s until the returned stop is called.
func progress(report func()) (stop func()) { return benchkit.Every(10*time.Second, report) }
