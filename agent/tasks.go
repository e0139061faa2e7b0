package agent

import (
	"context"

	"github.com/ax-scheduler/ax/api"
	"github.com/ax-scheduler/ax/fsm/command"
	"github.com/ax-scheduler/ax/model"
)

// write proposes a command built from a caller's request and decodes its
// result.
func (a *Agent) write(ctx context.Context, c api.Caller, t command.Type, body any) (*model.WriteResult, error) {
	cmd, err := command.New(t, c.RequestID, c.Actor, body)
	if err != nil {
		return nil, err
	}
	res, err := a.rep.Propose(ctx, cmd)
	if err != nil {
		return nil, err
	}
	var out model.WriteResult
	if err := res.Decode(&out); err != nil {
		return nil, err
	}
	return &out, nil
}

// PutTask implements api.TaskBackend.
func (a *Agent) PutTask(ctx context.Context, c api.Caller, t *model.Task, o api.PutOptions) (*model.WriteResult, error) {
	return a.write(ctx, c, command.TypePutTask, command.PutTask{Task: *t, KeepPaused: o.KeepPaused})
}

// PlanTask implements api.TaskBackend: the put_task command PutTask would
// propose, stamped with this node's time, judged by the state machine
// against this node's state (the caller asks for a read barrier first
// when it must see every acknowledged write).
func (a *Agent) PlanTask(ctx context.Context, t *model.Task, o api.PutOptions) (*model.TaskPlan, error) {
	cmd, err := command.New(command.TypePutTask, "", "", command.PutTask{Task: *t, KeepPaused: o.KeepPaused})
	if err != nil {
		return nil, err
	}
	cmd.Now = a.now().UnixMilli()
	return a.fsm.PlanPutTask(cmd)
}

// DeleteTask implements api.TaskBackend.
func (a *Agent) DeleteTask(ctx context.Context, c api.Caller, name string) (*model.WriteResult, error) {
	return a.write(ctx, c, command.TypeDeleteTask, command.TaskRef{Name: name})
}

// PauseTask implements api.TaskBackend.
func (a *Agent) PauseTask(ctx context.Context, c api.Caller, name string) (*model.WriteResult, error) {
	return a.write(ctx, c, command.TypePauseTask, command.TaskRef{Name: name})
}

// ResumeTask implements api.TaskBackend.
func (a *Agent) ResumeTask(ctx context.Context, c api.Caller, name string) (*model.WriteResult, error) {
	return a.write(ctx, c, command.TypeResumeTask, command.TaskRef{Name: name})
}

// GetTask implements api.TaskBackend. The next fire times are computed from
// this node's clock for display only; firing uses the leader's.
func (a *Agent) GetTask(ctx context.Context, name string) (*model.Task, error) {
	t, err := a.fsm.GetTask(name)
	if err != nil {
		return nil, err
	}
	if !t.Paused {
		t.NextFireTimes = t.NextFires(a.now(), 5)
	}
	return t, nil
}

// ListTasks implements api.TaskBackend.
func (a *Agent) ListTasks(ctx context.Context, f model.TaskFilter) (*model.TaskList, error) {
	return a.fsm.ListTasks(f)
}

// TaskHistory implements api.TaskBackend.
func (a *Agent) TaskHistory(ctx context.Context, name string) (*model.TaskHistory, error) {
	return a.fsm.TaskHistory(name)
}
