package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ax-scheduler/ax/client"
	"github.com/ax-scheduler/ax/internal/benchkit"
	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/worker"
)

type soakCommand struct{}

func (*soakCommand) Usage() string {
	return `
Usage: ax-bench soak [-minutes 5] [-warmup 2m] [-retention 30s -retention-interval 5s] [common flags]

A mixed load for -minutes (delayed submissions due in seconds and in
hours, triggers, per-second crons, an SDK worker in this process and an ax
executor) on a cluster with a short retention. Every -sample it prints
each node's memory (RSS), goroutines, file descriptors and data directory
size, then compares the first sample after the warm-up with the last, to
show that they level off. It asks every node's /healthz every 500 ms and
reports each Raft election (a new term) and leader change: under a
steady load without faults, each is a spurious one. -ax (or -agent-binary) runs the cluster from
another ax binary, an earlier release say, under the same load. With
-addr, -pids and -data-dirs tell where the agents' processes and data are.

Examples:
	ax-bench soak -minutes 5 -retention 30s -retention-interval 5s
	ax-bench soak -minutes 17 -warmup 11m
	ax-bench soak -minutes 6 -ax /tmp/ax-previous
`
}

func (c *soakCommand) Run(ctx context.Context, args []string) error {
	bf := newBenchFlags("soak", c.Usage())
	var o soakOptions
	minutes := bf.fs.Float64("minutes", 5, "how long the load runs, warm-up included")
	bf.fs.DurationVar(&o.warmup, "warmup", 2*time.Minute, "samples before this are not compared (retention, snapshots and idle connections reach their steady state)")
	bf.fs.DurationVar(&o.every, "sample", 10*time.Second, "how often to sample every node")
	retention := bf.fs.Duration("retention", 30*time.Second, "the temporary cluster's -retention")
	retentionEvery := bf.fs.Duration("retention-interval", 5*time.Second, "the temporary cluster's -retention-interval")
	bf.fs.IntVar(&o.rate, "rate", 500, "delayed submissions/s due within seconds (run by the SDK worker)")
	bf.fs.IntVar(&o.farBacklog, "far-backlog", 250_000, "delayed submissions due in 2-3 hours made first (pending throughout)")
	bf.fs.IntVar(&o.farRate, "far-rate", 20, "delayed submissions/s due in 2-3 hours during the run")
	bf.fs.IntVar(&o.triggers, "trigger-rate", 20, "triggers/s of an event task")
	bf.fs.IntVar(&o.crons, "crons", 4, "per-second cron tasks (every other one a shell task for an ax executor, with the temporary cluster)")
	bf.fs.StringVar(&bf.ax, "agent-binary", "", "same as -ax: run the temporary cluster's agents and executor from this ax binary (to compare releases)")
	pids := bf.fs.String("pids", "", "with -addr: the agents' process ids, in -addr order, to sample memory and descriptors")
	dataDirs := bf.fs.String("data-dirs", "", "with -addr: the agents' data directories, in -addr order, to sample disk use")
	if err := bf.parse(args); err != nil {
		return err
	}
	if *minutes <= 0 || o.every <= 0 || o.warmup < 0 || *retention <= 0 || *retentionEvery <= 0 {
		return fmt.Errorf("soak: -minutes, -sample, -retention and -retention-interval must be positive, -warmup not negative")
	}
	if o.rate < 0 || o.farBacklog < 0 || o.farRate < 0 || o.triggers < 0 || o.crons < 0 {
		return fmt.Errorf("soak: -rate, -far-backlog, -far-rate, -trigger-rate and -crons must not be negative")
	}
	if bf.conn.Addr == "" && (*pids != "" || *dataDirs != "") {
		return fmt.Errorf("soak: -pids and -data-dirs go with -addr (the temporary cluster's are known)")
	}
	o.total = time.Duration(*minutes * float64(time.Minute))
	o.retention, o.retentionEvery = *retention, *retentionEvery
	t, err := bf.start(ctx, "-executor", "false", "-retention", retention.String(), "-retention-interval", retentionEvery.String())
	if err != nil {
		return err
	}
	defer t.close()
	nodes, err := soakNodes(t, *pids, *dataDirs)
	if err != nil {
		return err
	}
	return benchSoak(ctx, t, nodes, o)
}

