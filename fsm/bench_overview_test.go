package fsm

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/ax-scheduler/ax/model"
)

// BenchmarkOverview measures the overview query (ns/op), and instance
// listings by an unfinished state, on a state
// machine of 1,000 tasks and 1,000,000 instances built through the apply
// path: 100,000 fired (READY, in the active index) and 900,000 delayed
// (SCHEDULED), then 20,000 of the fired ones run to an end (half failed),
// so the stats minutes, recent failures and active index all hold data.
func BenchmarkOverview(b *testing.B) {
	const (
		tasks     = 1000
		instances = 1_000_000
		perEntry  = 10_000 // 100 submit commands of 100 in one group-commit entry
		perCmd    = 100
		finished  = 20_000
	)
	f, err := Open(Config{Path: filepath.Join(b.TempDir(), "fsm.db"), NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	start := time.Now()
	index, now := uint64(0), t0
	apply := func(c *Command) *Result {
		index++
		now += 50
		out := f.ApplyBatch([]*raft.Log{{Index: index, Term: 1, Type: raft.LogCommand, Data: c.Encode()}})
		switch r := out[0].(type) {
		case *Result:
			if r.Err != nil {
				b.Fatal(r.Err)
			}
			return r
		case *BatchResult:
			for _, sub := range r.Results {
				if sub.Err != nil {
					b.Fatal(sub.Err)
				}
			}
		}
		return nil
	}
	var puts []*Command
	for i := range tasks {
		t := model.Task{Name: fmt.Sprintf("task-%04d", i), Trigger: model.Trigger{Type: model.TriggerEvent},
			Action: model.Action{Type: model.ActionShell, Command: "true"}, Policy: model.Policy{MaxConcurrency: 1 << 20},
			Labels: map[string]string{"team": "a"}, Paused: i%10 == 0}
		c, err := NewCommand(CmdPutTask, "", "bench", PutTask{Task: t})
		if err != nil {
			b.Fatal(err)
		}
		puts = append(puts, c)
	}
	apply(EncodeBatch(now, "n1", puts))
	var ready []uint64
	for e := 0; e < instances/perEntry; e++ {
		cmds := make([]*Command, perEntry/perCmd)
		for i := range cmds {
			items := make([]SubmitItem, perCmd)
			delay := int64(3_600_000)
			if e%10 == 0 {
				delay = 0 // due now: READY
			}
			for j := range items {
				items[j] = SubmitItem{DelayMs: delay}
			}
			cmds[i] = &Command{Type: CmdSubmit, Actor: "bench", Body: EncodeSubmit(&Submit{Task: fmt.Sprintf("task-%04d", (e*len(cmds)+i)%tasks), Items: items})}
		}
		r := f.ApplyBatch([]*raft.Log{{Index: index + 1, Term: 1, Type: raft.LogCommand, Data: EncodeBatch(now, "n1", cmds).Encode()}})[0].(*BatchResult)
		index++
		now += 50
		if e%10 == 0 {
			for _, sub := range r.Results {
				ready = append(ready, submittedIDs(b, sub)...)
			}
		}
	}
	for i := 0; i < finished; i += 1000 {
		ids := ready[i : i+1000]
		c, _ := NewCommand(CmdLease, "", "bench", Lease{Executor: "e1", IDs: ids, LeaseMs: 30_000})
		c.Now, c.Node = now, "n1"
		apply(c)
		cs := make([]Complete, len(ids))
		for j, id := range ids {
			cs[j] = Complete{ID: id, Attempt: 1, Report: model.CompleteRequest{Executor: "e1", Success: j%2 == 0, Error: "boom"}}
		}
		apply(&Command{Type: CmdCompleteBatch, Now: now, Node: "n1", Body: EncodeCompleteBatch(cs)})
	}
	o, err := f.Overview(now)
	if err != nil {
		b.Fatal(err)
	}
	if o.Counts.Scheduled != 900_000 || o.Counts.Ready+o.Counts.Running != 100_000-finished ||
		o.LastDay.Fired != 100_000 || o.LastDay.Failed != finished/2 || o.Tasks.Paused != 100 {
		b.Fatalf("fixture: %+v", o)
	}
	b.Logf("built 1,000 tasks and 1,000,000 instances in %s", time.Since(start).Round(time.Millisecond))
	b.Run("overview", func(b *testing.B) {
		for b.Loop() {
			if _, err := f.Overview(now); err != nil {
				b.Fatal(err)
			}
		}
	})
	// Listing by an unfinished state walks the active index (80,000
	// READY here), not the million records.
	for _, st := range []string{model.StateReady, model.StateBlocked} {
		b.Run("instances?state="+st, func(b *testing.B) {
			for b.Loop() {
				if _, err := f.ListInstances(model.InstanceFilter{State: st, Limit: 100}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
