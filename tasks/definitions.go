package tasks

import (
	"context"
	"fmt"
	"time"

	"github.com/ax-scheduler/ax/api"
	"github.com/ax-scheduler/ax/fsm/command"
	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/replica"
	"github.com/ax-scheduler/ax/trigger"
)

// write proposes a command built from a caller's request and decodes its
// result.
func (ts *Tasks) write(ctx context.Context, c api.Caller, t command.Type, body any) (*model.WriteResult, error) {
	var out model.WriteResult
	if err := replica.Write(ctx, ts.rep, c, t, body, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// PutTask implements api.TaskBackend.
func (ts *Tasks) PutTask(ctx context.Context, c api.Caller, t *model.Task, o api.PutOptions) (*model.WriteResult, error) {
	return ts.write(ctx, c, command.TypePutTask, command.PutTask{Task: *t, KeepPaused: o.KeepPaused})
}

// PlanTask implements api.TaskBackend: the put_task command PutTask would
// propose, stamped with this node's time, judged by the state machine
// against this node's state (the caller asks for a read barrier first
// when it must see every acknowledged write).
func (ts *Tasks) PlanTask(ctx context.Context, t *model.Task, o api.PutOptions) (*model.TaskPlan, error) {
	cmd, err := command.New(command.TypePutTask, "", "", command.PutTask{Task: *t, KeepPaused: o.KeepPaused})
	if err != nil {
		return nil, err
	}
	cmd.Now = ts.cfg.Clock.Now().UnixMilli()
	return ts.state.PlanPutTask(cmd)
}

// DeleteTask implements api.TaskBackend.
func (ts *Tasks) DeleteTask(ctx context.Context, c api.Caller, name string) (*model.WriteResult, error) {
	return ts.write(ctx, c, command.TypeDeleteTask, command.TaskRef{Name: name})
}

// PauseTask implements api.TaskBackend.
func (ts *Tasks) PauseTask(ctx context.Context, c api.Caller, name string) (*model.WriteResult, error) {
	return ts.write(ctx, c, command.TypePauseTask, command.TaskRef{Name: name})
}

// PromoteRollout implements api.TaskBackend.
func (ts *Tasks) PromoteRollout(ctx context.Context, c api.Caller, name string) (*model.WriteResult, error) {
	return ts.write(ctx, c, command.TypePromoteRollout, command.TaskRef{Name: name})
}

// AbortRollout implements api.TaskBackend.
func (ts *Tasks) AbortRollout(ctx context.Context, c api.Caller, name string) (*model.WriteResult, error) {
	return ts.write(ctx, c, command.TypeAbortRollout, command.TaskRef{Name: name})
}

// Rollout implements api.TaskBackend.
func (ts *Tasks) Rollout(ctx context.Context, name string) (*model.Rollout, error) {
	return ts.state.Rollout(name)
}

// ResumeTask implements api.TaskBackend.
func (ts *Tasks) ResumeTask(ctx context.Context, c api.Caller, name string) (*model.WriteResult, error) {
	return ts.write(ctx, c, command.TypeResumeTask, command.TaskRef{Name: name})
}

// GetTask implements api.TaskBackend. The next fire times are computed from
// this node's clock for display only; firing uses the leader's.
func (ts *Tasks) GetTask(ctx context.Context, name string) (*model.Task, error) {
	t, err := ts.state.GetTask(name)
	if err != nil {
		return nil, err
	}
	now := ts.cfg.Clock.Now()
	if !t.Paused {
		t.NextFireTimes = t.NextFires(now, 5)
	}
	t.Completed = completed(t, now)
	return t, nil
}

// ListTasks implements api.TaskBackend.
func (ts *Tasks) ListTasks(ctx context.Context, f model.TaskFilter) (*model.TaskList, error) {
	l, err := ts.state.ListTasks(f)
	if err != nil {
		return nil, err
	}
	now := ts.cfg.Clock.Now()
	for i := range l.Tasks {
		l.Tasks[i].Completed = completed(&l.Tasks[i], now)
	}
	return l, nil
}

// completed says why t's trigger fires no more as of now, this node's
// clock ("" while it may fire, and for an event trigger, which fires
// only when asked): its maxRuns are used up, its endAt passed (or no fire
// time is left before it), its once time passed. A fire time less than
// the trigger's jitter ago may still be due: until then the trigger has
// not completed.
func completed(t *model.Task, now time.Time) string {
	tr := &t.Trigger
	if trigger.RunsLeft(tr.MaxRuns, t.Runs) == 0 {
		return fmt.Sprintf("maxRuns %d reached (%d %s)", tr.MaxRuns, t.Runs, plural(int(min(t.Runs, 1<<31)), "run", "runs"))
	}
	sc, err := t.Schedule()
	if err != nil || sc == nil || !sc.Next(now.Add(-tr.Jitter.Std())).IsZero() {
		return ""
	}
	switch {
	case tr.EndAt != nil && !now.Before(tr.EndAt.Time):
		return "endAt " + tr.EndAt.Format(model.TimeLayout) + " passed"
	case tr.EndAt != nil:
		return "no fire time left before endAt " + tr.EndAt.Format(model.TimeLayout)
	case tr.At != nil:
		return "its once time " + tr.At.Format(model.TimeLayout) + " passed"
	}
	return "no fire time left"
}

// TaskHistory implements api.TaskBackend.
func (ts *Tasks) TaskHistory(ctx context.Context, name string) (*model.TaskHistory, error) {
	return ts.state.TaskHistory(name)
}
