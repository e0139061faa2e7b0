package agent

import (
	"context"
	"strconv"
	"time"

	"ax/api"
	"ax/dispatch"
	"ax/fsm"
	"ax/model"
)

// InstanceChanged implements fsm.Observer.
func (a *Agent) InstanceChanged(c fsm.InstanceChange) {
	if a.metrics != nil {
		a.metrics.observe(c)
	}
	if d := a.disp.Load(); d != nil {
		d.InstanceChanged(c)
		if c.State == model.StateFailed {
			select {
			case a.alertCh <- c.ID:
			default: // the alerter's periodic rescan will find it
			}
		}
	}
}

// dispatcher returns this term's dispatcher, or nil on a follower.
func (a *Agent) dispatcher() *dispatch.Dispatcher {
	if !a.node.IsLeader() {
		return nil
	}
	return a.disp.Load()
}

// Poll implements api.Backend: the leader's dispatcher answers; a
// follower forwards to the leader.
func (a *Agent) Poll(ctx context.Context, req model.PollRequest) (*model.PollResponse, error) {
	if d := a.dispatcher(); d != nil {
		return d.Poll(ctx, req)
	}
	// A forwarded long-poll may wait its whole WaitMs at the leader.
	wait := time.Duration(req.WaitMs) * time.Millisecond
	if wait <= 0 || wait > 30*time.Second {
		wait = 20 * time.Second
	}
	fctx, cancel := context.WithTimeout(ctx, wait+10*time.Second)
	defer cancel()
	leader, err := a.execLeader(ctx)
	if err != nil {
		return nil, err
	}
	return a.clientFor(leader).Poll(fctx, req)
}

// execLeader resolves the leader for an executor-protocol call, waiting
// for one at most a lease/8 (LeaderWait if shorter): an executor lists
// several servers and would rather try another at once than wait on a
// node that knows no leader (a node cut off from the others), so such a
// node answers 503 unavailable while the executor's lease is still young.
func (a *Agent) execLeader(ctx context.Context) (string, error) {
	lease := a.cfg.Lease
	if lease <= 0 {
		lease = 10 * time.Second
	}
	wctx, cancel := context.WithTimeout(ctx, min(lease/8, a.cfg.LeaderWait))
	defer cancel()
	var leader string
	err := a.toLeader(wctx, func(l string) error { leader = l; return nil })
	if err != nil && wctx.Err() != nil && ctx.Err() == nil {
		return "", &model.Error{Code: model.CodeUnavailable, Message: "this node knows no leader; try another server"}
	}
	return leader, err
}

// Heartbeat implements api.Backend.
func (a *Agent) Heartbeat(ctx context.Context, req model.HeartbeatRequest) (*model.HeartbeatResponse, error) {
	if d := a.dispatcher(); d != nil {
		return d.Heartbeat(ctx, req)
	}
	leader, err := a.execLeader(ctx)
	if err != nil {
		return nil, err
	}
	return a.clientFor(leader).Heartbeat(ctx, req)
}

// ownAttempt checks, on the leader (whose state is current), that an
// executor-bound principal reports only on attempts leased to it: a 403
// otherwise. Instances that do not exist are left to the state machine.
func (a *Agent) ownAttempt(ctx context.Context, field string, id uint64) error {
	p := api.PrincipalFrom(ctx)
	if p == nil || p.Role != model.RoleExecutor || p.Unbound {
		return nil
	}
	if holder, _, ok := a.fsm.Holder(id); ok && holder != p.Executor {
		return &model.Error{Code: model.CodeForbidden, Field: field,
			Message: "instance " + model.FormatID(id) + " is not leased to executor " + p.Executor}
	}
	return nil
}

// Complete implements api.Backend.
func (a *Agent) Complete(ctx context.Context, c api.Caller, executionID string, req model.CompleteRequest) (string, error) {
	if d := a.dispatcher(); d != nil {
		id, _, err := dispatch.ParseExecutionID(executionID)
		if err != nil {
			return "", err
		}
		if err := a.ownAttempt(ctx, "executionId", id); err != nil {
			return "", err
		}
		return d.Complete(ctx, c.RequestID, executionID, req)
	}
	leader, err := a.execLeader(ctx)
	if err != nil {
		return "", err
	}
	return a.clientFor(leader).Complete(ctx, executionID, req)
}

// CompleteBatch implements api.Backend.
func (a *Agent) CompleteBatch(ctx context.Context, c api.Caller, items []model.CompleteItem) ([]model.CompleteOutcome, error) {
	if d := a.dispatcher(); d != nil {
		for i, it := range items {
			if id, _, err := dispatch.ParseExecutionID(it.ExecutionID); err == nil {
				if err := a.ownAttempt(ctx, "["+strconv.Itoa(i)+"].executionId", id); err != nil {
					return nil, err
				}
			}
		}
		return d.CompleteBatch(ctx, c.RequestID, items)
	}
	leader, err := a.execLeader(ctx)
	if err != nil {
		return nil, err
	}
	return a.clientFor(leader).CompleteBatch(ctx, items)
}

// Decide implements api.Backend.
func (a *Agent) Decide(ctx context.Context, c api.Caller, id, action string, attempt int, comment string) (string, error) {
	n, err := model.ParseID(id)
	if err != nil {
		return "", err
	}
	if action == fsm.DecideRequestApproval {
		// Only the executor running the attempt may ask. The command is
		// forwarded without its principal, so this node checks, once its
		// state is current.
		if !a.node.IsLeader() {
			if err := a.ReadBarrier(ctx); err != nil {
				return "", err
			}
		}
		if err := a.ownAttempt(ctx, "id", n); err != nil {
			return "", err
		}
	}
	var out struct {
		State string `json:"state"`
	}
	if err := a.command(ctx, c, fsm.CmdDecide, fsm.Decide{ID: n, Action: action, Attempt: attempt, Comment: comment}, &out); err != nil {
		return "", err
	}
	return out.State, nil
}

// InstanceLog implements api.Backend: a running attempt's output lives on
// the leader (streamed with heartbeats); an ended one's tail is committed.
func (a *Agent) InstanceLog(ctx context.Context, id string, offset int64) (*model.InstanceLog, error) {
	n, err := model.ParseID(id)
	if err != nil {
		return nil, err
	}
	l, err := a.fsm.Log(n)
	if err != nil {
		return nil, err
	}
	running := l.State == model.StateRunning || l.State == model.StateWaitingApproval
	if !running {
		if offset > 0 && offset <= int64(len(l.Output)) {
			l.Output = l.Output[offset:]
			l.Offset = offset
		}
		return l, nil
	}
	if d := a.dispatcher(); d != nil {
		if att, start, out, ok := d.Live(n, offset); ok && att == l.Attempt {
			l.Live, l.Offset, l.Output = true, start, out
		} else {
			l.Live, l.Offset = true, offset
		}
		return l, nil
	}
	var out *model.InstanceLog
	err = a.toLeader(ctx, func(leader string) (err error) {
		out, err = a.clientFor(leader).InstanceLog(ctx, id, offset)
		return err
	})
	return out, err
}
