package agent

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ax-scheduler/ax/api"
	"github.com/ax-scheduler/ax/internal/testkit"
	"github.com/ax-scheduler/ax/model"
)

// TestAgent_DefaultTimeout: an attempt of a task without policy.timeout
// is killed after the agent's -default-timeout (a hung script), a task
// whose timeout is "none" is not, and the leader logs one line per
// finished attempt.
func TestAgent_DefaultTimeout(t *testing.T) {
	logs := &testkit.Buffer{}
	tc := startCluster(t, 1, func(c *Config) {
		c.Executor, c.DefaultTimeout = true, time.Second
		c.Logger = hclog.New(&hclog.LoggerOptions{Level: hclog.Info, Output: io.MultiWriter(testkit.LogWriter(t), logs)})
	})
	a := tc.leader()
	testkit.Until(t, 20*time.Second, "protocol 4", func() bool { return a.fsm.Proto() >= 4 })
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := api.Caller{Actor: "tester"}
	hung := &model.Task{Name: "hung", Trigger: model.Trigger{Type: model.TriggerEvent},
		Action: model.Action{Type: model.ActionShell, Command: "sleep 600"}}
	free := &model.Task{Name: "free", Trigger: model.Trigger{Type: model.TriggerEvent},
		Action: model.Action{Type: model.ActionShell, Command: "sleep 3"}, Policy: model.Policy{Timeout: model.NoTimeout}}
	for _, tk := range []*model.Task{hung, free} {
		if _, err := a.tasks.PutTask(ctx, c, tk, api.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	ids := map[string]string{}
	for _, name := range []string{"hung", "free"} {
		in, err := a.tasks.Trigger(ctx, c, name, model.TriggerRequest{})
		if err != nil {
			t.Fatal(err)
		}
		ids[name] = in.ID
	}
	final := func(name string) *model.Instance {
		var in *model.Instance
		testkit.Until(t, 30*time.Second, name+" finished", func() bool {
			in, _ = a.tasks.GetInstance(ctx, ids[name])
			return in != nil && (in.State == model.StateFailed || in.State == model.StateSuccess)
		})
		return in
	}
	in := final("hung")
	if took := time.Since(start); in.State != model.StateFailed || len(in.AttemptList) != 1 || in.AttemptList[0].Outcome != model.OutcomeTimeout || took > 20*time.Second {
		t.Fatalf("hung: %s after %s, attempts %+v; want FAILED by a timeout within seconds", in.State, took, in.AttemptList)
	}
	if in := final("free"); in.State != model.StateSuccess {
		t.Fatalf("a task with timeout none: %s (%+v), want SUCCESS after 3s", in.State, in.AttemptList)
	}
	testkit.Until(t, 5*time.Second, "the attempt log lines", func() bool {
		return strings.Count(logs.String(), "attempt finished") >= 2
	})
	for _, l := range strings.Split(logs.String(), "\n") {
		if strings.Contains(l, "attempt finished") && strings.Contains(l, "task=hung") {
			for _, want := range []string{"[INFO]", "instance=" + ids["hung"], "attempt=1", "executor=n1", "duration=", "outcome=timeout", "state=FAILED", "exit_code="} {
				if !strings.Contains(l, want) {
					t.Errorf("log line %q lacks %q", l, want)
				}
			}
		}
	}
}

// TestAgent_PolicyCycleRefused: once the cluster speaks protocol 4, a
// task may use onSuccess, and one that closes a cycle is refused (400
// naming policy.onSuccess and the cycle) and not stored.
func TestAgent_PolicyCycleRefused(t *testing.T) {
	tc := startCluster(t, 1, nil)
	a := tc.leader()
	testkit.Until(t, 20*time.Second, "protocol 4", func() bool { return a.fsm.Proto() >= 4 })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := api.Caller{Actor: "tester"}
	tk := eventTask("chain")
	tk.Policy.OnSuccess = []model.Chain{{Task: "next"}}
	if _, err := a.tasks.PutTask(ctx, c, tk, api.PutOptions{}); err != nil {
		t.Fatalf("at protocol 4: %v", err)
	}
	// A cycle is refused through the leader's precheck.
	next := eventTask("next")
	next.Policy.OnSuccess = []model.Chain{{Task: "chain"}}
	_, err := a.tasks.PutTask(ctx, c, next, api.PutOptions{})
	var me *model.Error
	if !errors.As(err, &me) || me.Code != model.CodeInvalid || me.Field != "policy.onSuccess" || me.Message != "onSuccess cycle: next -> chain -> next" {
		t.Fatalf("cycle: %v", err)
	}
	if _, err := a.fsm.GetTask("next"); err == nil {
		t.Fatalf("the refused task was stored")
	}
}
