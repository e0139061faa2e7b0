package agent

import (
	"context"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/api"
	"github.com/ax-scheduler/ax/fsm/command"
	"github.com/ax-scheduler/ax/internal/testkit"
	"github.com/ax-scheduler/ax/model"
)

// TestAgent_PutTaskKeepPausedAndPlan: once the cluster is at protocol 5, a
// put that keeps paused leaves a paused task paused and unchanged, and a
// plan answers what a put would do without adding a log entry.
func TestAgent_PutTaskKeepPausedAndPlan(t *testing.T) {
	a := startAgent(t)
	testkit.Until(t, 20*time.Second, "protocol 5", func() bool { return a.fsm.Proto() == command.ProtoVersion })
	ctx := context.Background()
	c := api.Caller{Actor: "tester"}
	keep := api.PutOptions{KeepPaused: true}
	task := func(cmd string) *model.Task {
		return &model.Task{Name: "job", Trigger: model.Trigger{Type: model.TriggerEvent}, Action: model.Action{Type: model.ActionShell, Command: cmd}}
	}
	w, err := a.tasks.PutTask(ctx, c, task("true"), keep)
	if err != nil || !w.Created {
		t.Fatalf("create: got %+v, %v; want created", w, err)
	}
	if _, err := a.tasks.PauseTask(ctx, c, "job"); err != nil {
		t.Fatal(err)
	}
	if w, err = a.tasks.PutTask(ctx, c, task("true"), keep); err != nil || w.Changed || w.Version != 2 {
		t.Fatalf("re-put of the paused task: got %+v, %v; want version 2 unchanged", w, err)
	}

	lastIndex := func() string { return a.node.Stats()["last_log_index"] }
	before := lastIndex()
	p, err := a.tasks.PlanTask(ctx, task("false"), keep)
	if err != nil {
		t.Fatal(err)
	}
	if p.Op != model.PlanUpdate || p.Version != 2 || !p.Task.Paused || p.Current == nil || p.Current.Action.Command != "true" {
		t.Fatalf("plan: got %+v", p)
	}
	if p, err = a.tasks.PlanTask(ctx, task("true"), api.PutOptions{}); err != nil || p.Op != model.PlanUpdate || p.Task.Paused {
		t.Fatalf("plan of a put that resumes: got %+v, %v", p, err)
	}
	if got := lastIndex(); got != before {
		t.Fatalf("plans added log entries: last index %s, was %s", got, before)
	}
	got, err := a.tasks.GetTask(ctx, "job")
	if err != nil || !got.Paused || got.Version != 2 || got.Action.Command != "true" {
		t.Fatalf("after the plans: got %+v, %v", got, err)
	}
}
