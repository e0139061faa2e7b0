package failover

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/internal/clustertest"
	"github.com/ax-scheduler/ax/internal/localcluster"
	"github.com/ax-scheduler/ax/internal/testkit"
	"github.com/ax-scheduler/ax/model"
)

// TestEmbed_ThreeReplicasLeaderKilled (issue 26, seed 000's embedded
// kernel): three replicas of examples/embedded-service, a Go service that
// embeds an ax node (package embed) and runs the reconcile task every
// second in its own handler, form a cluster; kill -9 of the leader's
// replica: the survivors fire and run on, and every fire time has one
// instance, every instance ran (the service's ledger), no attempt ran
// twice, and each successful instance ran once unless a retry is
// recorded.
func TestEmbed_ThreeReplicasLeaderKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process test skipped in -short mode")
	}
	ctx := ctxT(t, 150*time.Second)
	ledger := filepath.Join(t.TempDir(), "ledger")
	t.Setenv("EMBEDDED_LEDGER", ledger)
	dir := t.TempDir()
	c, err := localcluster.Start(ctx, localcluster.Config{Binary: embeddedBinary, NoSubcommand: true, Nodes: 3, Dir: dir,
		Args: []string{"-log-level", "debug"}})
	if err != nil {
		clustertest.DumpLogs(t, dir)
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	cl := c.Client()
	succeeded := func(min int, after time.Time) error {
		all, err := clustertest.AllInstances(ctx, cl, "reconcile")
		if err != nil {
			return err
		}
		n := 0
		for _, in := range all {
			if in.State == model.StateSuccess && in.ScheduledAt.After(after) {
				n++
			}
		}
		if n < min {
			return fmt.Errorf("%d reconcile runs succeeded after %s, want %d", n, after.Format(time.TimeOnly), min)
		}
		return nil
	}
	testkit.Eventually(t, 60*time.Second, func() error { return succeeded(3, time.Time{}) })
	leader, err := c.Leader(ctx, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	leader.Kill()
	testkit.Eventually(t, 60*time.Second, func() error { return succeeded(3, killed) })

	all, err := clustertest.AllInstances(ctx, cl, "reconcile")
	if err != nil {
		t.Fatal(err)
	}
	byTime := map[int64][]string{}
	for _, in := range all {
		byTime[in.ScheduledAt.UnixMilli()] = append(byTime[in.ScheduledAt.UnixMilli()], in.ID)
	}
	for at, ids := range byTime {
		if len(ids) > 1 {
			t.Errorf("fire time %s has %d instances: %v", time.UnixMilli(at).UTC().Format(time.RFC3339), len(ids), ids)
		}
	}
	data, err := os.ReadFile(ledger)
	if err != nil {
		t.Fatal(err)
	}
	ran := map[string]int{}       // instance -> runs
	attempts := map[string]bool{} // instance attempt -> seen
	nodes := map[string]bool{}
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		f := strings.Fields(l)
		if len(f) != 4 {
			t.Fatalf("ledger line %q", l)
		}
		if attempts[f[0]+" "+f[1]] {
			t.Errorf("attempt %s of instance %s ran twice", f[1], f[0])
		}
		attempts[f[0]+" "+f[1]] = true
		ran[f[0]]++
		nodes[f[3]] = true
	}
	for _, in := range all {
		if in.State != model.StateSuccess {
			continue
		}
		if ran[in.ID] == 0 {
			t.Errorf("instance %s succeeded but the service's ledger has no run of it", in.ID)
		}
		if ran[in.ID] > in.Attempts {
			t.Errorf("instance %s ran %d times, %d attempts recorded", in.ID, ran[in.ID], in.Attempts)
		}
	}
	var names []string
	for n := range nodes {
		names = append(names, n)
	}
	sort.Strings(names)
	t.Logf("%d instances, run by the replicas at %v", len(all), names)
}
