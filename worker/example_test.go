package worker_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"os/signal"
	"syscall"

	"github.com/ax-scheduler/ax/worker"
)

// An executor in your own program: it runs the "charge" handler of tasks
// whose action is {"type": "sdk", "handler": "charge"}. What the handler
// writes to worker.Output(ctx) is the attempt's log (ax instance log ID).
// An error fails the attempt, retried by the task's policy unless it
// wraps worker.ErrPermanent.
func Example() {
	w, err := worker.New(worker.Config{
		Servers:  []string{"127.0.0.1:7070", "127.0.0.1:7080"}, // any nodes
		Name:     "billing-1",
		Capacity: 8,
		Handlers: map[string]worker.Handler{
			"charge": func(ctx context.Context, job worker.Job) error {
				var p struct {
					Amount int `json:"amount"`
				}
				if err := json.Unmarshal(job.Payload, &p); err != nil {
					return fmt.Errorf("bad payload: %w", worker.ErrPermanent)
				}
				fmt.Fprintf(worker.Output(ctx), "charging %d (attempt %d)\n", p.Amount, job.Attempt)
				return nil // charged
			},
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	// SIGTERM: no new work; running attempts get Config.ShutdownGrace.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	if err := w.Run(ctx); err != nil {
		log.Fatal(err)
	}
}

// A handler's log: Output(ctx) is kept with the attempt (its last 64 KiB)
// and streamed while it runs, like a shell action's stdout and stderr,
// also when the handler fails. Outside a handler it discards what it is
// given.
func ExampleOutput() {
	export := func(ctx context.Context, job worker.Job) error {
		out := worker.Output(ctx)
		for _, table := range []string{"orders", "payments"} {
			fmt.Fprintln(out, "exporting", table, "for", job.ScheduledAt.Format("2006-01-02"))
		}
		return nil
	}
	// Called directly (not by a Worker) it still runs; its log goes
	// nowhere.
	err := export(context.Background(), worker.Job{})
	fmt.Println(err)
	// Output: <nil>
}

// Mark an error as not worth retrying.
func ExamplePermanent() {
	err := worker.Permanent(fmt.Errorf("order %d does not exist", 42))
	fmt.Println(err, errors.Is(err, worker.ErrPermanent))
	// Output: order 42 does not exist true
}
