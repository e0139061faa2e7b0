package agent

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/api"
	"github.com/ax-scheduler/ax/internal/testkit"
	"github.com/ax-scheduler/ax/model"
)

// TestAgent_SnapshotBySize: every node snapshots once it has applied
// -snapshot-bytes of entries, far below -snapshot-threshold's entry count
// (a batch of submissions is one large entry).
func TestAgent_SnapshotBySize(t *testing.T) {
	tc := startCluster(t, 3, func(c *Config) { c.SnapshotBytes = 256 << 10 })
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	l := tc.leader()
	caller := api.Caller{Actor: "tester"}
	if _, err := l.tasks.PutTask(ctx, caller, eventTask("q"), api.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	reqs := make([]model.SubmitRequest, 1000)
	for i := range reqs {
		reqs[i] = model.SubmitRequest{Delay: model.Duration(time.Hour), Payload: []byte(fmt.Sprintf(`{"n":%d,"pad":"0123456789abcdef0123456789abcdef"}`, i))}
	}
	for range 8 { // 8 entries of ~70 KB: ~560 KB, against 8,192 entries
		if _, err := l.tasks.Submit(ctx, caller, "q", reqs); err != nil {
			t.Fatal(err)
		}
	}
	for _, a := range tc.agents {
		testkit.Eventually(t, 15*time.Second, func() error {
			snaps, _ := filepath.Glob(filepath.Join(a.cfg.DataDir, "raft", "snapshots", "*", "state.bin"))
			if len(snaps) == 0 {
				return fmt.Errorf("node %s: no snapshot after %d bytes applied", a.cfg.NodeID, a.fsm.AppliedBytes())
			}
			return nil
		})
	}
}
