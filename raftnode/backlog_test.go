package raftnode

import (
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/ax-scheduler/ax/fsm"
	"github.com/ax-scheduler/ax/fsm/command"
	"github.com/ax-scheduler/ax/internal/testkit"
	"github.com/ax-scheduler/ax/model"
)

// slowFSM applies like the state machine, taking perEntry longer for each
// entry: a node whose state machine is the slower side of a catch-up.
type slowFSM struct {
	*fsm.FSM
	perEntry time.Duration
}

func (s slowFSM) ApplyBatch(logs []*raft.Log) []interface{} {
	time.Sleep(time.Duration(len(logs)) * s.perEntry)
	return s.FSM.ApplyBatch(logs)
}

// A node catching up from the log, its state machine the slower side,
// does not queue to it (and hold decoded) more entries than its backlog
// bound and one AppendEntries request: a fresh node applying 1 ms per
// entry joins a cluster holding 200 entries of 50 KB. Before the bound it
// queued the whole log at once.
func TestNode_FollowerLogWaitsForItsStateMachine(t *testing.T) {
	const entryBytes, entries, backlog = 50 << 10, 200, 1 << 20
	nodes := startCluster(t, 2)
	leader := nodes[0]
	start, err := leader.logs.LastIndex()
	if err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("x", entryBytes)
	futures := make([]*ApplyFuture, entries)
	for i := range futures {
		c, err := command.New(command.TypePutTask, "", "test", command.PutTask{Task: model.Task{
			Name: "t" + strconv.Itoa(i), Trigger: model.Trigger{Type: model.TriggerEvent},
			Action: model.Action{Type: model.ActionShell, Command: "true #" + big},
		}})
		if err != nil {
			t.Fatal(err)
		}
		c.Now = time.Now().UnixMilli()
		futures[i] = leader.ApplyAsync(c.Encode())
	}
	for _, f := range futures {
		if _, err := f.Wait(); err != nil {
			t.Fatal(err)
		}
	}
	// A third node joins and catches up from the log.
	follower := addNode(t, nodes, func(_ int, cfg *Config) {
		cfg.FSM = slowFSM{FSM: cfg.FSM.(*fsm.FSM), perEntry: time.Millisecond}
		cfg.backlogBytes = backlog
	})
	last := start + entries
	// At most the bound's entries plus one request's may be queued to the
	// state machine and not applied (and a few of the leader's own).
	maxAhead := uint64(backlog/entryBytes + 64 + 4)
	var worst atomic.Uint64
	testkit.Eventually(t, 60*time.Second, func() error {
		// Raft's applied index is the last it queued to the state machine.
		queued, applied := follower.raft.AppliedIndex(), follower.fsm.AppliedIndex()
		if queued > applied && queued-applied > worst.Load() {
			worst.Store(queued - applied)
		}
		if applied < last {
			return fmt.Errorf("applied %d of %d", applied, last)
		}
		return nil
	})
	if w := worst.Load(); w > maxAhead {
		t.Errorf("the follower queued up to %d entries to its state machine, want at most %d", w, maxAhead)
	} else {
		t.Logf("the follower queued up to %d entries to its state machine (at most %d)", w, maxAhead)
	}
}
