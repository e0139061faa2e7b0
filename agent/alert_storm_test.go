package agent

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/api"
	"github.com/ax-scheduler/ax/internal/testkit"
	"github.com/ax-scheduler/ax/model"
)

// TestAgent_AlertStormShareEntries: a burst of failures is alerted by
// concurrent handlers whose proposals meet in the group commit, not one
// failure after another with two Raft entries each (2 x 400 = 800 here;
// lease and report batches add a few dozen).
func TestAgent_AlertStormShareEntries(t *testing.T) {
	const n = 400
	a := startAgent(t, func(c *Config) { c.Executor, c.ExecutorCapacity = true, 512 })
	ctx := context.Background()
	c := api.Caller{Actor: "tester"}
	task := &model.Task{Name: "storm", Trigger: model.Trigger{Type: model.TriggerEvent},
		Action: model.Action{Type: model.ActionHTTP, URL: "http://" + testkit.FreeAddr(t) + "/down", Method: "POST"},
		Policy: model.Policy{MaxConcurrency: n}}
	if _, err := a.tasks.PutTask(ctx, c, task, api.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	lastIndex := func() uint64 {
		i, _ := strconv.ParseUint(a.node.Stats()["last_log_index"], 10, 64)
		return i
	}
	before := lastIndex()
	if _, err := a.tasks.Submit(ctx, c, "storm", make([]model.SubmitRequest, n)); err != nil {
		t.Fatal(err)
	}
	testkit.Until(t, 60*time.Second, "every failure alerted", func() bool {
		// All failed first: a failure is pending from the entry that
		// fails it, so none can slip in after the pending check.
		l, err := a.fsm.ListInstances(model.InstanceFilter{Task: "storm", State: model.StateFailed, Limit: n})
		if err != nil || len(l.Instances) != n {
			return false
		}
		ids, err := a.fsm.PendingAlerts()
		return err == nil && len(ids) == 0
	})
	if grew := lastIndex() - before; grew > n {
		t.Fatalf("%d failures took %d Raft entries, want at most %d", n, grew, n)
	} else {
		t.Logf("%d failures alerted in %d Raft entries", n, grew)
	}
}
