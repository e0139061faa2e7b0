package tasks

import (
	"context"
	"time"

	"github.com/ax-scheduler/ax/api"
	"github.com/ax-scheduler/ax/client"
	"github.com/ax-scheduler/ax/fsm"
	"github.com/ax-scheduler/ax/fsm/command"
	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/replica"
	"github.com/ax-scheduler/ax/tracing"
	"github.com/ax-scheduler/ax/trigger"
)

// Submit implements api.InstanceBackend.
func (ts *Tasks) Submit(ctx context.Context, c api.Caller, task string, reqs []model.SubmitRequest) (*model.SubmitResult, error) {
	s := command.Submit{Task: task, Items: make([]command.SubmitItem, len(reqs))}
	for i, r := range reqs {
		it := command.SubmitItem{Payload: r.Payload, DelayMs: r.Delay.Std().Milliseconds(), Key: r.IdempotencyKey}
		if r.At != nil {
			it.AtMs = r.At.Millis()
		}
		s.Items[i] = it
	}
	s.Link = ts.link(c)
	cmd := &command.Command{Type: command.TypeSubmit, ReqID: c.RequestID, Actor: c.Actor, Body: command.EncodeSubmit(&s)}
	res, err := ts.rep.Propose(ctx, cmd)
	if err != nil {
		return nil, err
	}
	return fsm.DecodeSubmitResult(res)
}