// soakOptions are the soak scenario's flags.
type soakOptions struct {
	total, warmup, every      time.Duration
	retention, retentionEvery time.Duration // shown: the temporary cluster's, or what -addr's are said to be
	rate, farBacklog, farRate int
	triggers, crons           int
}

// benchSoak runs a mixed load for a while against a cluster with a short
// retention and samples every node's resources, to show that they level
// off: memory, goroutines, file descriptors and disk.
func benchSoak(ctx context.Context, t *target, nodes []soakNode, o soakOptions) error {
	ld := &soakLoad{cl: t.cl, leaders: &leaderWatch{}}
	wctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	wg.Add(1)
	go func() { defer wg.Done(); ld.leaders.run(wctx, nodes, leaderPoll) }()
	shell, err := ld.setup(wctx, t, o.crons)
	if err != nil {
		return err
	}
	fmt.Printf("load: %d/s due in 1-10 s, %d due in 2-3 h first then %d/s, %d triggers/s, %d per-second crons (%d shell); retention %s every %s\n",
		o.rate, o.farBacklog, o.farRate, o.triggers, o.crons, shell, o.retention, o.retentionEvery)
	start := time.Now()
	if err := ld.backlog(ctx, o.farBacklog); err != nil {
		return err
	}
	fmt.Printf("made the backlog of %d far submissions in %s\n", o.farBacklog, time.Since(start).Round(time.Millisecond))
	for _, p := range []struct {
		rate int
		fn   func(context.Context, int) error
	}{{o.rate, ld.near}, {o.farRate, ld.far}, {o.triggers, ld.trigger}} {
		wg.Add(1)
		go func() { defer wg.Done(); ld.pace(wctx, p.rate, p.fn) }()
	}
	samples := ld.sampleLoop(ctx, nodes, start, o.total, o.every)
	cancel()
	wg.Wait()
	printSoakSummary(samples, o.warmup) // of what was sampled, when interrupted too
	fmt.Print("\n" + ld.leaders.report(leaderPoll))
	return ctx.Err()
}

// leaderPoll is how often the soak asks every node for its leader and
// term.
const leaderPoll = 500 * time.Millisecond

// soakLoad is the load generator's state and counts.
type soakLoad struct {
	cl                             *client.Client
	leaders                        *leaderWatch
	nearN, farN, triggered, ran    atomic.Int64
	errs                           atomic.Int64
	lastErr                        atomic.Pointer[string]
	payload                        json.RawMessage
	nearTask, farTask, triggerTask string
}

