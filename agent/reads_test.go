package agent

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/api"
)

// TestAgent_FollowerReadRightAfterWrite: a linearizable read through a
// follower right after a write through the leader finds it, without
// waiting for Raft's idle commit timeout (50-100 ms: heartbeats do not
// carry the commit index, so the leader sends it with a barrier entry
// when a follower's read needs it).
func TestAgent_FollowerReadRightAfterWrite(t *testing.T) {
	tc := startCluster(t, 3, nil)
	tc.waitMemberKey(t)
	ctx := context.Background()
	l := tc.leader()
	f := tc.follower(l)
	const tries = 15
	waits := make([]time.Duration, 0, tries)
	for i := 0; i < tries; i++ {
		name := fmt.Sprintf("ryw-%d", i)
		if _, err := l.tasks.PutTask(ctx, api.Caller{Actor: "tester"}, eventTask(name), api.PutOptions{}); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		if err := f.rep.ReadBarrier(ctx); err != nil {
			t.Fatal(err)
		}
		waits = append(waits, time.Since(start))
		if _, err := f.tasks.GetTask(ctx, name); err != nil {
			t.Fatalf("read %d through %s after the barrier: %v", i, f.cfg.NodeID, err)
		}
	}
	slices.Sort(waits)
	if med := waits[tries/2]; med > 30*time.Millisecond {
		t.Errorf("median follower read barrier right after a write: %s (all %v), want well under Raft's 50-100 ms commit timeout", med, waits)
	}
	if sends := series(gather(t, l), "ax_read_commit_sends_total", nil); sends == nil || sends.GetCounter().GetValue() == 0 {
		t.Errorf("the leader sent no commit index for its followers' reads")
	}
}
