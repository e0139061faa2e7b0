package follow

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/ax-scheduler/ax/client"
	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/model/approval"
	"github.com/ax-scheduler/ax/worker"
)

// Decision polls the approval status of attempt n of instance id
// until an operator decides (true: approved). It fails once the attempt
// is over, at once when the cluster refuses the credentials, and once the
// cluster has not answered for longer than lease. A cluster older than
// the approval-status endpoint (405) is polled for the instance instead,
// which needs a reader token. The decision is reported on w.
func Decision(ctx context.Context, cl *client.Client, id string, n int, lease time.Duration, w io.Writer) (bool, error) {
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
		case approval.Pending:
		case approval.Approved:
			fmt.Fprintf(w, "approved%s\n", by)
			return true, nil
		case approval.Rejected:
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
func decisionOf(ctx context.Context, p *worker.Protocol, cl *client.Client, id string, n int, legacy bool) (*approval.Status, error) {
	if !legacy {
		return p.ApprovalStatus(ctx, id, n)
	}
	in, err := cl.GetInstance(ctx, id, client.Consistent())
	if err != nil {
		return nil, err
	}
	st := approval.Of(in, n)
	return &st, nil
}
