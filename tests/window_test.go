package tests

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/client"
	"github.com/ax-scheduler/ax/internal/clustertest"
	"github.com/ax-scheduler/ax/internal/testkit"
	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/model/live"
	"github.com/ax-scheduler/ax/model/member"
	"github.com/ax-scheduler/ax/trigger"
)

// waitProto7 waits until the cluster has reached the protocol of trigger
// windows, maxRuns and jitter.
func waitProto7(ctx context.Context, t *testing.T, n clustertest.Node) {
	t.Helper()
	waitHealth(ctx, t, n, 30*time.Second, func(h *member.Health) error {
		if h.Protocol < 7 {
			return fmt.Errorf("cluster at protocol %d", h.Protocol)
		}
		return nil
	})
}

// taskFires reads GET /v1/tasks/{name}/fires.
func taskFires(ctx context.Context, cl *client.Client, name string) (*live.TaskFires, error) {
	var f live.TaskFires
	err := cl.Do(ctx, client.Request{Method: http.MethodGet, Path: "/v1/tasks/" + name + "/fires"}, &f)
	return &f, err
}

// TestWindow_MaxRunsAcrossLeaderKill (on both implementations): a task
// with maxRuns 3, written through a follower, fires exactly 3 times
// although its leader is killed after the second fire and the new leader
// catches up on what it missed; it then reports completed (task, CLI,
// fires), on every node; raising maxRuns makes it fire once more.
func TestWindow_MaxRunsAcrossLeaderKill(t *testing.T) {
	clustertest.Each(t, both, 3, func(t *testing.T, c clustertest.Cluster) {
		ctx := ctxT(t, 120*time.Second)
		leader, err := c.Leader(ctx, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		waitProto7(ctx, t, leader)
		follower := clustertest.Others(c, leader)[0]
		cl := c.Client(follower)
		task := &model.Task{Name: "limited", Trigger: model.Trigger{Type: model.TriggerCron, Expression: "*/2 * * * * *", MaxRuns: 3},
			Action: model.Action{Type: model.ActionShell, Command: "true"}, Policy: model.Policy{Catchup: "all"}}
		if _, err := cl.PutTask(ctx, task); err != nil {
			t.Fatal(err)
		}
		count := func(cl *client.Client) int {
			insts, err := clustertest.AllInstances(ctx, cl, "limited")
			if err != nil {
				return -1
			}
			clustertest.FireTimes(t, insts) // one instance per fire time
			return len(insts)
		}
		testkit.Eventually(t, 20*time.Second, func() error {
			if n := count(cl); n < 2 {
				return fmt.Errorf("%d instances", n)
			}
			return nil
		})
		leader.Kill()
		survivor := clustertest.Others(c, leader)
		scl := c.Client(survivor...)
		testkit.Eventually(t, 30*time.Second, func() error {
			if n := count(scl); n != 3 {
				return fmt.Errorf("%d instances, want 3", n)
			}
			return nil
		})
		// Three more fire times pass with no fourth run.
		insts, err := clustertest.AllInstances(ctx, scl, "limited")
		if err != nil {
			t.Fatal(err)
		}
		last := clustertest.FireTimes(t, insts)[2]
		testkit.Eventually(t, 20*time.Second, func() error {
			if n := count(scl); n != 3 {
				t.Fatalf("%d instances after maxRuns 3", n)
			}
			if since := time.Since(last); since < 3*2*time.Second {
				return fmt.Errorf("%s since the third fire, waiting for three more fire times", since)
			}
			return nil
		})
		if err := leader.Start(); err != nil {
			t.Fatal(err)
		}
		for _, n := range c.Nodes() {
			testkit.Eventually(t, 30*time.Second, func() error {
				got, err := n.Client().GetTask(ctx, "limited", client.Consistent())
				if err != nil {
					return err
				}
				if got.Runs != 3 || got.Completed != "maxRuns 3 reached (3 runs)" || len(got.NextFireTimes) != 0 {
					return fmt.Errorf("%s: runs %d, completed %q, next %v", n.ID(), got.Runs, got.Completed, got.NextFireTimes)
				}
				return nil
			})
		}
		f, err := taskFires(ctx, cl, "limited")
		if err != nil || len(f.Fires) != 0 || f.Completed == "" {
			t.Fatalf("fires: %+v, %v; want none, completed", f, err)
		}
		out, err := clustertest.AxOutput(t, axBinary, append([]string{"task", "get", "limited"}, cliAddr(c, follower)...)...)
		if err != nil || !strings.Contains(out, "Runs:") || !strings.Contains(out, "3 of maxRuns 3") || !strings.Contains(out, "maxRuns 3 reached") {
			t.Fatalf("ax task get:\n%s\n%v", out, err)
		}

		// Raising maxRuns: one more fire, then completed again.
		task.Trigger.MaxRuns = 4
		if _, err := cl.PutTask(ctx, task); err != nil {
			t.Fatal(err)
		}
		testkit.Eventually(t, 20*time.Second, func() error {
			got, err := cl.GetTask(ctx, "limited", client.Consistent())
			if err != nil {
				return err
			}
			if n := count(cl); n != 4 || got.Runs != 4 || got.Completed == "" {
				return fmt.Errorf("%d instances, runs %d, completed %q", n, got.Runs, got.Completed)
			}
			return nil
		})
	})
}

// cliAddr returns the ax CLI flags that reach node n of c.
func cliAddr(c clustertest.Cluster, n clustertest.Node) []string {
	cfg := c.ClientConfig(n)
	args := []string{"-addr", strings.Join(cfg.Addrs, ",")}
	if cfg.Token != "" {
		args = append(args, "-token", cfg.Token)
	}
	return args
}

// TestWindow_JitterAndEndAt (real processes, through a follower): a
// jittered task's instances keep their nominal scheduled time and fire at
// the offsets trigger.Jitter predicts (never before, and late by little),
// say so in their fired event, fire only within the task's window, and
// the task then reports completed.
func TestWindow_JitterAndEndAt(t *testing.T) {
	clustertest.Each(t, []clustertest.Impl{clustertest.ProcessImpl()}, 3, func(t *testing.T, c clustertest.Cluster) {
		ctx := ctxT(t, 120*time.Second)
		leader, err := c.Leader(ctx, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		waitProto7(ctx, t, leader)
		cl := c.Client(clustertest.Others(c, leader)[0])
		const period, jitter = 5 * time.Second, 4 * time.Second
		start := time.Now().Truncate(period).Add(2 * period)
		end := start.Add(3 * period)
		task := &model.Task{Name: "jittered", Trigger: model.Trigger{Type: model.TriggerCron, Expression: "*/5 * * * * *",
			StartAt: &model.Time{Time: start}, EndAt: &model.Time{Time: end}, Jitter: model.Duration(jitter)},
			Action: model.Action{Type: model.ActionShell, Command: "true"}, Policy: model.Policy{MaxConcurrency: 10}}
		if _, err := cl.PutTask(ctx, task); err != nil {
			t.Fatal(err)
		}
		var insts []model.Instance
		testkit.Eventually(t, time.Until(end)+20*time.Second, func() error {
			insts, err = clustertest.AllInstances(ctx, cl, "jittered")
			if err != nil {
				return err
			}
			if len(insts) < 4 {
				return fmt.Errorf("%d instances", len(insts))
			}
			return nil
		})
		times := clustertest.FireTimes(t, insts)
		for i, at := range times {
			if want := start.Add(time.Duration(i) * period); !at.Equal(want) {
				t.Errorf("fire %d scheduled at %s, want %s (the window's fire times)", i, at.UTC(), want.UTC())
			}
		}
		if len(insts) != 4 {
			t.Fatalf("%d instances, want the 4 fire times in [startAt, endAt]", len(insts))
		}
		for _, in := range insts {
			ft := in.ScheduledAt.Time
			j := trigger.Jitter("jittered", ft, ft.Add(period), jitter)
			late := in.FiredAt.Sub(ft.Add(j))
			t.Logf("fire %s: jitter %s, fired %s after the moved time", ft.UTC().Format(time.TimeOnly), j, late)
			if late < 0 || late > 2*time.Second {
				t.Errorf("fire %s: fired %s after its moved time %s (jitter %s), want within 2s and never before",
					ft.UTC(), late, ft.Add(j).UTC(), j)
			}
			full, err := cl.GetInstance(ctx, in.ID)
			if err != nil {
				t.Fatal(err)
			}
			if want := "moved +" + j.String() + " by jitter"; j != 0 && !clustertest.HasEvent(full, "fired", want) {
				t.Errorf("fire %s: events %+v, want a fired event saying %q", ft.UTC(), full.Events, want)
			}
		}
		testkit.Eventually(t, 10*time.Second, func() error {
			got, err := cl.GetTask(ctx, "jittered", client.Consistent())
			if err != nil {
				return err
			}
			if !strings.HasPrefix(got.Completed, "endAt ") {
				return fmt.Errorf("completed %q, want endAt passed", got.Completed)
			}
			return nil
		})
	})
}
