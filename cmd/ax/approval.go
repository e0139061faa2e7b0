package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/ax-scheduler/ax/client"
	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/worker"
)

type approvalCommand struct{}

func (*approvalCommand) Usage() string {
	return `
Usage: ax approval request -summary TEXT

Run from inside a task's shell command: asks an operator to approve the
running attempt and blocks until they decide. Exits 0 when approved, 1 when
rejected. It also gives up (exit 1) once its attempt is over (stopped,
terminated, lost) or the cluster has been out of reach for longer than the
lease, so that it never outlives the work that asked. Uses
$AX_INSTANCE_ID, $AX_ATTEMPT, $AX_ADDR, $AX_TOKEN and $AX_LEASE_MS, which
the executor sets.

Example (in a task command):
	./migrate --plan > plan.txt && ax approval request -summary "$(cat plan.txt)" && ./migrate --apply
`
}

func (c *approvalCommand) Run(ctx context.Context, args []string) error {
	if len(args) == 0 || args[0] != "request" {
		fmt.Fprint(os.Stderr, strings.TrimLeft(c.Usage(), "\n"))
		return fmt.Errorf("approval: want the subcommand request")
	}
	fs := newFlagSet("approval request", c.Usage())
	var cf clientFlags
	cf.register(fs)
	summary := fs.String("summary", "", "what the operator approves")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	id, attempt := os.Getenv("AX_INSTANCE_ID"), os.Getenv("AX_ATTEMPT")
	if id == "" || attempt == "" {
		return fmt.Errorf("approval request: AX_INSTANCE_ID and AX_ATTEMPT are not set: run it from a task's command")
	}
	n, err := strconv.Atoi(attempt)
	if err != nil || n < 1 {
		return fmt.Errorf("approval request: bad AX_ATTEMPT %q", attempt)
	}
	lease := 10 * time.Second
	if ms, err := strconv.ParseInt(os.Getenv("AX_LEASE_MS"), 10, 64); err == nil && ms > 0 {
		lease = time.Duration(ms) * time.Millisecond
	}
	cl, err := cf.client()
	if err != nil {
		return err
	}
	rctx, cancel := context.WithTimeout(ctx, lease)
	_, err = worker.NewProtocol(cl).RequestApproval(rctx, id, n, *summary)
	cancel()
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "waiting for approval of %s (ax instance approve %s)\n", id, id)
	approved, err := awaitDecision(ctx, cl, id, n, lease)
	if err != nil {
		return err
	}
	if !approved {
		os.Exit(1)
	}
	fmt.Fprintln(os.Stderr, "approved")
	return nil
}

// awaitDecision polls instance id until an operator decides on attempt n
// (true: approved). It fails once the attempt is over or the cluster has
// not answered for longer than lease.
func awaitDecision(ctx context.Context, cl *client.Client, id string, n int, lease time.Duration) (bool, error) {
	heard := time.Now()
	for {
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-time.After(min(500*time.Millisecond, lease/4)):
		}
		gctx, cancel := context.WithTimeout(ctx, lease/2)
		in, err := cl.GetInstance(gctx, id)
		cancel()
		switch {
		case errors.Is(err, model.ErrNotFound):
			return false, fmt.Errorf("approval request: instance %s is gone", id)
		case err != nil:
			if ctx.Err() != nil {
				return false, ctx.Err()
			}
			if time.Since(heard) > lease {
				return false, fmt.Errorf("approval request: giving up: no answer from the cluster for %s (the lease): %w", lease, err)
			}
			continue
		}
		heard = time.Now()
		if in.Attempts != n {
			return false, fmt.Errorf("approval request: attempt %d is over (instance %s is %s, attempt %d)", n, id, in.State, in.Attempts)
		}
		switch in.State {
		case model.StateWaitingApproval:
		case model.StateRunning:
			return true, nil
		case model.StateCanceled:
			fmt.Fprintf(os.Stderr, "rejected (instance is %s)\n", in.State)
			return false, nil
		default:
			return false, fmt.Errorf("approval request: attempt %d is over (instance %s is %s)", n, id, in.State)
		}
	}
}
