package execution

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/client"
	"github.com/ax-scheduler/ax/internal/clustertest"
	"github.com/ax-scheduler/ax/internal/testkit"
	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/model/member"
)

// killLeaderDuring starts a per-second task, kills the leader once it
// has fired a few times, waits for the next leader to fire a few more,
// restarts the old leader and returns the instances and misfire count.
func killLeaderDuring(t *testing.T, c clustertest.Cluster, task *model.Task) ([]model.Instance, int64, time.Time) {
	t.Helper()
	ctx := ctxT(t, 120*time.Second)
	cl := c.Client()
	if _, err := cl.PutTask(ctx, task); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 15*time.Second, func() error {
		in, err := allInstances(ctx, cl, task.Name)
		if err != nil || len(in) < 3 {
			return fmt.Errorf("%d instances (%v)", len(in), err)
		}
		return nil
	})
	leader, err := c.Leader(ctx, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	leader.Kill()
	killed := time.Now()
	surv := c.Client(clustertest.Others(c, leader)...)
	// The new leader resumes firing: wait for fires well after the kill.
	testkit.Eventually(t, 20*time.Second, func() error {
		in, err := allInstances(ctx, surv, task.Name)
		if err != nil {
			return err
		}
		after := 0
		for _, i := range in {
			if i.ScheduledAt.After(killed.Add(2 * time.Second)) {
				after++
			}
		}
		if after < 3 {
			return fmt.Errorf("%d fires after the kill", after)
		}
		return nil
	})
	if err := leader.Start(); err != nil {
		t.Fatal(err)
	}
	// Pause so the set of instances stops growing, then read it.
	if _, err := surv.PauseTask(ctx, task.Name); err != nil {
		t.Fatal(err)
	}
	insts, err := allInstances(ctx, surv, task.Name)
	if err != nil {
		t.Fatal(err)
	}
	ev, err := surv.TaskEvents(ctx, task.Name, client.Consistent())
	if err != nil {
		t.Fatal(err)
	}
	var missed int64
	for _, e := range ev.Events {
		if e.Type == "misfire" {
			var n int64
			fmt.Sscanf(e.Message, "%d", &n)
			missed += n
		}
	}
	return insts, missed, killed
}

// TestFire_PerSecondCronAcrossLeaderKill (on both implementations): with
// catchup "all", a per-second cron task has exactly one instance per
// second across a kill of the leader, with no gap.
func TestFire_PerSecondCronAcrossLeaderKill(t *testing.T) {
	clustertest.Each(t, both, 3, func(t *testing.T, c clustertest.Cluster) {
		insts, missed, killed := killLeaderDuring(t, c, perSecondTask("every-second-all", "all"))
		times := fireTimes(t, insts)
		for i := 1; i < len(times); i++ {
			if d := times[i].Sub(times[i-1]); d != time.Second {
				t.Fatalf("gap of %s between fire times %s and %s", d, times[i-1].Format(model.TimeLayout), times[i].Format(model.TimeLayout))
			}
		}
		if missed != 0 {
			t.Fatalf("%d misfires recorded, want 0 with catchup all", missed)
		}
		if !times[0].Before(killed) || !times[len(times)-1].After(killed) {
			t.Fatalf("fires %s..%s do not span the kill at %s", times[0], times[len(times)-1], killed)
		}
		t.Logf("%d instances, one per second from %s to %s, across the leader kill", len(times), times[0].Format("15:04:05"), times[len(times)-1].Format("15:04:05"))
	})
}

// TestFire_LatestAcrossLeaderKill (on both implementations): with
// catchup "latest" the seconds missed during the failover collapse into
// one instance (the latest) and the others are recorded as misfires:
// instances + misfires cover every second.
func TestFire_LatestAcrossLeaderKill(t *testing.T) {
	clustertest.Each(t, both, 3, func(t *testing.T, c clustertest.Cluster) {
		insts, missed, _ := killLeaderDuring(t, c, perSecondTask("every-second-latest", "latest"))
		times := fireTimes(t, insts)
		span := int64(times[len(times)-1].Sub(times[0])/time.Second) + 1
		if int64(len(times))+missed != span {
			t.Fatalf("%d instances + %d misfires != %d seconds spanned: a fire time was lost or doubled", len(times), missed, span)
		}
		gaps := 0
		for i := 1; i < len(times); i++ {
			if times[i].Sub(times[i-1]) > time.Second {
				gaps++
			}
		}
		if gaps > 1 {
			t.Fatalf("%d gaps, want at most one (the failover)", gaps)
		}
		t.Logf("%d instances and %d misfires over %d seconds", len(times), missed, span)
	})
}

