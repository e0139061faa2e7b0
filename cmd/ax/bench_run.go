package main

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/ax-scheduler/ax/client"
	"github.com/ax-scheduler/ax/model"
)

func runBenchRun(ctx context.Context, args []string) error {
	bf := newBenchFlags("bench run")
	n := bf.fs.Int("n", 50000, "instances per throughput run")
	executors := bf.fs.Int("executors", 2, "executors")
	capacity := bf.fs.Int("capacity", 64, "attempts per executor at once")
	kinds := bf.fs.String("kinds", "sdk,shell", "actions to measure: sdk (no-op handler), shell (true)")
	shellN := bf.fs.Int("shell-n", 5000, "instances for the shell run")
	rate := bf.fs.Int("rate", 1000, "paced submissions/s for the dispatch latency run (0 to skip)")
	seconds := bf.fs.Int("seconds", 5, "length of the paced run")
	if err := bf.fs.Parse(args); err != nil {
		return err
	}
	cl, stop, err := bf.start(ctx, "-executor", "false")
	if err != nil {
		return err
	}
	defer stop()
	addrs := strings.Split(bf.addr, ",")
	// In-process SDK workers.
	wctx, cancelWorkers := context.WithCancel(ctx)
	defer cancelWorkers()
	noop := map[string]client.Handler{"noop": func(context.Context, client.Job) error { return nil }}
	for i := 0; i < *executors; i++ {
		w, err := client.NewWorker(client.WorkerConfig{Servers: addrs, Name: fmt.Sprintf("bench-sdk-%d", i), Capacity: *capacity, Handlers: noop, TLS: bf.tlsConf,
			Labels: map[string]string{"kind": "sdk"}})
		if err != nil {
			return err
		}
		go w.Run(wctx)
	}
	if strings.Contains(*kinds, "shell") {
		if benchLocal == nil {
			return fmt.Errorf("bench run: the shell run needs the temporary cluster (no -addr)")
		}
		for i := 0; i < *executors; i++ {
			if _, err := benchLocal.StartExecutor(fmt.Sprintf("bench-shell-%d", i), "-capacity", fmt.Sprint(*capacity/4), "-labels", "kind=shell", "-log-level", "warn"); err != nil {
				return err
			}
		}
	}
	mk := func(name string, act model.Action, kind string) error {
		_, err := cl.PutTask(ctx, &model.Task{Name: name, Trigger: model.Trigger{Type: model.TriggerEvent}, Action: act,
			Policy: model.Policy{MaxConcurrency: 1_000_000, ExecutorLabels: map[string]string{"kind": kind}}})
		return err
	}
	if err := mk("bench-run-sdk", model.Action{Type: model.ActionSDK, Handler: "noop"}, "sdk"); err != nil {
		return err
	}
	if err := mk("bench-run-shell", model.Action{Type: model.ActionShell, Command: "true"}, "shell"); err != nil {
		return err
	}
	drained := func() error {
		for {
			h, err := leaderHealth(ctx, bf, addrs)
			if err == nil && h.Active == 0 && h.Pending == 0 {
				return nil
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	fmt.Printf("%-34s %10s %12s\n", "run", "instances", "per second")
	for _, kind := range strings.Split(*kinds, ",") {
		task, count := "bench-run-sdk", *n
		if kind == "shell" {
			task, count = "bench-run-shell", *shellN
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
		fmt.Printf("%-34s %10d %12.0f\n", fmt.Sprintf("%s, %d executors x %d", kind, *executors, *capacity), count, float64(count)/el.Seconds())
	}
	if *rate > 0 {
		total := *rate * *seconds
		tick := time.NewTicker(10 * time.Millisecond)
		per := max(*rate/100, 1)
		for done := 0; done < total; {
			<-tick.C
			b := min(per, total-done)
			if _, err := cl.SubmitBatch(ctx, "bench-run-sdk", make([]model.SubmitRequest, b)); err != nil {
				return err
			}
			done += b
		}
		tick.Stop()
		if err := drained(); err != nil {
			return err
		}
		var lat []time.Duration
		f := model.InstanceFilter{Task: "bench-run-sdk", Limit: 1000}
		for len(lat) < total {
			page, err := cl.ListInstances(ctx, f, client.Consistent())
			if err != nil {
				return err
			}
			for _, in := range page.Instances {
				if len(lat) < total && !in.StartedAt.IsZero() {
					lat = append(lat, in.StartedAt.Sub(in.FiredAt.Time))
				}
			}
			if page.NextCursor == "" {
				break
			}
			f.Cursor = page.NextCursor
		}
		sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
		pct := func(p float64) time.Duration { return lat[min(len(lat)-1, int(p*float64(len(lat))))] }
		fmt.Printf("dispatch latency (firedAt -> startedAt) at %d/s over %ds, %d instances: p50 %s p99 %s max %s\n",
			*rate, *seconds, len(lat), pct(0.5), pct(0.99), pct(1))
	}
	return nil
}

// leaderHealth asks each address until it finds the leader's health.
func leaderHealth(ctx context.Context, bf *benchFlags, addrs []string) (*model.Health, error) {
	for _, a := range addrs {
		h, err := bf.nodeClient(a, time.Second).Health(ctx)
		if err == nil && h.Role == model.RoleLeader {
			return h, nil
		}
	}
	return nil, fmt.Errorf("no leader")
}
