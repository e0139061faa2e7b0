// Command sdk-worker is a runnable example of an ax executor written with
// the Go SDK (package worker): it serves the "greet" and "charge" handlers
// for tasks whose action is {"type": "sdk", "handler": "greet"} (or
// "charge"). What a handler writes to worker.Output(ctx) is the attempt's
// log, as a shell action's output is.
//
//	go run ./examples/sdk-worker -server 127.0.0.1:7070
//	echo '{"name":"greet","trigger":{"type":"event"},"action":{"type":"sdk","handler":"greet"}}' | ax task apply -f -
//	ax trigger greet -p who=world
//	ax instance log ID        # hello, world (execution ...)
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/ax-scheduler/ax/worker"
)

func main() {
	servers := flag.String("server", "127.0.0.1:7070", "agent HTTP address(es), comma-separated")
	name := flag.String("name", "sdk-worker", "executor name")
	ledger := flag.String("ledger", "", "append each greeting's execution id to this file (for tests)")
	flag.Parse()

	handlers := map[string]worker.Handler{
		// greet writes a greeting to the attempt's log (fmt.Printf would
		// go to this process's stdout, not to the attempt).
		"greet": func(ctx context.Context, job worker.Job) error {
			who := job.Params["who"]
			if who == "" {
				who = "ax"
			}
			fmt.Fprintf(worker.Output(ctx), "hello, %s (execution %s)\n", who, job.ExecutionID)
			if *ledger != "" {
				f, err := os.OpenFile(*ledger, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
				if err != nil {
					return err
				}
				defer f.Close()
				_, err = fmt.Fprintln(f, job.ExecutionID)
				return err
			}
			return nil
		},
		// charge shows a payload and a permanent (not retried) error; the
		// log of a failed attempt is kept too.
		"charge": func(ctx context.Context, job worker.Job) error {
			var p struct {
				Amount int `json:"amount"`
			}
			out := worker.Output(ctx)
			fmt.Fprintf(out, "charging payload %s\n", job.Payload)
			if err := json.Unmarshal(job.Payload, &p); err != nil || p.Amount <= 0 {
				fmt.Fprintln(out, "refusing: the amount must be a positive integer")
				return fmt.Errorf("bad payload %s: %w", job.Payload, worker.ErrPermanent)
			}
			fmt.Fprintf(out, "charged %d\n", p.Amount)
			return nil
		},
	}
	w, err := worker.New(worker.Config{Servers: strings.Split(*servers, ","), Name: *name, Handlers: handlers, Capacity: 8})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := w.Run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
