package agent

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/api"
	"github.com/ax-scheduler/ax/model"
)

// TestAgent_RestoreQuietCluster: on a cluster with nothing else to write,
// a linearizable read on every node right after a restore into it
// answers from the restored state, within a bound, on three nodes
// through a follower and on one node. (With Raft's user restore, the
// restore sat at an index past the whole log while the state recorded
// the index it was saved at, and without an entry after it the read
// waited for the next write; the switch of a restore through the log is
// itself the last entry, and records its own index.)
func TestAgent_RestoreQuietCluster(t *testing.T) {
	for _, n := range []int{3, 1} {
		t.Run(fmt.Sprintf("%d-node", n), func(t *testing.T) { restoreQuiet(t, n) })
	}
}

func restoreQuiet(t *testing.T, nodes int) {
	tc := startCluster(t, nodes, nil)
	tc.waitMemberKey(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	l := tc.leader()
	caller := api.Caller{Actor: "tester"}
	if _, err := l.tasks.PutTask(ctx, caller, eventTask("saved"), api.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := l.rep.ReadBarrier(ctx); err != nil {
		t.Fatal(err)
	}
	var state bytes.Buffer
	if err := l.cl.Snapshot(ctx, &state, func(uint64) {}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.tasks.PutTask(ctx, caller, eventTask("after-save"), api.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	f := l
	if nodes > 1 {
		f = tc.follower(l)
	}
	info, err := f.cl.Restore(ctx, bytes.NewReader(state.Bytes()), "")
	if err != nil {
		t.Fatal(err)
	}
	if info.Tasks != 1 {
		t.Errorf("restored %+v, want 1 task", info)
	}
	for _, a := range tc.agents {
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := a.rep.ReadBarrier(rctx)
		cancel()
		if err != nil {
			t.Fatalf("node %s: a read barrier after the restore: %v", a.cfg.NodeID, err)
		}
		if _, err := a.tasks.GetTask(ctx, "saved"); err != nil {
			t.Errorf("node %s: the saved task: %v", a.cfg.NodeID, err)
		}
		if _, err := a.tasks.GetTask(ctx, "after-save"); !errors.Is(err, model.ErrNotFound) {
			t.Errorf("node %s: a task written after the save: %v", a.cfg.NodeID, err)
		}
	}
	// The file received is not left in the data dir.
	left, _ := filepath.Glob(filepath.Join(f.cfg.DataDir, "restore-*"))
	if len(left) != 0 {
		t.Errorf("left in the data dir: %v", left)
	}
}
