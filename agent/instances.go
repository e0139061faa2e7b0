package agent

import (
	"context"
	"time"

	"github.com/ax-scheduler/ax/api"
	"github.com/ax-scheduler/ax/client"
	"github.com/ax-scheduler/ax/fsm"
	"github.com/ax-scheduler/ax/fsm/command"
	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/replica"
	"github.com/ax-scheduler/ax/trigger"
)

func (a *Agent) command(ctx context.Context, c api.Caller, t command.Type, body any, out any) error {
	cmd, err := command.New(t, c.RequestID, c.Actor, body)
	if err != nil {
		return err
	}
	res, err := a.rep.Propose(ctx, cmd)
	if err != nil {
		return err
	}
	return res.Decode(out)
}

// Submit implements api.InstanceBackend.
func (a *Agent) Submit(ctx context.Context, c api.Caller, task string, reqs []model.SubmitRequest) (*model.SubmitResult, error) {
	s := command.Submit{Task: task, Items: make([]command.SubmitItem, len(reqs))}
	for i, r := range reqs {
		it := command.SubmitItem{Payload: r.Payload, DelayMs: r.Delay.Std().Milliseconds(), Key: r.IdempotencyKey}
		if r.At != nil {
			it.AtMs = r.At.Millis()
		}
		s.Items[i] = it
	}
	cmd := &command.Command{Type: command.TypeSubmit, ReqID: c.RequestID, Actor: c.Actor, Body: command.EncodeSubmit(&s)}
	res, err := a.rep.Propose(ctx, cmd)
	if err != nil {
		return nil, err
	}
	return fsm.DecodeSubmitResult(res)
}

// Trigger implements api.InstanceBackend.
func (a *Agent) Trigger(ctx context.Context, c api.Caller, task string, req model.TriggerRequest) (*model.Submitted, error) {
	// The leader stamps its business date (see stamp).
	tr := command.Trigger{Task: task, Params: req.Params, Key: req.IdempotencyKey}
	var out model.Submitted
	if err := a.command(ctx, c, command.TypeTrigger, tr, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// GetInstance implements api.InstanceBackend; an unfinished instance says why
// it waits (why.go).
func (a *Agent) GetInstance(ctx context.Context, id string) (*model.Instance, error) {
	n, err := model.ParseID(id)
	if err != nil {
		return nil, err
	}
	in, err := a.fsm.GetInstance(n)
	if err != nil {
		return nil, err
	}
	switch in.State {
	case model.StateSuccess, model.StateFailed, model.StateTerminated, model.StateSkipped, model.StateCanceled:
	default:
		in.Why = a.why(ctx, n)
	}
	return in, nil
}

// ListInstances implements api.InstanceBackend.
func (a *Agent) ListInstances(ctx context.Context, f model.InstanceFilter) (*model.InstanceList, error) {
	return a.fsm.ListInstances(f)
}

// TaskEvents implements api.TaskBackend.
func (a *Agent) TaskEvents(ctx context.Context, name string) (*model.TaskEvents, error) {
	return a.fsm.TaskEvents(name)
}

// Backfill implements api.InstanceBackend. The leader plans it (the task's fire
// times in the range and their idempotency keys) and the state machine
// creates only the times that have no instance yet.
func (a *Agent) Backfill(ctx context.Context, c api.Caller, task string, req model.BackfillRequest) (*model.BackfillResult, error) {
	return replica.Ask[*model.BackfillResult](ctx, a.rep, replica.Call{ReqID: c.RequestID},
		func(ctx context.Context, _ *replica.Term) (*model.BackfillResult, error) {
			return a.backfill(ctx, c, task, req)
		},
		func(ctx context.Context, cl *client.Client) (*model.BackfillResult, error) {
			return cl.Backfill(ctx, task, req)
		})
}

// backfill plans a backfill on the leader.
func (a *Agent) backfill(ctx context.Context, c api.Caller, task string, req model.BackfillRequest) (*model.BackfillResult, error) {
	t, err := a.fsm.GetTask(task)
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
	if req.To.After(a.now()) {
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
	if err := a.command(ctx, c, command.TypeBackfill, b, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
