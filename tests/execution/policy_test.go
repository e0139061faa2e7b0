package execution

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/client"
	"github.com/ax-scheduler/ax/internal/agenttest"
	"github.com/ax-scheduler/ax/internal/localcluster"
	"github.com/ax-scheduler/ax/internal/testkit"
	"github.com/ax-scheduler/ax/model"
)

// waitProto4 waits until every node reports the cluster at protocol 4,
// when the protocol 4 policies may be used.
func waitProto4(t *testing.T, c *localcluster.Cluster) {
	t.Helper()
	testkit.Eventually(t, 30*time.Second, func() error {
		for _, n := range c.Nodes {
			h, err := n.Client().Health(context.Background())
			if err != nil {
				return err
			}
			if h.Protocol < 4 {
				return fmt.Errorf("%s: cluster protocol %d", n.ID, h.Protocol)
			}
		}
		return nil
	})
}

// TestPolicy_Cluster runs the protocol 4 policies through real agents:
// a dependsOn cycle refused over HTTP (a follower forwards, the leader's
// check answers), each onUpstreamFailure policy, maxQueued overflowing
// into SKIPPED, and the agents' -default-timeout killing a hung script.
func TestPolicy_Cluster(t *testing.T) {
	c := startCluster(t, 3, withArgs("-lease", "2s", "-default-timeout", "2s"))
	if _, err := c.StartExecutor("exec-a", "-capacity", "8"); err != nil {
		t.Fatal(err)
	}
	waitProto4(t, c)
	cl := c.Client()
	ctx := ctxT(t, 120*time.Second)

	t.Run("cycle refused", func(t *testing.T) {
		for _, task := range []*model.Task{dailyTask("cy-b", "true", model.Policy{DependsOn: []string{"cy-c"}}),
			dailyTask("cy-c", "true", model.Policy{DependsOn: []string{"cy-a"}})} {
			if _, err := cl.PutTask(ctx, task); err != nil {
				t.Fatal(err)
			}
		}
		follower, _, err := c.Follower(ctx, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := json.Marshal(dailyTask("cy-a", "true", model.Policy{DependsOn: []string{"cy-b"}}))
		req, _ := http.NewRequestWithContext(ctx, http.MethodPut, "http://"+follower.HTTPAddr+"/v1/tasks/cy-a", bytes.NewReader(body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var e struct{ Error model.Error }
		_ = json.NewDecoder(resp.Body).Decode(&e)
		if resp.StatusCode != http.StatusBadRequest || e.Error.Code != model.CodeInvalid || e.Error.Field != "policy.dependsOn" ||
			e.Error.Message != "dependsOn cycle: cy-a -> cy-b -> cy-c -> cy-a" {
			t.Fatalf("got %d %+v, want 400 invalid_argument on policy.dependsOn naming the cycle", resp.StatusCode, e.Error)
		}
		if _, err := cl.GetTask(ctx, "cy-a"); err == nil {
			t.Fatalf("the refused task was stored")
		}
	})

	t.Run("param schemas", func(t *testing.T) {
		// Through a follower, with the CLI: a refused parameter is a 400
		// naming it and writes nothing; the defaults are filled.
		follower, _, err := c.Follower(ctx, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		eu := "eu"
		task := shellTask("export", `echo "$AX_PARAM_REGION $AX_PARAM_LIMIT"`, model.Policy{})
		task.Params = map[string]model.ParamSpec{"region": {Enum: []string{"eu", "us"}, Default: &eu}, "limit": {Type: model.ParamInteger, Required: true}}
		testkit.Eventually(t, 30*time.Second, func() error { _, err := cl.PutTask(ctx, task); return err }) // protocol 8
		for _, bad := range [][]string{{"-p", "limit=many"}, {}, {"-p", "limit=1", "-p", "region=ap"}, {"-p", "limit=1", "-p", "colour=red"}} {
			out, err := axCLI(t, append([]string{"trigger", "export", "-addr", follower.HTTPAddr}, bad...)...)
			if err == nil || !strings.Contains(err.Error(), "params.") {
				t.Fatalf("trigger %v: %q %v, want a refusal naming the parameter", bad, out, err)
			}
		}
		if l, err := cl.ListInstances(ctx, model.InstanceFilter{Task: "export"}); err != nil || len(l.Instances) != 0 {
			t.Fatalf("refused triggers wrote %+v (%v)", l, err)
		}
		out, err := axCLI(t, "trigger", "export", "-addr", follower.HTTPAddr, "-p", "limit=5", "-wait", "-log")
		if err != nil || !strings.Contains(out, "eu 5") {
			t.Fatalf("trigger with limit=5: %q %v, want the default region and the limit in its output", out, err)
		}
	})

	calendarChecks(t, ctx, c)

	t.Run("quartz day extensions", func(t *testing.T) {
		// The last weekday of the month, read back through a follower:
		// every next fire time is one.
		follower, _, err := c.Follower(ctx, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		task := &model.Task{Name: "month-end", Trigger: model.Trigger{Type: model.TriggerCron, Expression: "0 18 LW * ?"},
			Action: model.Action{Type: model.ActionShell, Command: "true"}}
		testkit.Eventually(t, 30*time.Second, func() error { _, err := cl.PutTask(ctx, task); return err }) // protocol 8
		got, err := client.New(client.Config{Addrs: []string{follower.HTTPAddr}}).GetTask(ctx, "month-end")
		if err != nil || len(got.NextFireTimes) < 3 {
			t.Fatalf("month-end: %+v %v, want its next fires", got, err)
		}
		for _, f := range got.NextFireTimes {
			d := f.UTC()
			last := time.Date(d.Year(), d.Month()+1, 0, 0, 0, 0, 0, time.UTC).Day()
			lastWeekday := last
			for wd := time.Date(d.Year(), d.Month(), lastWeekday, 0, 0, 0, 0, time.UTC).Weekday(); wd == time.Saturday || wd == time.Sunday; wd = time.Date(d.Year(), d.Month(), lastWeekday, 0, 0, 0, 0, time.UTC).Weekday() {
				lastWeekday--
			}
			if d.Hour() != 18 || d.Minute() != 0 || d.Day() != lastWeekday {
				t.Fatalf("fire %s: want 18:00 on the month's last weekday, the %d", d, lastWeekday)
			}
		}
	})

	t.Run("upstream failure", func(t *testing.T) {
		midnight := time.Now().UTC().Truncate(24 * time.Hour)
		yesterday := model.BackfillRequest{From: model.Time{Time: midnight.Add(-24 * time.Hour)}, To: model.Time{Time: midnight.Add(-24 * time.Hour)}}
		want := map[string]string{"wait": model.StateBlocked, "skip": model.StateSkipped, "fail": model.StateFailed}
		reports := map[string]string{}
		for _, p := range []string{"wait", "skip", "fail"} {
			up, down := "up-"+p, "down-"+p
			for _, task := range []*model.Task{dailyTask(up, "exit 3", model.Policy{}),
				dailyTask(down, "true", model.Policy{DependsOn: []string{up}, OnUpstreamFailure: p})} {
				if _, err := cl.PutTask(ctx, task); err != nil {
					t.Fatal(err)
				}
			}
			rep, err := cl.Backfill(ctx, down, yesterday)
			if err != nil || len(rep.Created) != 1 {
				t.Fatalf("backfill %s: %+v %v", down, rep, err)
			}
			reports[p] = rep.Created[0]
			agenttest.WaitState(t, cl, rep.Created[0], 10*time.Second, model.StateBlocked)
			ups, err := cl.Backfill(ctx, up, yesterday)
			if err != nil || len(ups.Created) != 1 {
				t.Fatalf("backfill %s: %+v %v", up, ups, err)
			}
			agenttest.WaitState(t, cl, ups.Created[0], 30*time.Second, model.StateFailed)
		}
		for p, id := range reports {
			in := agenttest.WaitState(t, cl, id, 10*time.Second, want[p])
			switch p {
			case "skip":
				if !hasEvent(in, "upstream_failed", "upstream up-skip instance") {
					t.Errorf("skip: events %+v, want upstream_failed naming the upstream instance", in.Events)
				}
			case "fail":
				if !strings.Contains(in.LastError, "upstream up-fail instance") {
					t.Errorf("fail: lastError %q, want it to name the upstream instance", in.LastError)
				}
			}
		}
	})

	t.Run("maxQueued overflow", func(t *testing.T) {
		task := shellTask("queued", "sleep 3", model.Policy{MaxConcurrency: 1, MaxQueued: 2, Timeout: model.NoTimeout})
		if _, err := cl.PutTask(ctx, task); err != nil {
			t.Fatal(err)
		}
		var ids []string
		for range 5 {
			ids = append(ids, trigger(t, cl, "queued"))
		}
		states := map[string]int{}
		for i, id := range ids {
			in, err := cl.GetInstance(ctx, id, client.Consistent())
			if err != nil {
				t.Fatal(err)
			}
			states[in.State]++
			if i >= 3 && (in.State != model.StateSkipped || !hasEvent(in, "queue_full", "2 instances already queued")) {
				t.Errorf("instance %d: %s %+v, want SKIPPED with queue_full", i, in.State, in.Events)
			}
		}
		if states[model.StateBlocked] != 2 || states[model.StateSkipped] != 2 {
			t.Errorf("states %v, want 2 BLOCKED and 2 SKIPPED", states)
		}
		// The queued ones run after all.
		for _, id := range ids[1:3] {
			agenttest.WaitState(t, cl, id, 30*time.Second, model.StateSuccess)
		}
	})

	t.Run("default timeout", func(t *testing.T) {
		if _, err := cl.PutTask(ctx, shellTask("hung", "sleep 600", model.Policy{})); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		in := agenttest.WaitState(t, cl, trigger(t, cl, "hung"), 30*time.Second, model.StateFailed)
		if len(in.AttemptList) != 1 || in.AttemptList[0].Outcome != model.OutcomeTimeout {
			t.Fatalf("attempts %+v, want one timed out", in.AttemptList)
		}
		if took := time.Since(start); took > 20*time.Second {
			t.Fatalf("the hung script ran %s with a 2s default timeout", took)
		}
	})
}

// TestPolicy_OnSuccessOnceAcrossLeaderKill: the leader is killed (-9)
// right after an instance with onSuccess completes; the chained instance
// exists exactly once, on every node, with its parent, and runs.
func TestPolicy_OnSuccessOnceAcrossLeaderKill(t *testing.T) {
	c := startCluster(t, 3, withArgs("-lease", "2s"))
	if _, err := c.StartExecutor("exec-a", "-capacity", "4"); err != nil {
		t.Fatal(err)
	}
	waitProto4(t, c)
	cl := c.Client()
	ctx := ctxT(t, 120*time.Second)
	for _, task := range []*model.Task{
		shellTask("extract", "sleep 1; echo extracted", model.Policy{OnSuccess: []model.Chain{{Task: "load", Params: map[string]string{"table": "orders"}}}}),
		// Retries: its first attempt may be leased by the leader that is
		// killed, and lost with it.
		shellTask("load", `echo "loading $AX_PARAM_TABLE for $AX_PARAM_PARENT_INSTANCE"`,
			model.Policy{MaxRetries: 5, RetryInterval: model.Duration(time.Second)}),
	} {
		if _, err := cl.PutTask(ctx, task); err != nil {
			t.Fatal(err)
		}
	}
	leader, err := c.Leader(ctx, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	lc := leader.Client()
	id := trigger(t, cl, "extract")
	// Kill the leader the moment it has applied the success.
	testkit.Eventually(t, 30*time.Second, func() error {
		in, err := lc.GetInstance(ctx, id)
		if err != nil {
			return err
		}
		if in.State != model.StateSuccess {
			return fmt.Errorf("extract is %s, want SUCCESS", in.State)
		}
		return nil
	})
	leader.Kill()
	if _, err := c.Leader(ctx, 20*time.Second); err != nil {
		t.Fatal(err)
	}
	var loads []model.Instance
	testkit.Eventually(t, 30*time.Second, func() error {
		l, err := cl.ListInstances(ctx, model.InstanceFilter{Task: "load", Limit: 1000}, client.Consistent())
		if err != nil {
			return err
		}
		loads = l.Instances
		if len(loads) != 1 {
			return fmt.Errorf("%d load instances, want 1", len(loads))
		}
		if loads[0].State != model.StateSuccess {
			return fmt.Errorf("load is %s", loads[0].State)
		}
		return nil
	})
	l := loads[0]
	if l.Source != model.SourceDependency || l.Params["parent_instance"] != id || l.Params["parent_task"] != "extract" || l.Params["table"] != "orders" {
		t.Fatalf("load %+v, want source dependency with table and the parent", l)
	}
	// The killed node comes back with the same single instance.
	if err := leader.Start(); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 30*time.Second, func() error {
		l, err := leader.Client().ListInstances(ctx, model.InstanceFilter{Task: "load", Limit: 10})
		if err != nil {
			return err
		}
		if len(l.Instances) != 1 || l.Instances[0].State != model.StateSuccess {
			return fmt.Errorf("restarted node: %d load instances", len(l.Instances))
		}
		return nil
	})
	// Nothing more appears later.
	time.Sleep(2 * time.Second)
	if n := len(instancesOf(t, cl, "load")); n != 1 {
		t.Fatalf("%d load instances after the dust settled, want 1", n)
	}
}
