package client_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/agent"
	"github.com/ax-scheduler/ax/client"
	"github.com/ax-scheduler/ax/internal/agenttest"
	"github.com/ax-scheduler/ax/internal/testkit"
	"github.com/ax-scheduler/ax/model"
)

// TestClient_AgainstAnAgent runs the client against a real in-process
// agent: every decision, the errors of bad input naming their field, and
// failover from an address where nothing listens.
func TestClient_AgainstAnAgent(t *testing.T) {
	a := agenttest.Start(t, func(c *agent.Config) { c.Executor = true })
	dead := testkit.FreeAddr(t)
	c := client.New(client.Config{Addrs: []string{dead, a.HTTPAddr()}, Actor: "alice"})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, task := range []*model.Task{
		// No executor runs sdk handlers here: approved, it waits READY.
		{Name: "gated", Trigger: model.Trigger{Type: model.TriggerEvent}, Action: model.Action{Type: model.ActionSDK, Handler: "none"},
			Policy: model.Policy{Approval: "before_run"}},
		{Name: "long", Trigger: model.Trigger{Type: model.TriggerEvent}, Action: model.Action{Type: model.ActionShell, Command: "sleep 60"}},
	} {
		if _, err := c.PutTask(ctx, task); err != nil {
			t.Fatal(err)
		}
	}
	trigger := func(t *testing.T, task, state string) string {
		t.Helper()
		s, err := c.Trigger(ctx, task, model.TriggerRequest{})
		if err != nil {
			t.Fatal(err)
		}
		agenttest.WaitState(t, c, s.ID, 20*time.Second, state)
		return s.ID
	}

	t.Run("decisions", func(t *testing.T) {
		gated, gated2 := trigger(t, "gated", model.StateWaitingApproval), trigger(t, "gated", model.StateWaitingApproval)
		long := trigger(t, "long", model.StateRunning)
		steps := []struct {
			name      string
			id        string
			d         client.Decision
			wantState string
			wantCode  string
			wantField string
		}{
			{"approve", gated, client.Approve, model.StateReady, "", ""},
			{"approve again", gated, client.Approve, "", model.CodePrecondition, "state"},
			{"cancel", gated, client.Cancel, model.StateCanceled, "", ""},
			{"reject", gated2, client.Reject, model.StateCanceled, "", ""},
			{"terminate", long, client.Terminate, model.StateTerminated, "", ""},
			{"unknown decision", gated2, client.Decision("approved"), "", model.CodeInvalid, "action"},
			{"unknown instance", "00000000ffffffff", client.Cancel, "", model.CodeNotFound, "id"},
			{"bad instance id", "nope", client.Cancel, "", model.CodeInvalid, "id"},
		}
		for _, st := range steps {
			state, err := c.Decide(ctx, st.id, st.d, "by "+st.name)
			var me *model.Error
			switch {
			case st.wantCode == "" && (err != nil || state != st.wantState):
				t.Errorf("%s: got %q, %v; want %s", st.name, state, err, st.wantState)
			case st.wantCode != "" && (!errors.As(err, &me) || me.Code != st.wantCode || me.Field != st.wantField):
				t.Errorf("%s: got %q, %v; want code %s naming %q", st.name, state, err, st.wantCode, st.wantField)
			}
		}
		in, err := c.GetInstance(ctx, gated)
		if err != nil {
			t.Fatal(err)
		}
		// The decisions are in the instance's events, with their comments
		// and the client's actor.
		var events []string
		for _, e := range in.Events {
			if e.Type == "approved" || e.Type == "canceled" {
				events = append(events, e.Type+":"+e.Message)
				if !strings.Contains(e.Actor, "alice") {
					t.Errorf("event %+v: want the actor alice", e)
				}
			}
		}
		if want := []string{"approved:by approve", "canceled:by cancel"}; !slices.Equal(events, want) {
			t.Errorf("decision events on %s: %q, want %q", gated, events, want)
		}
	})

	t.Run("re-runs", func(t *testing.T) {
		gated, gated2 := trigger(t, "gated", model.StateWaitingApproval), trigger(t, "gated", model.StateWaitingApproval)
		for _, id := range []string{gated, gated2} {
			if _, err := c.Decide(ctx, id, client.Cancel, ""); err != nil {
				t.Fatal(err)
			}
		}
		s, err := c.Rerun(ctx, gated)
		if err != nil || s.ID != gated || s.State != model.StateWaitingApproval {
			t.Fatalf("re-run of a canceled instance: %+v %v, want WAITING_APPROVAL (approval asked again)", s, err)
		}
		_, err = c.Rerun(ctx, gated)
		var me *model.Error
		if !errors.As(err, &me) || me.Code != model.CodePrecondition || me.Field != "state" || !strings.Contains(me.Message, "WAITING_APPROVAL") {
			t.Errorf("re-run of an unfinished instance: %v, want 409 naming its state", err)
		}
		now := model.Time{Time: time.Now().UTC()}
		hourAgo := model.Time{Time: now.Add(-time.Hour)}
		res, err := c.RerunTask(ctx, "gated", model.RerunRequest{From: hourAgo, To: now, States: []string{model.StateCanceled}})
		if err != nil || !slices.ContainsFunc(res.Instances, func(s model.Submitted) bool { return s.ID == gated2 }) ||
			slices.ContainsFunc(res.Instances, func(s model.Submitted) bool { return s.ID == gated }) || res.Rerun != len(res.Instances) {
			t.Errorf("a task's re-run of its CANCELED instances: %+v %v, want %s among them, not %s", res, err, gated2, gated)
		}
		_, err = c.RerunTask(ctx, "gated", model.RerunRequest{From: now, To: hourAgo})
		if !errors.As(err, &me) || me.Code != model.CodeInvalid || me.Field != "to" {
			t.Errorf("a task's re-run from after to: %v, want 400 naming to", err)
		}
		_, err = c.RerunTask(ctx, "nothing", model.RerunRequest{From: hourAgo, To: now})
		if !errors.As(err, &me) || me.Code != model.CodeNotFound {
			t.Errorf("a missing task's re-run: %v, want 404", err)
		}
	})

	t.Run("field errors", func(t *testing.T) {
		tests := []struct {
			name      string
			call      func() error
			wantCode  string
			wantField string
		}{
			{"bad cron", func() error {
				_, err := c.PutTask(ctx, &model.Task{Name: "bad", Trigger: model.Trigger{Type: model.TriggerCron, Expression: "61 * * * *"},
					Action: model.Action{Type: model.ActionShell, Command: "true"}})
				return err
			}, model.CodeInvalid, "trigger.expression"},
			{"unknown state filter", func() error {
				_, err := c.ListInstances(ctx, model.InstanceFilter{State: "DONE"})
				return err
			}, model.CodeInvalid, "state"},
			{"log of a bad id", func() error { _, err := c.InstanceLog(ctx, "xyz", 0); return err }, model.CodeInvalid, "id"},
			{"missing task", func() error { _, err := c.Trigger(ctx, "nothing", model.TriggerRequest{}); return err }, model.CodeNotFound, "name"},
		}
		for _, tt := range tests {
			err := tt.call()
			var me *model.Error
			if !errors.As(err, &me) || me.Code != tt.wantCode || me.Field != tt.wantField || me.Message == "" {
				t.Errorf("%s: got %#v (%v); want code %s naming %q", tt.name, me, err, tt.wantCode, tt.wantField)
			}
		}
	})
}

