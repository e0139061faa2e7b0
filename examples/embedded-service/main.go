// Command embedded-service is a runnable example of a Go service that is
// itself an ax node (package embed; seed 000's embedded kernel): three
// replicas of it form a cluster, and the service's own function runs the
// "reconcile" task every second, once per second whatever replica dies.
// Its flags are ax agent's, exactly (it hands them to embed.Start):
//
//	go run ./examples/embedded-service -node s1 -data /tmp/s1 -http 127.0.0.1:7070 -raft 127.0.0.1:7071
//	go run ./examples/embedded-service -node s2 -data /tmp/s2 -http 127.0.0.1:7080 -raft 127.0.0.1:7081 -join 127.0.0.1:7070
//	go run ./examples/embedded-service -node s3 -data /tmp/s3 -http 127.0.0.1:7090 -raft 127.0.0.1:7091 -join 127.0.0.1:7070
//	ax instance list -task reconcile
//
// EMBEDDED_LEDGER names a file each run appends "<instance id> <attempt>
// <scheduled time> <node>" to (for tests).
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/ax-scheduler/ax/embed"
	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/worker"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "embedded-service:", err)
		os.Exit(1)
	}
}

func run() error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	node, err := embed.Start(ctx, embed.Config{Args: os.Args[1:]})
	if err != nil {
		return err
	}
	// The service's work: a handler, registered before its task exists.
	if err := node.Handle("reconcile", reconcile(node.Addr())); err != nil {
		return err
	}
	// Every replica writes the same definition: the first write creates
	// it, the others change nothing (an equal put is not a new version).
	task := &model.Task{Name: "reconcile", Trigger: model.Trigger{Type: model.TriggerInterval, Every: model.Duration(time.Second)},
		Action: model.Action{Type: model.ActionSDK, Handler: "reconcile"}, Policy: model.Policy{MaxRetries: 3}}
	for {
		pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		_, err := node.Client().PutTask(pctx, task)
		cancel()
		if err == nil || ctx.Err() != nil {
			break
		}
		time.Sleep(time.Second) // no leader yet: a joining replica waits for its cluster
	}
	<-ctx.Done()
	cctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	return node.Close(cctx)
}

// reconcile is the service's function the task runs: here it logs, and
// appends to $EMBEDDED_LEDGER.
func reconcile(node string) worker.Handler {
	ledger := os.Getenv("EMBEDDED_LEDGER")
	return func(ctx context.Context, job worker.Job) error {
		fmt.Fprintf(worker.Output(ctx), "reconciled for %s on %s\n", job.ScheduledAt.UTC().Format(time.RFC3339), node)
		if ledger == "" {
			return nil
		}
		f, err := os.OpenFile(ledger, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = fmt.Fprintf(f, "%s %d %d %s\n", job.InstanceID, job.Attempt, job.ScheduledAt.UnixMilli(), node)
		return err
	}
}
