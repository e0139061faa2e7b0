package fsm

import (
	"path/filepath"
	"sync"
	"testing"

	"github.com/ax-scheduler/ax/fsm/command"
	"github.com/ax-scheduler/ax/model"
)

// changeLog is an Observer keeping the instance changes it is told of.
type changeLog struct {
	mu      sync.Mutex
	changes []InstanceChange
}

func (l *changeLog) TaskChanged(string)      {}
func (l *changeLog) Scheduled(uint64, int64) {}
func (l *changeLog) InstanceChanged(c InstanceChange) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.changes = append(l.changes, c)
}

// take returns the changes told since the last take.
func (l *changeLog) take() []InstanceChange {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.changes
	l.changes = nil
	return out
}

// TestNotes_ForTracing: what the observer notes carry for the tracer,
// which builds an instance's spans from them alone (a new leader has seen
// nothing before them): a shard's lease renewal names its sharded
// instance (its spans belong to that instance's trace), and a re-run
// instance's changes say it is one (its run is a span of its own, not the
// instance's root again).
func TestNotes_ForTracing(t *testing.T) {
	log := &changeLog{}
	f, err := Open(Config{Path: filepath.Join(t.TempDir(), "fsm.db"), Observer: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	fx := &policyFixture{t: t, f: f, a: &applier{t: t, f: f}, now: t0}
	writeResult(t, fx.a.apply(cmd(t, CmdSetProto, "", t0, SetProto{Proto: ProtoVersion})))
	fx.mustPut(eventTask("s", model.Policy{Shards: 2}))
	fx.mustPut(eventTask("j", model.Policy{}))
	shard := fx.fanOut(fx.trigger("s"), command.Shard{Total: 2})[0]
	fx.do(command.TypeLease, "", command.Lease{Executor: "e1", IDs: []uint64{shard}, LeaseMs: 10_000})
	log.take()
	fx.do(CmdHeartbeat, "", Heartbeat{Executor: "e1", Items: []AttemptRef{{ID: shard, Attempt: 1}}, LeaseMs: 10_000})
	parent, _ := model.ParseID(fx.inst(shard).Parent)
	if got := log.take(); len(got) != 1 || !got[0].Renewed || !got[0].Confirmed || got[0].Parent != parent {
		t.Errorf("a shard's renewal noted %+v, want one confirming renewal naming instance %d", got, parent)
	}

	id := fx.trigger("j")
	fx.runOn(id, "e1", true)
	for _, c := range log.take() {
		if c.Rerun {
			t.Errorf("a first run noted as a re-run: %+v", c)
		}
	}
	fx.mustRerun(id)
	fx.runOn(id, "e1", true)
	got := log.take()
	if len(got) == 0 {
		t.Fatal("no change noted for a re-run")
	}
	for _, c := range got {
		if c.ID == id && !c.Rerun {
			t.Errorf("a re-run's change not noted as one: %+v", c)
		}
	}
}
