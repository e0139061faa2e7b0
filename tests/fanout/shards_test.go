package fanout

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/client"
	"github.com/ax-scheduler/ax/internal/agenttest"
	"github.com/ax-scheduler/ax/internal/testkit"
	"github.com/ax-scheduler/ax/model"
)

// shardRun is one line of a shard script's ledger.
type shardRun struct{ index, total, executor, id, parent string }

func readShardLedger(t *testing.T, path string) []shardRun {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []shardRun
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		f := strings.Fields(l)
		if len(f) != 5 {
			t.Fatalf("ledger line %q", l)
		}
		out = append(out, shardRun{f[0], f[1], f[2], f[3], f[4]})
	}
	return out
}

// TestExec_Shards: sharded and broadcast execution through a follower
// on three nodes with three executors (issue 24). A task of 6 shards
// runs each shard (with its index, total and parent in its environment)
// on more than one executor, retries a failing shard alone, and
// succeeds once all have; with fail-fast a failing shard fails the
// instance and stops the others, and a re-run runs only the shards that
// did not succeed; a broadcast runs one shard on each executor.
func TestExec_Shards(t *testing.T) {
	c := startCluster(t, 3)
	ctx := ctxT(t, 180*time.Second)
	follower, _, err := c.Follower(ctx, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	fc := client.New(client.Config{Addrs: []string{follower.HTTPAddr}})
	dir := t.TempDir()
	ledger := filepath.Join(dir, "ledger")
	record := `echo "$AX_SHARD_INDEX $AX_SHARD_TOTAL $AX_EXECUTOR $AX_INSTANCE_ID $AX_PARENT_ID" >> ` + ledger
	testkit.Eventually(t, 30*time.Second, func() error { // protocol 8
		_, err := fc.PutTask(ctx, shellTask("sharded", record+`; if [ "$AX_SHARD_INDEX" = 2 ] && [ ! -f `+dir+`/retried ]; then touch `+dir+`/retried; exit 3; fi`,
			model.Policy{Shards: 6, MaxRetries: 1}))
		return err
	})
	for _, e := range []string{"e1", "e2", "e3"} {
		if _, err := c.StartExecutor(e, "-capacity", "4"); err != nil {
			t.Fatal(err)
		}
	}
	testkit.Eventually(t, 30*time.Second, func() error {
		l, err := fc.Executors(ctx)
		if err != nil || len(l.Executors) != 3 {
			return fmt.Errorf("executors %v %v", l, err)
		}
		return nil
	})

	id := trigger(t, fc, "sharded")
	agenttest.WaitState(t, fc, id, 60*time.Second, model.StateSuccess)
	l, err := fc.Shards(ctx, id)
	if err != nil || len(l.Shards) != 6 || l.Summary == nil || l.Summary.ByState[model.StateSuccess] != 6 {
		t.Fatalf("shards %+v %v, want 6 successful", l, err)
	}
	runs := readShardLedger(t, ledger)
	var idx []string
	execs := map[string]bool{}
	for _, r := range runs {
		if r.total != "6" || r.parent != id {
			t.Errorf("run %+v: want total 6 and parent %s", r, id)
		}
		idx = append(idx, r.index)
		execs[r.executor] = true
	}
	sort.Strings(idx)
	if strings.Join(idx, "") != "0122345" {
		t.Errorf("shard runs %v, want each shard once and shard 2 twice (its retry)", idx)
	}
	if len(execs) < 2 {
		t.Errorf("the shards ran on %v only: not spread", execs)
	}
	if s := l.Shards[2]; s.Attempts != 2 || s.Shard == nil || s.Shard.Index != 2 {
		t.Errorf("shard 2: %+v, want 2 attempts", s)
	}
	out, err := axCLI(t, "instance", "shards", "-addr", follower.HTTPAddr, id)
	if err != nil || !strings.Contains(out, "6: 6 SUCCESS") || !strings.Contains(out, "   0  ######") {
		t.Errorf("ax instance shards: %v\n%s", err, out)
	}

	// fail-fast, then a re-run of what did not succeed.
	ff := `if [ ! -f ` + dir + `/ff.$AX_SHARD_INDEX ]; then touch ` + dir + `/ff.$AX_SHARD_INDEX; [ "$AX_SHARD_INDEX" = 1 ] && exit 3; sleep 60; fi`
	if _, err := fc.PutTask(ctx, shellTask("failfast", ff, model.Policy{Shards: 3})); err != nil {
		t.Fatal(err)
	}
	id = trigger(t, fc, "failfast")
	in := agenttest.WaitState(t, fc, id, 40*time.Second, model.StateFailed)
	if !strings.Contains(in.LastError, "shard 1 of 3 ended FAILED") {
		t.Errorf("lastError %q, want shard 1 named", in.LastError)
	}
	l, _ = fc.Shards(ctx, id)
	if got := shardStates(l); got != "TERMINATED FAILED TERMINATED" && got != "CANCELED FAILED TERMINATED" && got != "TERMINATED FAILED CANCELED" {
		t.Errorf("shards after the failure: %s, want the others stopped", got)
	}
	testkit.Eventually(t, 40*time.Second, func() error { // once the stopped attempts have reported
		_, err := fc.Rerun(ctx, id)
		return err
	})
	agenttest.WaitState(t, fc, id, 60*time.Second, model.StateSuccess)
	l, _ = fc.Shards(ctx, id)
	if got := shardStates(l); got != "SUCCESS SUCCESS SUCCESS" {
		t.Errorf("after the re-run: %s", got)
	}

	// broadcast: one shard per executor.
	if _, err := fc.PutTask(ctx, shellTask("everywhere", record, model.Policy{Broadcast: true})); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(ledger); err != nil {
		t.Fatal(err)
	}
	id = trigger(t, fc, "everywhere")
	agenttest.WaitState(t, fc, id, 60*time.Second, model.StateSuccess)
	var ran []string
	for _, r := range readShardLedger(t, ledger) {
		ran = append(ran, r.executor)
	}
	sort.Strings(ran)
	if !slices.Equal(ran, []string{"e1", "e2", "e3"}) {
		t.Errorf("broadcast ran on %v, want each executor once", ran)
	}
	l, _ = fc.Shards(ctx, id)
	for _, s := range l.Shards {
		if s.Shard == nil || s.Shard.Executor == "" || s.Executor != s.Shard.Executor {
			t.Errorf("broadcast shard %+v ran off its executor", s.Shard)
		}
	}
}

func shardStates(l *model.ShardList) string {
	var out []string
	for _, s := range l.Shards {
		out = append(out, s.State)
	}
	return strings.Join(out, " ")
}