// TestFire_DelayedSubmissionsAcrossLeaderKill (on both implementations)
// submits 10,000 delayed instances due over a few seconds and kills the
// leader while they come due: every one fires exactly once, none early.
func TestFire_DelayedSubmissionsAcrossLeaderKill(t *testing.T) {
	clustertest.Each(t, both, 3, func(t *testing.T, c clustertest.Cluster) {
		ctx := ctxT(t, 120*time.Second)
		cl := c.Client()
		delayed := eventTask("delayed")
		delayed.Policy.MaxConcurrency = 10000 // no executor runs them: all stay READY
		if _, err := cl.PutTask(ctx, delayed); err != nil {
			t.Fatal(err)
		}
		const total = 10000
		var ids []string
		for b := 0; b < total/1000; b++ {
			reqs := make([]model.SubmitRequest, 1000)
			for i := range reqs {
				n := b*1000 + i
				p, _ := json.Marshal(map[string]int{"n": n})
				reqs[i] = model.SubmitRequest{Payload: p, Delay: model.Duration(3*time.Second + time.Duration(n%6000)*time.Millisecond)}
			}
			res, err := cl.SubmitBatch(ctx, "delayed", reqs)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range res.Instances {
				ids = append(ids, s.ID)
			}
		}
		leader, err := c.Leader(ctx, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		// Kill the leader while the submissions are coming due.
		waitHealth(ctx, t, leader, 10*time.Second, func(h *member.Health) error {
			if h.Pending > total*9/10 {
				return fmt.Errorf("%d pending", h.Pending)
			}
			return nil
		})
		leader.Kill()
		survivors := clustertest.Others(c, leader)
		surv := c.Client(survivors...)
		testkit.Eventually(t, 30*time.Second, func() error {
			h, err := survivors[0].Client().Health(ctx)
			if err != nil {
				return err
			}
			if h.Pending != 0 {
				return fmt.Errorf("%d still pending", h.Pending)
			}
			return nil
		})
		insts, err := allInstances(ctx, surv, "delayed")
		if err != nil {
			t.Fatal(err)
		}
		if len(insts) != total {
			t.Fatalf("got %d instances, want %d", len(insts), total)
		}
		seen := map[string]bool{}
		lateMax := time.Duration(0)
		for _, in := range insts {
			if seen[in.ID] {
				t.Fatalf("instance %s listed twice", in.ID)
			}
			seen[in.ID] = true
			if in.State != model.StateReady {
				t.Fatalf("instance %s is %s, want READY", in.ID, in.State)
			}
			if in.FiredAt.Before(in.ScheduledAt.Time) {
				t.Fatalf("instance %s fired early: due %s fired %s", in.ID, in.ScheduledAt.Format(model.TimeLayout), in.FiredAt.Format(model.TimeLayout))
			}
			lateMax = max(lateMax, in.FiredAt.Sub(in.ScheduledAt.Time))
		}
		for _, id := range ids {
			if !seen[id] {
				t.Fatalf("submitted instance %s missing", id)
			}
		}
		t.Logf("%d delayed instances fired exactly once across the leader kill, none early; max lateness %s (includes the failover)", total, lateMax)
	})
}

// TestFire_Backfill: a backfill creates one instance per past fire time
// that has none (regular fires included), and a second one creates none.
func TestFire_Backfill(t *testing.T) {
	c := startCluster(t, 3)
	ctx := ctxT(t, 60*time.Second)
	cl := c.Client()
	task := &model.Task{Name: "every2s", Trigger: model.Trigger{Type: model.TriggerInterval, Every: model.Duration(2 * time.Second)},
		Action: model.Action{Type: model.ActionShell, Command: "true"}, Policy: model.Policy{MaxConcurrency: 1000}}
	if _, err := cl.PutTask(ctx, task); err != nil {
		t.Fatal(err)
	}
	// Let it fire a couple of times on its own.
	testkit.Eventually(t, 15*time.Second, func() error {
		in, err := allInstances(ctx, cl, "every2s")
		if err != nil || len(in) < 2 {
			return fmt.Errorf("%d instances (%v)", len(in), err)
		}
		return nil
	})
	now := time.Now()
	req := model.BackfillRequest{From: model.Time{Time: now.Add(-60 * time.Second)}, To: model.Time{Time: now.Add(-time.Second)}}
	res, err := cl.Backfill(ctx, "every2s", req)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Created) < 25 || res.Existing < 1 {
		t.Fatalf("backfill created %d, skipped %d; want ~29 created and the regular fires skipped", len(res.Created), res.Existing)
	}
	again, err := c.Nodes[1].Client().Backfill(ctx, "every2s", req) // through any node
	if err != nil {
		t.Fatal(err)
	}
	if len(again.Created) != 0 {
		t.Fatalf("second backfill created %d instances, want 0", len(again.Created))
	}
	if _, err := cl.PauseTask(ctx, "every2s"); err != nil {
		t.Fatal(err)
	}
	insts, err := allInstances(ctx, cl, "every2s")
	if err != nil {
		t.Fatal(err)
	}
	fireTimes(t, insts) // fails on two instances for one fire time
	backfilled := 0
	for _, in := range insts {
		if in.Source == model.SourceBackfill {
			backfilled++
		}
	}
	if backfilled != len(res.Created) {
		t.Fatalf("%d backfill instances, want %d", backfilled, len(res.Created))
	}
}
