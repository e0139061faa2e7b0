package tests

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/client"
	"github.com/ax-scheduler/ax/internal/agenttest"
	"github.com/ax-scheduler/ax/internal/testkit"
	"github.com/ax-scheduler/ax/localcluster"
	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/worker"
)

// midRunScript asks for approval in the middle of its work: exit 0 on the
// approved path, 7 on the rejected one (`ax approval request` exits 1).
func midRunScript() string {
	return `echo before; ` + axBinary + ` approval request -summary "drop table?" && echo approved-path || { echo rejected-path; exit 7; }`
}

// TestApproval_MidRunUnderTLSAndACL is the mid-run approval journey on
// three TLS nodes with ACLs bootstrapped, through a follower: a script
// run by `ax executor` with an executor token bound to its name (which
// knows only a follower), and one run by a follower's embedded executor,
// ask for approval; the approved one goes on (exit 0) and succeeds, the
// rejected one's `ax approval request` exits 1, its rejection path runs
// and the instance ends CANCELED with that output. A script that ends
// while it waits frees its task's only slot. An executor token reads the
// decision on its own attempts only, and still no instance.
func TestApproval_MidRunUnderTLSAndACL(t *testing.T) {
	// The embedded executors that run the journey's tasks are n2's and
	// n3's, followers while n1 leads.
	c := startCluster(t, 3, withTLS(t.TempDir()), withArgs("-executor", "true"), func(cfg *localcluster.Config) {
		cfg.NodeArgs = map[string][]string{"n1": {"-executor-labels", "kind=leader"},
			"n2": {"-executor-labels", "kind=embedded"}, "n3": {"-executor-labels", "kind=embedded"}}
	})
	ctx := ctxT(t, 240*time.Second)
	follower := c.Nodes[1]
	boot, err := tokenClient(c, "", follower.HTTPAddr).ACLBootstrap(ctx)
	if err != nil {
		t.Fatal(err)
	}
	adm := tokenClient(c, boot.Secret, follower.HTTPAddr)
	if leader, err := c.Leader(ctx, 15*time.Second); err != nil {
		t.Fatal(err)
	} else if leader.ID != "n1" {
		if err := adm.Transfer(ctx, "n1"); err != nil {
			t.Fatalf("moving leadership to n1 (from %s): %v", leader.ID, err)
		}
	}
	w1 := createToken(t, ctx, adm, model.ACLTokenRequest{Name: "w1", Role: model.RoleExecutor, Executor: "w1", Labels: map[string]string{"kind": "cli"}})
	ops := tokenClient(c, createToken(t, ctx, adm, model.ACLTokenRequest{Name: "alice", Role: model.RoleOperator}), follower.HTTPAddr)
	if _, err := c.StartExecutorAt("w1", []string{follower.HTTPAddr}, "-token", w1, "-labels", "kind=cli"); err != nil {
		t.Fatal(err)
	}
	for _, kind := range []string{"cli", "embedded"} {
		midRunJourney(t, ctx, adm, ops, kind, "deployment tls+acl via follower "+follower.ID)
	}

	// w1's token reads the decision on the attempts leased to w1 only,
	// and still no instance.
	l, err := ops.ListInstances(ctx, model.InstanceFilter{Task: "mid-embedded"}, client.Consistent())
	if err != nil || len(l.Instances) == 0 {
		t.Fatalf("list: %v", err)
	}
	w1p := worker.NewProtocol(tokenClient(c, w1, follower.HTTPAddr))
	_, err = w1p.ApprovalStatus(ctx, l.Instances[0].ID, 1)
	wantCode(t, "w1 reads an embedded executor's attempt", err, model.CodeForbidden)
	l, err = ops.ListInstances(ctx, model.InstanceFilter{Task: "mid-cli"}, client.Consistent())
	if err != nil || len(l.Instances) == 0 {
		t.Fatalf("list: %v", err)
	}
	for _, in := range l.Instances {
		if in.Executor != "w1" {
			t.Errorf("instance %s of mid-cli ran on %q, want w1", in.ID, in.Executor)
		}
	}
	// The journey is meant to run on followers' embedded executors; a
	// leadership change (a loaded machine) moves some onto the leader,
	// which the journey survives too: say so rather than fail.
	if leader, err := c.Leader(ctx, 15*time.Second); err != nil || leader.ID != "n1" {
		t.Logf("leadership moved during the journey (now %v, %v): some embedded attempts may have run on the leader", leader, err)
	}
	st, err := w1p.ApprovalStatus(ctx, l.Instances[0].ID, 1)
	if err != nil || st.Decision == "" {
		t.Fatalf("w1 reads its own attempt: %+v, %v", st, err)
	}
	_, err = tokenClient(c, w1, follower.HTTPAddr).GetInstance(ctx, l.Instances[0].ID)
	wantCode(t, "w1 reads an instance", err, model.CodeForbidden)
}

