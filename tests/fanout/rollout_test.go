package fanout

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/client"
	"github.com/ax-scheduler/ax/fsm"
	"github.com/ax-scheduler/ax/internal/testkit"
	"github.com/ax-scheduler/ax/model"
)

// TestExec_CanaryRollout (three real processes, everything through a
// follower; issue 24, canary rollout): a task firing every second is
// changed at 50% with promoteAfter 3: its fires split between the stable
// and the canary version (each instance records which, and runs that
// version's command), and three canary successes promote the canary.
// Then a failing change at 50% rolls back at its first canary failure:
// the task stays at the promoted version, with a rollback event and a
// firing rollback alert. Last, a new task with testLabels runs its
// canaries on the executor carrying them only, and anywhere once
// promoted.
func TestExec_CanaryRollout(t *testing.T) {
	c := startCluster(t, 3)
	ctx := ctxT(t, 3*time.Minute)
	follower, _, err := c.Follower(ctx, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	fc := client.New(client.Config{Addrs: []string{follower.HTTPAddr}})
	if _, err := c.StartExecutor("w1", "-capacity", "4"); err != nil {
		t.Fatal(err)
	}
	task := func(command string, ro *model.RolloutSpec) *model.Task {
		return &model.Task{Name: "tick", Trigger: model.Trigger{Type: model.TriggerInterval, Every: model.Duration(time.Second)},
			Action: model.Action{Type: model.ActionShell, Command: command}, Policy: model.Policy{MaxConcurrency: 4}, Rollout: ro}
	}
	if _, err := fc.PutTask(ctx, task("echo stable-v1", nil)); err != nil {
		t.Fatal(err)
	}
	var canary uint64
	testkit.Eventually(t, 30*time.Second, func() error { // protocol 8
		res, err := fc.PutTask(ctx, task("echo canary-v2", &model.RolloutSpec{Percent: 50, PromoteAfter: 3}))
		if err == nil {
			canary = res.Version
		}
		return err
	})
	ro := waitRollout(t, ctx, fc, model.RolloutPromoted, 90*time.Second)
	if ro.Canary != canary || ro.Stable != 1 || ro.Successes != 3 || ro.Failures != 0 || ro.Promoted == 0 {
		t.Fatalf("promoted rollout %+v, want canary version %d over stable 1, 3 successes", ro, canary)
	}
	tk, err := fc.GetTask(ctx, "tick")
	if err != nil || tk.Version != ro.Promoted || tk.Action.Command != "echo canary-v2" {
		t.Fatalf("task after the promotion: %+v %v", tk, err)
	}
	// Each instance ran the command of the version it records.
	ins, err := allInstances(ctx, fc, "tick")
	if err != nil {
		t.Fatal(err)
	}
	var canaries, checked int
	for _, in := range ins {
		// (An instance created in the very millisecond the rollout began or
		// ended may be on either side: not judged.)
		during := in.CreatedAt.After(ro.StartedAt.Time) && in.CreatedAt.Before(ro.EndedAt.Time)
		outside := in.CreatedAt.Before(ro.StartedAt.Time) || in.CreatedAt.After(ro.EndedAt.Time)
		if in.Canary {
			canaries++
			if in.TaskVersion != canary {
				t.Errorf("canary instance %s records version %d, want %d", in.ID, in.TaskVersion, canary)
			}
		}
		// The split is the hash of the task and the fire time, whatever
		// node or leader created the instance.
		if pick := fsm.CanaryPick("tick", in.ScheduledAt.UnixMilli(), 50); during && in.Canary != pick {
			t.Errorf("instance %s of %s during the rollout: canary %v, the split says %v", in.ID, in.ScheduledAt, in.Canary, pick)
		} else if outside && in.Canary {
			t.Errorf("instance %s created outside the rollout is a canary", in.ID)
		}
		if in.State != model.StateSuccess || checked >= 12 {
			continue
		}
		checked++
		want := map[bool]string{true: "canary-v2", false: "stable-v1"}[in.Canary || in.TaskVersion > canary]
		if l, err := fc.InstanceLog(ctx, in.ID, 0); err != nil || !strings.Contains(l.Output, want) {
			t.Errorf("instance %s (version %d, canary %v) printed %v (%v), want %s", in.ID, in.TaskVersion, in.Canary, l, err, want)
		}
	}
	if canaries < 3 {
		t.Errorf("%d canary fires, want at least the 3 that promoted it", canaries)
	}
	if ev := taskEventTypes(t, ctx, fc); !strings.Contains(ev, "rollout_started promoted") {
		t.Errorf("task events %q", ev)
	}

	// A failing canary rolls back and alerts.
	res, err := fc.PutTask(ctx, task("echo canary-v3; exit 1", &model.RolloutSpec{Percent: 50, PromoteAfter: 3}))
	if err != nil {
		t.Fatal(err)
	}
	ro = waitRollout(t, ctx, fc, model.RolloutRolledBack, 90*time.Second)
	if ro.Canary != res.Version || ro.Failures != 1 || !strings.Contains(ro.Reason, "failed") {
		t.Fatalf("rolled back rollout %+v", ro)
	}
	tk, err = fc.GetTask(ctx, "tick")
	if err != nil || tk.Action.Command != "echo canary-v2" {
		t.Fatalf("task after the rollback: %+v %v, want the promoted version's command", tk, err)
	}
	if ev := taskEventTypes(t, ctx, fc); !strings.HasSuffix(ev, "rollout_started rollback") {
		t.Errorf("task events %q", ev)
	}
	testkit.Eventually(t, 30*time.Second, func() error {
		l, err := fc.ListAlerts(ctx, model.AlertQuery{State: model.AlertFiring, Rule: "rollback"})
		if err != nil {
			return err
		}
		for _, a := range l.Alerts {
			if a.ID == "rollback:tick" && a.Subject.Task == "tick" && strings.Contains(a.Summary, "rolled back") {
				return nil
			}
		}
		return fmt.Errorf("no firing rollback alert of tick: %+v", l.Alerts)
	})
	out, err := axCLI(t, "task", "rollout", "-addr", follower.HTTPAddr, "tick")
	if err != nil || !strings.Contains(out, "rolled_back") || !strings.Contains(out, fmt.Sprintf("Canary version:       %d, 50%% of the fires", res.Version)) {
		t.Errorf("ax task rollout: %q %v", out, err)
	}

	// A new task with testLabels runs its first two fires on the
	// executor labelled env=test only, then anywhere.
	if _, err := c.StartExecutor("tester", "-labels", "env=test"); err != nil {
		t.Fatal(err)
	}
	fresh := task("echo fresh", &model.RolloutSpec{PromoteAfter: 2, TestLabels: map[string]string{"env": "test"}})
	fresh.Name = "fresh"
	if _, err := fc.PutTask(ctx, fresh); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 60*time.Second, func() error {
		ro, err := fc.Rollout(ctx, "fresh")
		if err == nil && ro.Phase != model.RolloutPromoted {
			err = fmt.Errorf("rollout of fresh %s, %d successes", ro.Phase, ro.Successes)
		}
		return err
	})
	ins, err = allInstances(ctx, fc, "fresh")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, in := range ins {
		if in.Canary && in.State == model.StateSuccess {
			n++
			if in.Executor != "tester" {
				t.Errorf("canary %s of the new task ran on %s, want the test executor", in.ID, in.Executor)
			}
		}
	}
	if n < 2 {
		t.Errorf("%d successful canaries of the new task, want 2", n)
	}
	testkit.Eventually(t, 60*time.Second, func() error { // then w1 takes its share
		ins, err := allInstances(ctx, fc, "fresh")
		for _, in := range ins {
			if !in.Canary && in.Executor == "w1" && in.State == model.StateSuccess {
				return nil
			}
		}
		return fmt.Errorf("no plain instance of fresh ran on w1 (%d instances, %v)", len(ins), err)
	})
}

// waitRollout waits until the task tick's rollout reaches phase.
func waitRollout(t *testing.T, ctx context.Context, cl *client.Client, phase string, within time.Duration) *model.Rollout {
	t.Helper()
	var ro *model.Rollout
	testkit.Eventually(t, within, func() error {
		var err error
		if ro, err = cl.Rollout(ctx, "tick"); err != nil {
			return err
		}
		if ro.Phase != phase {
			return fmt.Errorf("rollout %s (%d of %d successes, %d failures, %d canary fires), want %s",
				ro.Phase, ro.Successes, ro.PromoteAfter, ro.Failures, ro.Fires, phase)
		}
		return nil
	})
	return ro
}

func taskEventTypes(t *testing.T, ctx context.Context, cl *client.Client) string {
	t.Helper()
	evs, err := cl.TaskEvents(ctx, "tick")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range evs.Events {
		out = append(out, e.Type)
	}
	return strings.Join(out, " ")
}
