package agent

import (
	"context"

	"ax/api"
	"ax/fsm"
	"ax/model"
)

func (a *Agent) command(ctx context.Context, c api.Caller, t fsm.CommandType, body any, out any) error {
	cmd, err := fsm.NewCommand(t, c.RequestID, c.Actor, body)
	if err != nil {
		return err
	}
	res, err := a.propose(ctx, cmd)
	if err != nil {
		return err
	}
	return res.Decode(out)
}

// Submit implements api.Backend.
func (a *Agent) Submit(ctx context.Context, c api.Caller, task string, reqs []model.SubmitRequest) (*model.SubmitResult, error) {
	s := fsm.Submit{Task: task, Items: make([]fsm.SubmitItem, len(reqs))}
	for i, r := range reqs {
		it := fsm.SubmitItem{Payload: r.Payload, DelayMs: r.Delay.Std().Milliseconds(), Key: r.IdempotencyKey}
		if r.At != nil {
			it.AtMs = r.At.Millis()
		}
		s.Items[i] = it
	}
	cmd := &fsm.Command{Type: fsm.CmdSubmit, ReqID: c.RequestID, Actor: c.Actor, Body: fsm.EncodeSubmit(&s)}
	res, err := a.propose(ctx, cmd)
	if err != nil {
		return nil, err
	}
	return fsm.DecodeSubmitResult(res)
}

// Trigger implements api.Backend.
func (a *Agent) Trigger(ctx context.Context, c api.Caller, task string, req model.TriggerRequest) (*model.Submitted, error) {
	var out model.Submitted
	if err := a.command(ctx, c, fsm.CmdTrigger, fsm.Trigger{Task: task, Params: req.Params, Key: req.IdempotencyKey}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// GetInstance implements api.Backend.
func (a *Agent) GetInstance(ctx context.Context, id string) (*model.Instance, error) {
	n, err := model.ParseID(id)
	if err != nil {
		return nil, err
	}
	return a.fsm.GetInstance(n)
}

// ListInstances implements api.Backend.
func (a *Agent) ListInstances(ctx context.Context, f model.InstanceFilter) (*model.InstanceList, error) {
	return a.fsm.ListInstances(f)
}

// TaskEvents implements api.Backend.
func (a *Agent) TaskEvents(ctx context.Context, name string) (*model.TaskEvents, error) {
	return a.fsm.TaskEvents(name)
}
