package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/ax-scheduler/ax/client"
	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/worker"
)

// approvalUsage is the help of ax approval and of approval request.
const approvalUsage = `
Usage: ax approval request -summary TEXT

Run from inside a task's shell command: asks an operator to approve the
running attempt and blocks until they decide. Exits 0 when approved, 1 when
rejected (or the instance canceled). It also gives up (exit 1) once its
attempt is over (stopped, terminated, lost), at once if the cluster
refuses its token, or once the cluster has been out of reach for longer
than the lease, so that it never outlives the work that asked. Uses
$AX_INSTANCE_ID, $AX_ATTEMPT, $AX_ADDR, $AX_TOKEN, $AX_CACERT (TLS) and
$AX_LEASE_MS, which the executor sets: the executor's own token is
enough, an executor token reading the decision on its own attempt only
(GET /v1/instances/ID/approval?attempt=N).

Example (in a task command):
	./migrate --plan > plan.txt && ax approval request -summary "$(cat plan.txt)" && ./migrate --apply
`

// approvalRequestCmd is ax approval request.
type approvalRequestCmd struct {
	clientBase
	summary string
}

func newApprovalRequestCmd(m *Main) command {
	c := &approvalRequestCmd{}
	c.init(m, "approval request", approvalUsage)
	c.fs.StringVar(&c.summary, "summary", "", "what the operator approves")
	return c
}

func (c *approvalRequestCmd) Run(ctx context.Context, args []string) error {
	if err := c.fs.Parse(args); err != nil {
		return err
	}
	id, attempt := c.m.Getenv("AX_INSTANCE_ID"), c.m.Getenv("AX_ATTEMPT")
	if id == "" || attempt == "" {
		return fmt.Errorf("approval request: AX_INSTANCE_ID and AX_ATTEMPT are not set: run it from a task's command")
	}
	n, err := strconv.Atoi(attempt)
	if err != nil || n < 1 {
		return fmt.Errorf("approval request: bad AX_ATTEMPT %q", attempt)
	}
	lease := 10 * time.Second
	if ms, err := strconv.ParseInt(c.m.Getenv("AX_LEASE_MS"), 10, 64); err == nil && ms > 0 {
		lease = time.Duration(ms) * time.Millisecond
	}
	cl, err := c.cf.client()
	if err != nil {
		return err
	}
	rctx, cancel := context.WithTimeout(ctx, lease)
	_, err = worker.NewProtocol(cl).RequestApproval(rctx, id, n, c.summary)
	cancel()
	if err != nil {
		return err
	}
	fmt.Fprintf(c.m.Stderr, "waiting for approval of %s (ax instance approve %s)\n", id, id)
	approved, err := awaitDecision(ctx, cl, id, n, lease, c.m.Stderr)
	if err != nil {
		return err
	}
	if !approved {
		return exitStatus(1) // rejected: said on stderr
	}
	return nil
}

// awaitDecision polls the approval status of attempt n of instance id
// until an operator decides (true: approved). It fails once the attempt
// is over, at once when the cluster refuses the credentials, and once the
// cluster has not answered for longer than lease. A cluster older than
// the approval-status endpoint (405) is polled for the instance instead,
// which needs a reader token. The decision is reported on w.
func awaitDecision(ctx context.Context, cl *client.Client, id string, n int, lease time.Duration, w io.Writer) (bool, error) {
	p := worker.NewProtocol(cl)
	heard, legacy := time.Now(), false
	for {
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-time.After(min(500*time.Millisecond, lease/4)):
		}
		gctx, cancel := context.WithTimeout(ctx, lease/2)
		st, err := decisionOf(gctx, p, cl, id, n, legacy)
		cancel()
		var me *model.Error
		switch {
		case errors.As(err, &me) && me.Code == codeMethodNotAllowed && !legacy:
			legacy = true
			continue
		case errors.Is(err, model.ErrNotFound):
			return false, fmt.Errorf("approval request: instance %s is gone: %w", id, err)
		case errors.As(err, &me) && (me.Code == model.CodeUnauthorized || me.Code == model.CodeForbidden):
			return false, fmt.Errorf("approval request: %w", err)
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
		by := ""
		if st.By != "" {
			by = " by " + st.By
		}
		if st.Comment != "" {
			by += ": " + st.Comment
		}
		switch st.Decision {
		case model.ApprovalPending:
		case model.ApprovalApproved:
			fmt.Fprintf(w, "approved%s\n", by)
			return true, nil
		case model.ApprovalRejected:
			fmt.Fprintf(w, "rejected%s (instance is %s)\n", by, st.State)
			return false, nil
		default:
			return false, fmt.Errorf("approval request: attempt %d is over (instance %s is %s, attempt %d)", n, id, st.State, st.CurrentAttempt)
		}
	}
}

// codeMethodNotAllowed is the error code of a 405: a node older than the
// approval-status endpoint answers its GET so (the path takes POST).
const codeMethodNotAllowed = "method_not_allowed"

// decisionOf reads where the approval request of attempt n of instance id
// stands: from the approval-status endpoint, or (legacy) from the
// instance.
func decisionOf(ctx context.Context, p *worker.Protocol, cl *client.Client, id string, n int, legacy bool) (*model.ApprovalStatus, error) {
	if !legacy {
		return p.ApprovalStatus(ctx, id, n)
	}
	in, err := cl.GetInstance(ctx, id, client.Consistent())
	if err != nil {
		return nil, err
	}
	st := in.ApprovalOf(n)
	return &st, nil
}
