package fanout

import (
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/client"
	"github.com/ax-scheduler/ax/internal/testkit"
	"github.com/ax-scheduler/ax/model"
)

// TestExec_Priority: with a backlog of READY instances of a low- and a
// high-priority task (policy.priority -10 and 10) and one executor of
// capacity 1, the high-priority instances start first, though the low
// ones were READY earlier (issue 24, priorities).
func TestExec_Priority(t *testing.T) {
	c := startCluster(t, 1)
	cl := c.Client()
	ctx := ctxT(t, 90*time.Second)
	for name, p := range map[string]int{"low": -10, "high": 10} {
		tk := shellTask(name, "true", model.Policy{MaxConcurrency: 100, Priority: p})
		testkit.Eventually(t, 30*time.Second, func() error { _, err := cl.PutTask(ctx, tk); return err }) // protocol 8
	}
	const each = 8
	for _, name := range []string{"low", "high"} { // the low ones first
		if _, err := cl.SubmitBatch(ctx, name, make([]model.SubmitRequest, each)); err != nil {
			t.Fatal(err)
		}
	}
	testkit.Eventually(t, 30*time.Second, func() error {
		for _, name := range []string{"low", "high"} {
			if n := countState(t, cl, name, model.StateReady); n != each {
				return fmt.Errorf("%s: %d READY, want %d", name, n, each)
			}
		}
		return nil
	})
	if _, err := c.StartExecutor("solo", "-capacity", "1"); err != nil {
		t.Fatal(err)
	}
	var all []model.Instance
	testkit.Eventually(t, 60*time.Second, func() error {
		all = append(instancesOf(t, cl, "low"), instancesOf(t, cl, "high")...)
		for _, in := range all {
			if in.State != model.StateSuccess {
				return fmt.Errorf("instance %s of %s is %s", in.ID, in.Task, in.State)
			}
		}
		return nil
	})
	sort.Slice(all, func(i, j int) bool { return all[i].StartedAt.Before(all[j].StartedAt.Time) })
	for i, in := range all[:each] {
		if in.Task != "high" {
			t.Fatalf("start %d was %s instance %s: the high-priority backlog should go first (starts: %v)", i+1, in.Task, in.ID, taskOrder(all))
		}
	}
}

func countState(t *testing.T, cl *client.Client, task, state string) int {
	n := 0
	for _, in := range instancesOf(t, cl, task) {
		if in.State == state {
			n++
		}
	}
	return n
}

func taskOrder(l []model.Instance) []string {
	out := make([]string, len(l))
	for i, in := range l {
		out[i] = in.Task
	}
	return out
}
