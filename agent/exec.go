package agent

import (
	"context"
	"net"
	"strconv"
	"time"

	"github.com/ax-scheduler/ax/api"
	"github.com/ax-scheduler/ax/client"
	"github.com/ax-scheduler/ax/dispatch"
	"github.com/ax-scheduler/ax/fsm"
	"github.com/ax-scheduler/ax/fsm/command"
	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/replica"
	"github.com/ax-scheduler/ax/worker"
)

// InstanceChanged implements fsm.Observer.
func (a *Agent) InstanceChanged(c fsm.InstanceChange) {
	t := a.observed()
	if a.metrics != nil {
		a.metrics.observe(&c, t != nil)
	}
	a.liveInstance(c)
	a.al.InstanceChanged(&c, t != nil)
	if t != nil {
		if c.Ended != nil {
			a.logAttempt(c)
		}
		t.disp.InstanceChanged(c)
	}
}

// logAttempt writes the leader's one line about a finished attempt.
func (a *Agent) logAttempt(c fsm.InstanceChange) {
	e := c.Ended
	args := []any{"task", c.Task, "instance", model.FormatID(c.ID), "attempt", e.Number, "executor", e.Executor,
		"duration", e.EndedAt.Sub(e.StartedAt.Time).String(), "outcome", e.Outcome, "state", c.State}
	switch {
	case e.HTTPStatus != 0:
		args = append(args, "http_status", e.HTTPStatus)
	case e.ExitCode != nil:
		args = append(args, "exit_code", *e.ExitCode)
	}
	if e.Error != "" {
		args = append(args, "error", e.Error)
	}
	a.log.Info("attempt finished", args...)
}

// Poll implements api.ExecutorBackend: the leader's dispatcher answers; another
// node forwards the poll to the leader. Within the poll's wait it follows
// leadership: a poll released by a term that ended, or parked on a leader
// that is gone, is asked again of whichever node leads now (this one
// included).
func (a *Agent) Poll(ctx context.Context, req model.PollRequest) (*model.PollResponse, error) {
	wait := time.Duration(req.WaitMs) * time.Millisecond
	if wait <= 0 || wait > 30*time.Second {
		wait = 20 * time.Second
	}
	end := time.Now().Add(wait)
	for {
		try := req
		try.WaitMs = max(time.Until(end).Milliseconds(), 1)
		out, err := // A forwarded long poll may wait its whole wait at the leader.
			replica.Ask[*model.PollResponse](ctx, a.rep, replica.Call{Deadline: end.Add(pollSlack), FindWithin: a.execFindWithin()},
				func(ctx context.Context, t *replica.Term) (*model.PollResponse, error) {
					out, err := a.enginesOf(t).disp.Poll(ctx, try)
					if err == nil && out.Released {
						// The term is ending: wait for it before asking again.
						left := time.NewTimer(time.Until(end))
						defer left.Stop()
						select {
						case <-t.Context().Done():
						case <-ctx.Done():
						case <-left.C:
						}
					}
					return out, err
				},
				func(ctx context.Context, c *client.Client) (*model.PollResponse, error) {
					return worker.NewProtocol(c).Poll(ctx, try)
				})
		// A forwarded poll goes back released: the node that forwarded it
		// finds the new leader.
		if err != nil || !out.Released || api.IsForwarded(ctx) || time.Until(end) < pollSlack/10 || ctx.Err() != nil {
			return out, err
		}
	}
}

// pollSlack is how much longer than its wait a forwarded poll may take.
const pollSlack = 2 * time.Second

