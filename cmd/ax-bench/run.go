package main

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/ax-scheduler/ax/internal/benchkit"
	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/worker"
)

type runCommand struct{}

func (*runCommand) Usage() string {
	return `
Usage: ax-bench run [-n 50000] [-executors 2 -capacity 64] [-kinds sdk,shell] [-rate 1000 -seconds 5] [-priority P -pool S] [common flags]

End to end, submission to SUCCESS, through executors: sdk no-op handlers
in this process, and shell "true" run by ax executor processes (the
temporary cluster's binary; the shell run needs the temporary cluster).
Then the dispatch latency (firedAt -> startedAt) at a paced rate.

Examples:
	ax-bench run -n 50000 -executors 2 -rate 1000
	ax-bench run -n 60000 -executors 2 -capacity 1024 -shell-n 2000 -rate 1000 -seconds 5
	ax-bench run -addr 10.0.0.1:7070 -kinds sdk -n 20000
`
}

func (c *runCommand) Run(ctx context.Context, args []string) error {
	bf := newBenchFlags("run", c.Usage())
	var o runOptions
	bf.fs.IntVar(&o.n, "n", 50000, "instances per throughput run")
	bf.fs.IntVar(&o.executors, "executors", 2, "executors")
	bf.fs.IntVar(&o.capacity, "capacity", 64, "attempts per executor at once")
	kinds := bf.fs.String("kinds", "sdk,shell", "actions to measure: sdk (no-op handler), shell (true)")
	bf.fs.IntVar(&o.shellN, "shell-n", 5000, "instances for the shell run")
	bf.fs.IntVar(&o.rate, "rate", 1000, "paced submissions/s for the dispatch latency run (0 to skip)")
	bf.fs.IntVar(&o.seconds, "seconds", 5, "length of the paced run")
	bf.fs.IntVar(&o.priority, "priority", 0, "policy.priority of the sdk task, and minus it of a second sdk task the paced run alternates with (protocol 8; 0: neither)")
	bf.fs.IntVar(&o.poolSlots, "pool", 0, "put a pool of this many slots and name it in the bench tasks' policy.pool (protocol 8; 0: none)")
	if err := bf.parse(args); err != nil {
		return err
	}
	for _, k := range strings.Split(*kinds, ",") {
		if k != "sdk" && k != "shell" {
			return fmt.Errorf("run: bad -kinds entry %q: want sdk, shell or both", k)
		}
		o.kinds = append(o.kinds, k)
	}
	if o.n < 1 || o.shellN < 1 || o.executors < 1 || o.capacity < 1 || o.rate < 0 || o.seconds < 1 {
		return fmt.Errorf("run: -n, -shell-n, -executors, -capacity and -seconds must be positive, -rate not negative")
	}
	t, err := bf.start(ctx, "-executor", "false")
	if err != nil {
		return err
	}
	defer t.close()
	return benchRun(ctx, t, o)
}

// runOptions are the run scenario's flags.
type runOptions struct {
	n, shellN           int
	executors, capacity int
	kinds               []string
	rate, seconds       int
	priority, poolSlots int
}

