package main

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"

	"github.com/ax-scheduler/ax/client"
	"github.com/ax-scheduler/ax/internal/benchkit"
	"github.com/ax-scheduler/ax/model"
)

type tasksCommand struct{}

func (*tasksCommand) Usage() string {
	return `
Usage: ax-bench tasks [-clients 1,8,64] [-n 2000] [common flags]

Writes tasks over HTTP (PUT /v1/tasks/NAME, each a Raft commit acknowledged
by a majority) and prints writes/s and latency percentiles per client count.
Without -addr it starts a temporary 3-node loopback cluster (fsync on for
the Raft log) and removes it afterwards.

Examples:
	ax-bench tasks -clients 1,8,64 -n 4000
	ax-bench tasks -tls -clients 1,8,64 -n 4000
	ax-bench tasks -addr 127.0.0.1:7070,127.0.0.1:7080,127.0.0.1:7090 -clients 64 -n 20000
`
}

func (c *tasksCommand) Run(ctx context.Context, args []string) error {
	bf := newBenchFlags("tasks", c.Usage())
	clients := bf.fs.String("clients", "1,8,64", "client counts to run, comma-separated")
	n := bf.fs.Int("n", 2000, "writes per client count")
	if err := bf.parse(args); err != nil {
		return err
	}
	counts, err := benchkit.ParseCounts("-clients", *clients)
	if err != nil {
		return fmt.Errorf("tasks: %w", err)
	}
	if *n < 1 {
		return fmt.Errorf("tasks: -n must be positive")
	}
	t, err := bf.start(ctx)
	if err != nil {
		return err
	}
	defer t.close()
	fmt.Printf("%-8s %8s %10s %10s %10s %10s\n", "clients", "writes", "writes/s", "p50", "p99", "max")
	for round, cc := range counts {
		r, err := writeTasks(ctx, t.cl, round, cc, *n)
		if err != nil {
			return err
		}
		fmt.Printf("%-8d %8d %10.0f %10s %10s %10s\n", cc, r.N, r.Rate(), r.P50, r.P99, r.Max)
	}
	return nil
}

// writeTasks writes n tasks from the given number of clients, named after
// the round so that each round creates new ones.
func writeTasks(ctx context.Context, cl *client.Client, round, clients, n int) (*benchkit.LoadResult, error) {
	var next atomic.Int64
	return benchkit.RunLoad(ctx, clients, n, func() error {
		i := next.Add(1) - 1
		_, err := cl.PutTask(ctx, &model.Task{
			Name:    fmt.Sprintf("bench-%d-%d", round, i),
			Trigger: model.Trigger{Type: model.TriggerEvent},
			Action:  model.Action{Type: model.ActionShell, Command: "true"},
			Labels:  map[string]string{"bench": strconv.Itoa(round)},
		})
		return err
	})
}
