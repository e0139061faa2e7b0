// Command sdk-worker is a runnable example of an ax executor written with
// the Go SDK: it serves the "greet" and "charge" handlers for tasks whose
// action is {"type": "sdk", "handler": "greet"} (or "charge").
//
//	go run ./examples/sdk-worker -server 127.0.0.1:7070
//	echo '{"name":"greet","trigger":{"type":"event"},"action":{"type":"sdk","handler":"greet"}}' | ax task apply -f -
//	ax trigger greet -p who=world
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

	"github.com/ax-scheduler/ax/client"
)

func main() {
	servers := flag.String("server", "127.0.0.1:7070", "agent HTTP address(es), comma-separated")
	name := flag.String("name", "sdk-worker", "executor name")
	ledger := flag.String("ledger", "", "append each greeting's execution id to this file (for tests)")
	flag.Parse()

	handlers := map[string]client.Handler{
		// greet prints a greeting; its output is kept with the attempt.
		"greet": func(ctx context.Context, job client.Job) error {
			who := job.Params["who"]
			if who == "" {
				who = "ax"
			}
			fmt.Printf("hello, %s (execution %s)\n", who, job.ExecutionID)
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
		// charge shows a payload and a permanent (not retried) error.
		"charge": func(ctx context.Context, job client.Job) error {
			var p struct {
				Amount int `json:"amount"`
			}
			if err := json.Unmarshal(job.Payload, &p); err != nil || p.Amount <= 0 {
				return fmt.Errorf("bad payload %s: %w", job.Payload, client.ErrPermanent)
			}
			fmt.Printf("charged %d\n", p.Amount)
			return nil
		},
	}
	w, err := client.NewWorker(client.WorkerConfig{Servers: strings.Split(*servers, ","), Name: *name, Handlers: handlers, Capacity: 8})
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