// setup creates the tasks and starts the executors: an in-process SDK
// worker with a no-op handler, and an ax executor for the shell crons
// when the cluster is a temporary one. It returns the number of shell
// crons.
func (ld *soakLoad) setup(ctx context.Context, t *target, crons int) (int, error) {
	ld.payload = json.RawMessage(`{"order":123456,"action":"close"}`)
	ld.nearTask, ld.farTask, ld.triggerTask = "soak-near", "soak-far", "soak-trigger"
	sdk := model.Action{Type: model.ActionSDK, Handler: "noop"}
	mk := func(name string, trig model.Trigger, act model.Action, kind string) error {
		_, err := ld.cl.PutTask(ctx, &model.Task{Name: name, Trigger: trig, Action: act,
			Policy: model.Policy{MaxConcurrency: 1_000_000, ExecutorLabels: map[string]string{"kind": kind}}})
		return err
	}
	event := model.Trigger{Type: model.TriggerEvent}
	for _, name := range []string{ld.nearTask, ld.farTask, ld.triggerTask} {
		if err := mk(name, event, sdk, "sdk"); err != nil {
			return 0, err
		}
	}
	shell := 0
	if t.local != nil && crons > 1 {
		if _, err := t.local.StartExecutor("soak-shell", "-capacity", "8", "-labels", "kind=shell", "-log-level", "warn"); err != nil {
			return 0, err
		}
	}
	perSecond := model.Trigger{Type: model.TriggerCron, Expression: "* * * * * *"}
	for i := 0; i < crons; i++ {
		act, kind := sdk, "sdk"
		if t.local != nil && i%2 == 1 {
			act, kind = model.Action{Type: model.ActionShell, Command: "true"}, "shell"
			shell++
		}
		if err := mk("soak-cron-"+strconv.Itoa(i), perSecond, act, kind); err != nil {
			return 0, err
		}
	}
	w, err := worker.New(worker.Config{Servers: t.addrs, Name: "soak-sdk", Capacity: 256,
		TLS: t.tls, Token: t.token, Labels: map[string]string{"kind": "sdk"}, Logger: hclog.New(&hclog.LoggerOptions{Name: "soak-sdk", Level: hclog.Warn}),
		Handlers: map[string]worker.Handler{"noop": func(context.Context, worker.Job) error { ld.ran.Add(1); return nil }}})
	if err != nil {
		return 0, err
	}
	go w.Run(ctx)
	return shell, nil
}

// backlog submits n delayed instances due in 2 to 3 hours, before the
// run: they stay pending throughout and sort before everything later.
func (ld *soakLoad) backlog(ctx context.Context, n int) error {
	const batch = 5000
	if n == 0 {
		return nil
	}
	_, err := benchkit.RunLoad(ctx, 4, (n+batch-1)/batch, func() error {
		return ld.submit(ctx, ld.farTask, batch, 2*time.Hour, time.Hour, &ld.farN)
	})
	return err
}

func (ld *soakLoad) near(ctx context.Context, n int) error {
	return ld.submit(ctx, ld.nearTask, n, time.Second, 9*time.Second, &ld.nearN)
}

func (ld *soakLoad) far(ctx context.Context, n int) error {
	return ld.submit(ctx, ld.farTask, n, 2*time.Hour, time.Hour, &ld.farN)
}

// submit submits n instances of task in one array, due from delay to
// delay+spread.
func (ld *soakLoad) submit(ctx context.Context, task string, n int, delay, spread time.Duration, count *atomic.Int64) error {
	reqs := make([]model.SubmitRequest, n)
	for i := range reqs {
		reqs[i] = model.SubmitRequest{Payload: ld.payload, Delay: model.Duration(delay + spread*time.Duration(i)/time.Duration(n))}
	}
	if _, err := ld.cl.SubmitBatch(ctx, task, reqs); err != nil {
		return err
	}
	count.Add(int64(n))
	return nil
}

func (ld *soakLoad) trigger(ctx context.Context, n int) error {
	for i := 0; i < n; i++ {
		if _, err := ld.cl.Trigger(ctx, ld.triggerTask, model.TriggerRequest{}); err != nil {
			return err
		}
		ld.triggered.Add(1)
	}
	return nil
}

// pace calls fn every 100 ms with the number of operations due since the
// start at perSecond a second (at most a second's worth at once: a
// stalled cluster is not flooded afterwards). Errors are counted.
func (ld *soakLoad) pace(ctx context.Context, perSecond int, fn func(context.Context, int) error) {
	if perSecond == 0 {
		return
	}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	start, done := time.Now(), 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		due := int(time.Since(start).Seconds() * float64(perSecond))
		n := min(due-done, perSecond)
		if n <= 0 {
			continue
		}
		done = max(done+n, due-perSecond)
		if err := fn(ctx, n); err != nil && ctx.Err() == nil {
			ld.errs.Add(1)
			msg := err.Error()
			ld.lastErr.Store(&msg)
		}
	}
}