func benchRun(ctx context.Context, t *target, o runOptions) error {
	cl := t.cl
	// In-process SDK workers.
	wctx, cancelWorkers := context.WithCancel(ctx)
	defer cancelWorkers()
	noop := map[string]worker.Handler{"noop": func(context.Context, worker.Job) error { return nil }}
	for i := 0; i < o.executors; i++ {
		w, err := worker.New(worker.Config{Servers: t.addrs, Name: fmt.Sprintf("bench-sdk-%d", i), Capacity: o.capacity, Handlers: noop,
			TLS: t.tls, Token: t.token, Labels: map[string]string{"kind": "sdk"}})
		if err != nil {
			return err
		}
		go w.Run(wctx)
	}
	for _, kind := range o.kinds {
		if kind != "shell" {
			continue
		}
		if err := t.needLocal("run: the shell run"); err != nil {
			return err
		}
		for i := 0; i < o.executors; i++ {
			if _, err := t.local.StartExecutor(fmt.Sprintf("bench-shell-%d", i), "-capacity", fmt.Sprint(max(o.capacity/4, 1)), "-labels", "kind=shell", "-log-level", "warn"); err != nil {
				return err
			}
		}
	}
	pool := ""
	if o.poolSlots > 0 {
		if _, err := cl.PutPool(ctx, &model.Pool{Name: "bench-pool", Slots: o.poolSlots}); err != nil {
			return fmt.Errorf("-pool: %w", err)
		}
		pool = "bench-pool"
	}
	mk := func(name string, act model.Action, kind string, priority int) error {
		_, err := cl.PutTask(ctx, &model.Task{Name: name, Trigger: model.Trigger{Type: model.TriggerEvent}, Action: act,
			Policy: model.Policy{MaxConcurrency: 1_000_000, ExecutorLabels: map[string]string{"kind": kind}, Priority: priority, Pool: pool}})
		return err
	}
	for name, prio := range map[string]int{"bench-run-sdk": o.priority, "bench-run-sdk-other": -o.priority} {
		if err := mk(name, model.Action{Type: model.ActionSDK, Handler: "noop"}, "sdk", prio); err != nil {
			return err
		}
	}
	if err := mk("bench-run-shell", model.Action{Type: model.ActionShell, Command: "true"}, "shell", 0); err != nil {
		return err
	}
	drained := func() error {
		for {
			h, err := t.leaderHealth(ctx)
			if err == nil && h.Active == 0 && h.Pending == 0 {
				return nil
			}
			if err := benchkit.Sleep(ctx, 100*time.Millisecond); err != nil {
				return err
			}
		}
	}
	fmt.Printf("%-34s %10s %12s\n", "run", "instances", "per second")
	for _, kind := range o.kinds {
		task, count := "bench-run-sdk", o.n
		if kind == "shell" {
			task, count = "bench-run-shell", o.shellN
		}
		start := time.Now()
		for done := 0; done < count; {
			b := min(1000, count-done)
			if _, err := cl.SubmitBatch(ctx, task, make([]model.SubmitRequest, b)); err != nil {
				return err
			}
			done += b
		}
		if err := drained(); err != nil {
			return err
		}
		el := time.Since(start)
		fmt.Printf("%-34s %10d %12.0f\n", fmt.Sprintf("%s, %d executors x %d", kind, o.executors, o.capacity), count, float64(count)/el.Seconds())
	}
	if o.rate == 0 {
		return nil
	}
	total := o.rate * o.seconds
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	per, paced := max(o.rate/100, 1), map[string]int{}
	for done := 0; done < total; {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
		b, task := min(per, total-done), "bench-run-sdk"
		if o.priority != 0 && done/per%2 == 1 {
			task = "bench-run-sdk-other" // the dispatcher compares the two by effective priority
		}
		if _, err := cl.SubmitBatch(ctx, task, make([]model.SubmitRequest, b)); err != nil {
			return err
		}
		paced[task] += b
		done += b
	}
	if err := drained(); err != nil {
		return err
	}
	var lat []time.Duration
	for task, n := range paced { // the newest n of each: the paced ones
		err := benchkit.EachInstance(ctx, cl, model.InstanceFilter{Task: task, Limit: 1000}, func(in *model.Instance) bool {
			if n--; !in.StartedAt.IsZero() {
				lat = append(lat, in.StartedAt.Sub(in.FiredAt.Time))
			}
			return n > 0
		})
		if err != nil {
			return err
		}
	}
	if len(lat) == 0 {
		return fmt.Errorf("run: no instance of bench-run-sdk started")
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	pct := func(p float64) time.Duration { return lat[min(len(lat)-1, int(p*float64(len(lat))))] }
	fmt.Printf("dispatch latency (firedAt -> startedAt) at %d/s over %ds, %d instances: p50 %s p99 %s max %s\n",
		o.rate, o.seconds, len(lat), pct(0.5), pct(0.99), pct(1))
	return nil
}