// Trigger implements api.InstanceBackend.
func (ts *Tasks) Trigger(ctx context.Context, c api.Caller, task string, req model.TriggerRequest) (*model.Submitted, error) {
	// The leader stamps its business date (see stamp).
	tr := command.Trigger{Task: task, Params: req.Params, Key: req.IdempotencyKey, Link: ts.link(c)}
	var out model.Submitted
	if err := replica.Write(ctx, ts.rep, c, command.TypeTrigger, tr, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// link is the trace a caller's new instances link to: its valid
// traceparent (nil without one; an invalid one is ignored, as W3C Trace
// Context says). It is recorded whether this node traces or not: the
// node that takes the request need not be the one that leads when the
// instance ends and its root span is sent.
func (ts *Tasks) link(c api.Caller) []byte {
	if c.Traceparent == "" {
		return nil
	}
	return tracing.Pack(c.Traceparent)
}

// GetInstance implements api.InstanceBackend; an unfinished instance says why
// it waits (why.go); a scheduled one names its dependsOn lineage.
func (ts *Tasks) GetInstance(ctx context.Context, id string) (*model.Instance, error) {
	n, err := model.ParseID(id)
	if err != nil {
		return nil, err
	}
	in, err := ts.state.GetInstance(n)
	if err != nil {
		return nil, err
	}
	switch in.State {
	case model.StateSuccess, model.StateFailed, model.StateTerminated, model.StateSkipped, model.StateCanceled:
	default:
		in.Why = ts.why(ctx, n)
	}
	// What dependsOn links to it for its date (the instance page's lineage).
	if in.Lineage, err = ts.state.InstanceLineage(n); err != nil {
		return nil, err
	}
	return in, nil
}

// Shards implements api.InstanceBackend.
func (ts *Tasks) Shards(ctx context.Context, id string) (*model.ShardList, error) {
	n, err := model.ParseID(id)
	if err != nil {
		return nil, err
	}
	in, err := ts.state.GetInstance(n)
	if err != nil {
		return nil, err
	}
	shards, err := ts.state.Shards(n)
	if err != nil {
		return nil, err
	}
	if shards == nil {
		shards = []model.Instance{}
	}
	return &model.ShardList{Instance: in.ID, Summary: in.Shards, Shards: shards}, nil
}

// ListInstances implements api.InstanceBackend.
func (ts *Tasks) ListInstances(ctx context.Context, f model.InstanceFilter) (*model.InstanceList, error) {
	return ts.state.ListInstances(f)
}

// TaskEvents implements api.TaskBackend.
func (ts *Tasks) TaskEvents(ctx context.Context, name string) (*model.TaskEvents, error) {
	return ts.state.TaskEvents(name)
}

// Backfill implements api.InstanceBackend. The leader plans it (the task's fire
// times in the range and their idempotency keys) and the state machine
// creates only the times that have no instance yet.
func (ts *Tasks) Backfill(ctx context.Context, c api.Caller, task string, req model.BackfillRequest) (*model.BackfillResult, error) {
	return replica.Ask[*model.BackfillResult](ctx, ts.rep, replica.Call{ReqID: c.RequestID},
		func(ctx context.Context, _ *replica.Term) (*model.BackfillResult, error) {
			return ts.backfill(ctx, c, task, req)
		},
		func(ctx context.Context, cl *client.Client) (*model.BackfillResult, error) {
			return cl.Backfill(ctx, task, req)
		})
}

// backfill plans a backfill on the leader.
func (ts *Tasks) backfill(ctx context.Context, c api.Caller, task string, req model.BackfillRequest) (*model.BackfillResult, error) {
	t, err := ts.state.GetTask(task)
	if err != nil {
		return nil, err
	}
	sc, err := t.Schedule()
	if err != nil {
		return nil, err
	}
	if sc == nil {
		return nil, model.FieldErrorf("name", "task %s has an event trigger: it has no fire times to backfill", task)
	}
	if req.To.After(ts.cfg.Clock.Now()) {
		return nil, model.FieldErrorf("to", "%s is in the future (leader time); backfill covers past fire times", req.To.Format(model.TimeLayout))
	}
	times := trigger.Between(sc, req.From.Add(-time.Millisecond), req.To.Time, model.MaxBackfill+1)
	if len(times) > model.MaxBackfill {
		return nil, model.FieldErrorf("to", "the range holds more than %d fire times; split it", model.MaxBackfill)
	}
	keys := t.FireKeys()
	b := command.Backfill{Task: task, Version: t.Version}
	for _, at := range times {
		b.At = append(b.At, at.UnixMilli())
		b.Keys = append(b.Keys, keys.Key(at))
		b.Dates = append(b.Dates, keys.Date(at))
	}
	var out model.BackfillResult
	if err := replica.Write(ctx, ts.rep, c, command.TypeBackfill, b, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Decide implements api.InstanceBackend.
func (ts *Tasks) Decide(ctx context.Context, c api.Caller, id, action string, attempt int, comment string) (string, error) {
	n, err := model.ParseID(id)
	if err != nil {
		return "", err
	}
	if action == command.DecideRequestApproval {
		// Only the executor running the attempt may ask. The command is
		// forwarded without its principal, so this node checks, once its
		// state is current.
		if !ts.rep.IsLeader() {
			if err := ts.rep.ReadBarrier(ctx); err != nil {
				return "", err
			}
		}
		if err := ts.cfg.OwnAttempt(ctx, "id", n); err != nil {
			return "", err
		}
	}
	var out struct {
		State string `json:"state"`
	}
	if err := replica.Write(ctx, ts.rep, c, command.TypeDecide, command.Decide{ID: n, Action: action, Attempt: attempt, Comment: comment}, &out); err != nil {
		return "", err
	}
	return out.State, nil
}

// Rerun implements api.InstanceBackend.
func (ts *Tasks) Rerun(ctx context.Context, c api.Caller, id string) (*model.Submitted, error) {
	n, err := model.ParseID(id)
	if err != nil {
		return nil, err
	}
	var out model.Submitted
	if err := replica.Write(ctx, ts.rep, c, command.TypeRerun, command.Rerun{IDs: []uint64{n}, HoldMs: ts.cfg.StopHold.Milliseconds()}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// RerunTask implements api.InstanceBackend. The leader plans it (the
// task's finished instances in the range and states) and the state
// machine re-runs those still finished in those states.
func (ts *Tasks) RerunTask(ctx context.Context, c api.Caller, task string, req model.RerunRequest) (*model.RerunResult, error) {
	return replica.Ask[*model.RerunResult](ctx, ts.rep, replica.Call{ReqID: c.RequestID},
		func(ctx context.Context, _ *replica.Term) (*model.RerunResult, error) {
			if _, err := ts.state.GetTask(task); err != nil {
				return nil, err
			}
			ids, err := ts.state.FinishedIn(task, req.From.Millis(), req.To.Millis(), req.States, model.MaxBackfill)
			if err != nil {
				return nil, err
			}
			if len(ids) > model.MaxBackfill {
				return nil, model.FieldErrorf("to", "the range holds more than %d instances to re-run; split it", model.MaxBackfill)
			}
			var out model.RerunResult
			b := command.Rerun{Task: task, IDs: ids, States: req.States, HoldMs: ts.cfg.StopHold.Milliseconds()}
			err = replica.Write(ctx, ts.rep, c, command.TypeRerun, b, &out)
			return &out, err
		},
		func(ctx context.Context, cl *client.Client) (*model.RerunResult, error) {
			return cl.RerunTask(ctx, task, req)
		})
}

// InstanceResult implements api.InstanceBackend: the result is in the
// replicated state (read locally, or after a read barrier with
// ?consistent=true).
func (ts *Tasks) InstanceResult(ctx context.Context, id string) (*model.InstanceResult, error) {
	n, err := model.ParseID(id)
	if err != nil {
		return nil, err
	}
	return ts.state.InstanceResult(n)
}

// InstanceLog implements api.InstanceBackend: a running attempt's output lives on
// the leader (streamed with heartbeats); an ended one's tail is committed.
func (ts *Tasks) InstanceLog(ctx context.Context, id string, offset int64) (*model.InstanceLog, error) {
	n, err := model.ParseID(id)
	if err != nil {
		return nil, err
	}
	l, err := ts.state.Log(n)
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
	return replica.Ask[*model.InstanceLog](ctx, ts.rep, replica.Call{},
		func(ctx context.Context, t *replica.Term) (*model.InstanceLog, error) {
			if att, start, live, ok := ts.cfg.Live(t, n, offset); ok && att == l.Attempt {
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
