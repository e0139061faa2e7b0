package dispatch

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/fsm"
	"github.com/ax-scheduler/ax/fsm/command"
	"github.com/ax-scheduler/ax/model"
)

// shard applies a fan-out as the state machine does (m.mu held): the
// instance RUNNING, its shards READY with ids 100*id+i.
func (m *machine) shard(c *command.Command) []fsm.InstanceChange {
	var s command.Shard
	if json.Unmarshal(c.Body, &s) != nil || s.Left != "" {
		return nil
	}
	p := m.inst[s.ID]
	p.State = model.StateRunning
	out := []fsm.InstanceChange{{ID: p.ID, Task: p.Task, State: p.State, Shards: s.Count()}}
	for i := 0; i < s.Count(); i++ {
		a := &fsm.Active{ID: 100*s.ID + uint64(i), Task: p.Task, State: model.StateReady, Parent: s.ID}
		if len(s.Executors) > 0 {
			a.Pin = s.Executors[i]
		}
		m.inst[a.ID] = a
		out = append(out, fsm.InstanceChange{ID: a.ID, Task: a.Task, State: a.State, Parent: a.Parent, Pin: a.Pin})
	}
	return out
}

// shardBodies decodes the proposed shard commands.
func (m *machine) shardBodies(t *testing.T) []command.Shard {
	t.Helper()
	var out []command.Shard
	for _, c := range m.of(command.TypeShard) {
		var s command.Shard
		if err := json.Unmarshal(c.Body, &s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}

func poll(t *testing.T, m *machine, executor string, free int) []string {
	t.Helper()
	resp, err := m.d.Poll(context.Background(), model.PollRequest{Executor: executor, Free: free, WaitMs: 1})
	if err != nil {
		t.Fatal(err)
	}
	return instanceIDs(resp.Jobs)
}

// TestDispatcher_ShardsSpread: a READY instance of a sharded task is not
// leased but fanned out (policy.shards' count); an executor takes its
// share of the instance's unfinished shards among the executors with
// free slots (waiting in a poll, or polled within a second), not more;
// with no other executor free it takes the rest.
func TestDispatcher_ShardsSpread(t *testing.T) {
	tk := task("s", shellAct, nil)
	tk.Policy.Shards = 4
	m := newMachine(t, tk)
	m.ready(1, "s")
	if got := poll(t, m, "e1", 4); len(got) != 0 {
		t.Fatalf("the sharded instance itself was leased: %v", got)
	}
	m.d.fanOut(context.Background())
	if b := m.shardBodies(t); len(b) != 1 || b[0].ID != 1 || b[0].Total != 4 {
		t.Fatalf("shard commands %+v, want one of 4 shards", b)
	}
	poll(t, m, "e2", 0) // e2 has polled: it is free
	if got := poll(t, m, "e1", 4); !slices.Equal(got, []string{model.FormatID(100), model.FormatID(101)}) {
		t.Fatalf("e1 got %v while e2 is free, want its share, shards 0 and 1", got)
	}
	m.advance(2 * freshPoll) // e2 went quiet (busy elsewhere)
	if got := poll(t, m, "e1", 4); len(got) != 2 {
		t.Fatalf("e1 got %v with nobody else free, want the 2 left", got)
	}
	if r := m.d.shards.running[1]; r["e1"] != 4 {
		t.Errorf("running counts %v", r)
	}
	if n := m.d.shards.active[1]; n != 4 {
		t.Errorf("%d shards of the instance counted active, want 4", n)
	}
}

// TestDispatcher_Broadcast: a broadcast fans out to the executors there
// now, each shard leased only to its executor; one that stops polling
// for executorTTL has its waiting shard ended (shard with Left).
func TestDispatcher_Broadcast(t *testing.T) {
	tk := task("b", shellAct, nil)
	tk.Policy.Broadcast = true
	m := newMachine(t, tk)
	poll(t, m, "e2", 1)
	poll(t, m, "e1", 1)
	m.ready(2, "b")
	m.d.fanOut(context.Background())
	if b := m.shardBodies(t); len(b) != 1 || !slices.Equal(b[0].Executors, []string{"e1", "e2"}) {
		t.Fatalf("shard commands %+v, want a broadcast to e1, e2", b)
	}
	if got := poll(t, m, "e3", 4); len(got) != 0 {
		t.Fatalf("e3 got %v, shards pinned to others", got)
	}
	if got := poll(t, m, "e1", 4); !slices.Equal(got, []string{model.FormatID(200)}) {
		t.Fatalf("e1 got %v, want its shard", got)
	}
	m.advance(executorTTL + time.Second)
	poll(t, m, "e1", 0)
	m.d.shardsLeft(context.Background())
	b := m.shardBodies(t)
	if len(b) != 2 || b[1].ID != 2 || b[1].Left != "e2" {
		t.Fatalf("shard commands %+v, want e2's departure", b)
	}
}

// TestDispatcher_ShardedTaskChanged: an instance whose task is no longer
// sharded when it is due to fan out runs as it is.
func TestDispatcher_ShardedTaskChanged(t *testing.T) {
	tk := task("c", shellAct, nil)
	tk.Policy.Shards = 2
	m := newMachine(t, tk)
	m.ready(3, "c")
	m.mu.Lock()
	m.tasks["c"].Policy.Shards = 0
	m.mu.Unlock()
	m.d.fanOut(context.Background())
	if got := poll(t, m, "e1", 4); !slices.Equal(got, []string{model.FormatID(3)}) {
		t.Fatalf("got %v, want the instance leased as it is", got)
	}
}

// TestDispatcher_ExecutorCapacity: the executor list carries the
// capacity an executor declares in its polls, so a console shows running
// of a total that does not move with each lease (running + free did,
// free being what the last poll reported).
func TestDispatcher_ExecutorCapacity(t *testing.T) {
	m := newMachine(t, task("s", shellAct, nil))
	m.ready(1, "s")
	if _, err := m.d.Poll(context.Background(), model.PollRequest{Executor: "e1", Free: 16, Capacity: 16, WaitMs: 1}); err != nil {
		t.Fatal(err)
	}
	ex := m.d.Executors()
	if len(ex) != 1 || ex[0].Capacity != 16 || ex[0].Running != 1 || ex[0].Free != 16 {
		t.Fatalf("executors %+v, want capacity 16 with 1 running (free 16 as polled)", ex)
	}
}