// midRunJourney defines the mid-run approval tasks for executors labeled
// kind=kind with adm, and runs the journey with ops (an operator): approve,
// reject, and a script that ends while it waits. where names the
// deployment in failures.
func midRunJourney(t *testing.T, ctx context.Context, adm, ops *client.Client, kind, where string) {
	t.Helper()
	p := model.Policy{MaxConcurrency: 1, Overlap: "queue", ExecutorLabels: map[string]string{"kind": kind}}
	for _, task := range []*model.Task{shellTask("mid-"+kind, midRunScript(), p),
		shellTask("gives-up-"+kind, axBinary+` approval request -summary "wait for me" & sleep 2; exit 3`, p)} {
		if _, err := adm.PutTask(ctx, task); err != nil {
			t.Fatal(err)
		}
	}
	step := func(what string) string { return fmt.Sprintf("%s, executor %s: %s", where, kind, what) }
	task := "mid-" + kind
	// Approve: the script goes on and succeeds.
	id := trigger(t, ops, task)
	agenttest.WaitState(t, ops, id, 20*time.Second, model.StateWaitingApproval)
	if _, err := ops.Decide(ctx, id, client.Approve, "go ahead"); err != nil {
		t.Fatalf("%s: %v", step("approve"), err)
	}
	in := agenttest.WaitState(t, ops, id, 20*time.Second, model.StateSuccess)
	if out := in.AttemptList[0].Output; !strings.Contains(out, "approved by ") || !strings.Contains(out, "approved-path") {
		t.Fatalf("%s: output %q, want the approved path", step("approved"), out)
	}

	// Reject: ax approval request exits 1, the rejection path runs, the
	// instance is CANCELED and keeps that output.
	id = trigger(t, ops, task)
	agenttest.WaitState(t, ops, id, 20*time.Second, model.StateWaitingApproval)
	if _, err := ops.Decide(ctx, id, client.Reject, "not today"); err != nil {
		t.Fatalf("%s: %v", step("reject"), err)
	}
	agenttest.WaitState(t, ops, id, 10*time.Second, model.StateCanceled)
	testkit.Eventually(t, 20*time.Second, func() error {
		in, err := ops.GetInstance(ctx, id, client.Consistent())
		if err != nil {
			return err
		}
		if len(in.AttemptList) != 1 {
			return fmt.Errorf("%s: attempts %+v, want the rejected one", step("rejected"), in.AttemptList)
		}
		a := in.AttemptList[0]
		if a.Outcome != model.OutcomeCanceled || a.ExitCode == nil || *a.ExitCode != 7 ||
			!strings.Contains(a.Output, "rejected by ") || !strings.Contains(a.Output, "rejected-path") {
			return fmt.Errorf("%s: attempt %+v, want canceled with the script's exit 7 and its rejection path", step("rejected"), a)
		}
		return nil
	})

	// A script that ends while it waits frees the task's only slot: the
	// next instance runs (before, it stayed BLOCKED for good).
	gone := trigger(t, ops, "gives-up-"+kind)
	agenttest.WaitState(t, ops, gone, 30*time.Second, model.StateFailed)
	next := trigger(t, ops, "gives-up-"+kind)
	agenttest.WaitState(t, ops, next, 20*time.Second, model.StateWaitingApproval, model.StateRunning, model.StateFailed)
	agenttest.WaitState(t, ops, next, 30*time.Second, model.StateFailed)
	counts, err := ops.TaskCounts(ctx, "gives-up-"+kind, model.CountFilter{}, client.Consistent())
	if err != nil {
		t.Fatal(err)
	}
	if counts.Slots == nil || counts.Slots.Busy != 0 || counts.Counts[model.StateFailed] != 2 {
		t.Fatalf("%s: counts %+v, slots %+v: want two FAILED and no busy slot", step("gave up"), counts, counts.Slots)
	}
}

// TestApproval_MidRunSingleNode is the journey on the default deployment:
// one node without auth, its embedded executor running the script with
// its own (executor-bound) credential.
func TestApproval_MidRunSingleNode(t *testing.T) {
	c := startCluster(t, 1, withArgs("-executor", "true", "-executor-labels", "kind=embedded"))
	midRunJourney(t, ctxT(t, 120*time.Second), c.Client(), c.Client(), "embedded", "deployment single node")
}

// TestTerminate_KeepsOutput: on one node with its embedded executor, an
// attempt terminated after printing 8 of its 60 lines keeps them: /log
// answers lines 1 to 8 once the executor's report of the killed attempt
// is in (before, "output":"").
func TestTerminate_KeepsOutput(t *testing.T) {
	c := startCluster(t, 1, withArgs("-executor", "true"))
	cl := c.Client()
	ctx := ctxT(t, 60*time.Second)
	task := shellTask("sixty", `i=1; while [ $i -le 60 ]; do echo "line $i of 60"; sleep 0.25; i=$((i+1)); done`, model.Policy{})
	if _, err := cl.PutTask(ctx, task); err != nil {
		t.Fatal(err)
	}
	id := trigger(t, cl, task.Name)
	testkit.Eventually(t, 20*time.Second, func() error {
		l, err := cl.InstanceLog(ctx, id, 0)
		if err != nil {
			return err
		}
		if !strings.Contains(l.Output, "line 8 of 60") {
			return fmt.Errorf("live log %q, waiting for line 8", l.Output)
		}
		return nil
	})
	if _, err := cl.Decide(ctx, id, client.Terminate, "enough"); err != nil {
		t.Fatal(err)
	}
	agenttest.WaitState(t, cl, id, 10*time.Second, model.StateTerminated)
	var l *model.InstanceLog
	testkit.Eventually(t, 20*time.Second, func() error {
		var err error
		if l, err = cl.InstanceLog(ctx, id, 0); err != nil {
			return err
		}
		for i := 1; i <= 8; i++ {
			if !strings.Contains(l.Output, fmt.Sprintf("line %d of 60\n", i)) {
				return fmt.Errorf("log of the terminated attempt %q lacks line %d", l.Output, i)
			}
		}
		return nil
	})
	if l.Live || l.State != model.StateTerminated || strings.Contains(l.Output, "line 60 of 60") {
		t.Errorf("log %+v, want the terminated attempt's output up to its kill", l)
	}
	in := agenttest.WaitState(t, cl, id, time.Second, model.StateTerminated)
	if a := in.AttemptList[0]; a.Outcome != model.OutcomeTerminated || !strings.Contains(a.Output, "line 8 of 60") || a.PID == 0 {
		t.Errorf("attempt %+v, want terminated with its output and pid", a)
	}
}
