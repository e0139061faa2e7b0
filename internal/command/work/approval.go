package work

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/ax-scheduler/ax/internal/command"

	"github.com/ax-scheduler/ax/internal/follow"
	"github.com/ax-scheduler/ax/worker"
)

// ApprovalUsage is the help of ax approval and of approval request.
const ApprovalUsage = `
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
	command.ClientBase
	summary string
}

// NewApprovalRequest makes ax approval request.
func NewApprovalRequest(io *command.IO) command.Command {
	c := &approvalRequestCmd{}
	c.Init(io, "approval request", ApprovalUsage)
	c.FS.StringVar(&c.summary, "summary", "", "what the operator approves")
	return c
}

func (c *approvalRequestCmd) Run(ctx context.Context, args []string) error {
	if err := c.FS.Parse(args); err != nil {
		return err
	}
	id, attempt := c.IO.Getenv("AX_INSTANCE_ID"), c.IO.Getenv("AX_ATTEMPT")
	if id == "" || attempt == "" {
		return fmt.Errorf("approval request: AX_INSTANCE_ID and AX_ATTEMPT are not set: run it from a task's command")
	}
	n, err := strconv.Atoi(attempt)
	if err != nil || n < 1 {
		return fmt.Errorf("approval request: bad AX_ATTEMPT %q", attempt)
	}
	lease := 10 * time.Second
	if ms, err := strconv.ParseInt(c.IO.Getenv("AX_LEASE_MS"), 10, 64); err == nil && ms > 0 {
		lease = time.Duration(ms) * time.Millisecond
	}
	cl, err := c.CF.Client()
	if err != nil {
		return err
	}
	rctx, cancel := context.WithTimeout(ctx, lease)
	_, err = worker.NewProtocol(cl).RequestApproval(rctx, id, n, c.summary)
	cancel()
	if err != nil {
		return err
	}
	fmt.Fprintf(c.IO.Stderr, "waiting for approval of %s (ax instance approve %s)\n", id, id)
	approved, err := follow.Decision(ctx, cl, id, n, lease, c.IO.Stderr)
	if err != nil {
		return err
	}
	if !approved {
		return command.ExitStatus(1) // rejected: said on stderr
	}
	return nil
}
