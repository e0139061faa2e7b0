package main

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/ax-scheduler/ax/client"
	"github.com/ax-scheduler/ax/internal/benchkit"
	"github.com/ax-scheduler/ax/model"
)

type shardsCommand struct{}

func (*shardsCommand) Usage() string {
	return `
Usage: ax-bench shards [-shards 100] [-executors 4 -capacity 32] [-work "sleep 0.2"] [-runs 5] [common flags]

One sharded instance at a time (policy.shards) through ax executor
processes (the temporary cluster's binary): from its fire, how long until
it fanned out, until every shard had started and until it finished, and
how many shards each executor ran. Needs the temporary cluster.

Examples:
	ax-bench shards -shards 100 -executors 4
	ax-bench shards -shards 1000 -executors 4 -capacity 250 -work true
`
}

func (c *shardsCommand) Run(ctx context.Context, args []string) error {
	bf := newBenchFlags("shards", c.Usage())
	var o shardsOptions
	bf.fs.IntVar(&o.shards, "shards", 100, "shards per instance (1 to 1000)")
	bf.fs.IntVar(&o.executors, "executors", 4, "ax executor processes")
	bf.fs.IntVar(&o.capacity, "capacity", 32, "attempts per executor at once")
	bf.fs.StringVar(&o.work, "work", "sleep 0.2", "each shard's shell command")
	bf.fs.IntVar(&o.runs, "runs", 5, "instances, one after the other")
	if err := bf.parse(args); err != nil {
		return err
	}
	if o.shards < 1 || o.shards > model.MaxShards || o.executors < 1 || o.capacity < 1 || o.runs < 1 {
		return fmt.Errorf("shards: -shards must be 1 to %d; -executors, -capacity and -runs positive", model.MaxShards)
	}
	t, err := bf.start(ctx, "-executor", "false")
	if err != nil {
		return err
	}
	defer t.close()
	if err := t.needLocal("shards"); err != nil {
		return err
	}
	return benchShards(ctx, t, o)
}

// shardsOptions are the shards scenario's flags.
type shardsOptions struct {
	shards, executors, capacity, runs int
	work                              string
}

// shardRun is what one sharded instance measured, from its fire.
type shardRun struct {
	fanOut, allStarted, finished time.Duration
	perExecutor                  map[string]int
}

func benchShards(ctx context.Context, t *target, o shardsOptions) error {
	cl := t.cl
	for i := 0; i < o.executors; i++ {
		if _, err := t.local.StartExecutor(fmt.Sprintf("bench-shard-%d", i), "-capacity", fmt.Sprint(o.capacity), "-log-level", "warn"); err != nil {
			return err
		}
	}
	for {
		l, err := cl.Executors(ctx)
		if err == nil && len(l.Executors) >= o.executors {
			break
		}
		if err := benchkit.Sleep(ctx, 100*time.Millisecond); err != nil {
			return err
		}
	}
	_, err := cl.PutTask(ctx, &model.Task{Name: "bench-shards", Trigger: model.Trigger{Type: model.TriggerEvent},
		Action: model.Action{Type: model.ActionShell, Command: o.work}, Policy: model.Policy{Shards: o.shards}})
	if err != nil {
		return err
	}
	fmt.Printf("%d shards of %q over %d executors x %d slots\n", o.shards, o.work, o.executors, o.capacity)
	fmt.Printf("%-4s %10s %12s %10s  %s\n", "run", "fan-out", "all started", "finished", "shards per executor")
	var runs []shardRun
	for i := 0; i < o.runs; i++ {
		r, err := shardOnce(ctx, cl)
		if err != nil {
			return err
		}
		runs = append(runs, r)
		var spread []string
		for _, e := range sortedNames(r.perExecutor) {
			spread = append(spread, fmt.Sprintf("%s %d", strings.TrimPrefix(e, "bench-shard-"), r.perExecutor[e]))
		}
		fmt.Printf("%-4d %10s %12s %10s  %s\n", i+1, round(r.fanOut), round(r.allStarted), round(r.finished), strings.Join(spread, ", "))
	}
	med := func(f func(shardRun) time.Duration) time.Duration {
		ds := make([]time.Duration, len(runs))
		for i, r := range runs {
			ds[i] = f(r)
		}
		sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
		return ds[len(ds)/2]
	}
	fmt.Printf("%-4s %10s %12s %10s\n", "p50", round(med(func(r shardRun) time.Duration { return r.fanOut })),
		round(med(func(r shardRun) time.Duration { return r.allStarted })), round(med(func(r shardRun) time.Duration { return r.finished })))
	return nil
}

// shardOnce triggers the sharded task, waits for its instance to end
// and measures it from the cluster's stamps.
func shardOnce(ctx context.Context, cl *client.Client) (shardRun, error) {
	s, err := cl.Trigger(ctx, "bench-shards", model.TriggerRequest{})
	if err != nil {
		return shardRun{}, err
	}
	var in *model.Instance
	for {
		if in, err = cl.GetInstance(ctx, s.ID); err == nil && in.State != model.StateRunning && in.State != model.StateReady {
			break
		}
		if err := benchkit.Sleep(ctx, 50*time.Millisecond); err != nil {
			return shardRun{}, err
		}
	}
	if in.State != model.StateSuccess {
		return shardRun{}, fmt.Errorf("instance %s ended %s: %s", in.ID, in.State, in.LastError)
	}
	l, err := cl.Shards(ctx, s.ID)
	if err != nil {
		return shardRun{}, err
	}
	r := shardRun{fanOut: in.StartedAt.Sub(in.FiredAt.Time), finished: in.FinishedAt.Sub(in.FiredAt.Time), perExecutor: map[string]int{}}
	for _, sh := range l.Shards {
		r.allStarted = max(r.allStarted, sh.StartedAt.Sub(in.FiredAt.Time))
		r.perExecutor[sh.Executor]++
	}
	return r, nil
}

func sortedNames(m map[string]int) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