// TestClient_PutTaskKeepsPaused: re-putting a definition never resumes a
// task an operator paused; Paused true pauses; ResumeTask resumes.
func TestClient_PutTaskKeepsPaused(t *testing.T) {
	a := agenttest.Start(t, nil)
	c := client.New(client.Config{Addrs: []string{a.HTTPAddr()}, Actor: "alice"})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	task := &model.Task{Name: "nightly", Trigger: model.Trigger{Type: model.TriggerEvent},
		Action: model.Action{Type: model.ActionShell, Command: "true"}}
	paused := func(want bool, what string) {
		t.Helper()
		got, err := c.GetTask(ctx, task.Name)
		if err != nil {
			t.Fatal(err)
		}
		if got.Paused != want {
			t.Fatalf("%s: paused %v, want %v", what, got.Paused, want)
		}
	}
	if _, err := c.PutTask(ctx, task); err != nil {
		t.Fatal(err)
	}
	paused(false, "created")
	if _, err := c.PauseTask(ctx, task.Name); err != nil {
		t.Fatal(err)
	}
	task.Action.Command = "echo changed"
	res, err := c.PutTask(ctx, task)
	if err != nil || !res.Changed {
		t.Fatalf("update: %+v, %v", res, err)
	}
	paused(true, "an update with Paused false after a pause")
	if _, err := c.ResumeTask(ctx, task.Name); err != nil {
		t.Fatal(err)
	}
	paused(false, "resumed")
	task.Paused = true
	if _, err := c.PutTask(ctx, task); err != nil {
		t.Fatal(err)
	}
	paused(true, "an update with Paused true")
	created := &model.Task{Name: "born-paused", Paused: true, Trigger: model.Trigger{Type: model.TriggerEvent},
		Action: model.Action{Type: model.ActionShell, Command: "true"}}
	if _, err := c.PutTask(ctx, created); err != nil {
		t.Fatal(err)
	}
	got, err := c.GetTask(ctx, created.Name)
	if err != nil || !got.Paused {
		t.Fatalf("created with Paused true: %+v, %v", got, err)
	}
}