// Heartbeat implements api.ExecutorBackend.
func (a *Agent) Heartbeat(ctx context.Context, req model.HeartbeatRequest) (*model.HeartbeatResponse, error) {
	return replica.Ask[*model.HeartbeatResponse](ctx, a.rep, replica.Call{FindWithin: a.execFindWithin()},
		func(ctx context.Context, t *replica.Term) (*model.HeartbeatResponse, error) {
			return a.enginesOf(t).disp.Heartbeat(ctx, req)
		},
		func(ctx context.Context, c *client.Client) (*model.HeartbeatResponse, error) {
			return worker.NewProtocol(c).Heartbeat(ctx, req)
		})
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

// Complete implements api.ExecutorBackend.
func (a *Agent) Complete(ctx context.Context, c api.Caller, executionID string, req model.CompleteRequest) (string, error) {
	return replica.Ask[string](ctx, a.rep, replica.Call{FindWithin: a.execFindWithin(), ReqID: c.RequestID},
		func(ctx context.Context, t *replica.Term) (string, error) {
			id, _, err := dispatch.ParseExecutionID(executionID)
			if err != nil {
				return "", err
			}
			if err := a.ownAttempt(ctx, "executionId", id); err != nil {
				return "", err
			}
			return a.enginesOf(t).disp.Complete(ctx, c.RequestID, executionID, req)
		},
		func(ctx context.Context, cl *client.Client) (string, error) {
			return worker.NewProtocol(cl).Complete(ctx, executionID, req)
		})
}

// CompleteBatch implements api.ExecutorBackend.
func (a *Agent) CompleteBatch(ctx context.Context, c api.Caller, items []model.CompleteItem) ([]model.CompleteOutcome, error) {
	return replica.Ask[[]model.CompleteOutcome](ctx, a.rep, replica.Call{FindWithin: a.execFindWithin(), ReqID: c.RequestID},
		func(ctx context.Context, t *replica.Term) ([]model.CompleteOutcome, error) {
			for i, it := range items {
				if id, _, err := dispatch.ParseExecutionID(it.ExecutionID); err == nil {
					if err := a.ownAttempt(ctx, "["+strconv.Itoa(i)+"].executionId", id); err != nil {
						return nil, err
					}
				}
			}
			return a.enginesOf(t).disp.CompleteBatch(ctx, c.RequestID, items)
		},
		func(ctx context.Context, cl *client.Client) ([]model.CompleteOutcome, error) {
			return worker.NewProtocol(cl).CompleteBatch(ctx, items)
		})
}

// Decide implements api.InstanceBackend.
func (a *Agent) Decide(ctx context.Context, c api.Caller, id, action string, attempt int, comment string) (string, error) {
	n, err := model.ParseID(id)
	if err != nil {
		return "", err
	}
	if action == command.DecideRequestApproval {
		// Only the executor running the attempt may ask. The command is
		// forwarded without its principal, so this node checks, once its
		// state is current.
		if !a.node.IsLeader() {
			if err := a.rep.ReadBarrier(ctx); err != nil {
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
	if err := a.command(ctx, c, command.TypeDecide, command.Decide{ID: n, Action: action, Attempt: attempt, Comment: comment}, &out); err != nil {
		return "", err
	}
	return out.State, nil
}

// InstanceLog implements api.InstanceBackend: a running attempt's output lives on
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
	return replica.Ask[*model.InstanceLog](ctx, a.rep, replica.Call{},
		func(ctx context.Context, t *replica.Term) (*model.InstanceLog, error) {
			if att, start, live, ok := a.enginesOf(t).disp.Live(n, offset); ok && att == l.Attempt {
				l.Live, l.Offset, l.Output = true, start, live
			} else {
				l.Live, l.Offset = true, offset
			}
			return l, nil
		},
		func(ctx context.Context, c *client.Client) (*model.InstanceLog, error) {
			return c.InstanceLog(ctx, id, offset)
		})
}

// execFindWithin is how long an executor-protocol call waits to learn a
// leader: a lease/8 (the leader wait if shorter). An executor lists
// several servers and would rather try another at once than wait on a
// node that knows no leader (one cut off from the others).
func (a *Agent) execFindWithin() time.Duration {
	lease := a.cfg.Lease
	if lease <= 0 {
		lease = 10 * time.Second
	}
	return min(lease/8, a.cfg.LeaderWait)
}

// loopbackFor is a listen address as a process on this host dials it: a
// wildcard IP (0.0.0.0, ::) becomes 127.0.0.1. The embedded executor
// dials its node so, and hands the address to its shell tasks as AX_ADDR,
// where `ax approval request` verifies the node's TLS certificate against
// it: the certificate names 127.0.0.1, not a wildcard.
func loopbackFor(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if ip := net.ParseIP(host); err == nil && ip != nil && ip.IsUnspecified() {
		return net.JoinHostPort("127.0.0.1", port)
	}
	return addr
}

// Executors implements api.ExecutorBackend: the leader's dispatcher knows them; a
// follower asks the leader.
func (a *Agent) Executors(ctx context.Context) (*model.ExecutorList, error) {
	return replica.Ask[*model.ExecutorList](ctx, a.rep, replica.Call{FindWithin: replica.ReadLeaderWait, NoLeader: a.rep.NoLeaderRead("it cannot list the executors: only the leader hears from them")},
		func(ctx context.Context, t *replica.Term) (*model.ExecutorList, error) {
			return &model.ExecutorList{Executors: a.enginesOf(t).disp.Executors()}, nil
		},
		func(ctx context.Context, c *client.Client) (*model.ExecutorList, error) { return c.Executors(ctx) })
}
