package scale

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/internal/localcluster"
	"github.com/ax-scheduler/ax/model/member"
)

// A tiny scale run end to end on a temporary 3-node cluster: a row per
// step with sane figures, then the kill, restart and join rows.
func TestRun_Tiny(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "ax")
	if _, err := localcluster.Install(bin, "github.com/ax-scheduler/ax/cmd/ax"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// A snapshot every 64 entries checked every second: the steps'
	// snapshots are read back, and the fresh node is sent one.
	lc, err := localcluster.Start(ctx, localcluster.Config{Binary: bin, Nodes: 3, Dir: dir,
		Args: []string{"-log-level", "warn", "-executor", "false", "-snapshot-threshold", "64", "-snapshot-interval", "1s", "-trailing-logs", "16"}})
	if err != nil {
		t.Fatal(err)
	}
	defer lc.Close()
	var log bytes.Buffer
	o := Options{Target: 20_000, Step: 5_000, Batch: 100, Clients: 4, Delay: 24 * time.Hour, Tasks: 100, Executors: 10, Probes: 4, Log: &log}
	res, err := Run(ctx, Cluster{Local: lc, Client: lc.Client()}, o)
	if err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	var out bytes.Buffer
	res.Print(&out)
	t.Logf("progress:\n%s\ntables:\n%s", log.String(), out.String())

	if len(res.Steps) != 4 {
		t.Fatalf("%d steps, want 4", len(res.Steps))
	}
	if res.ExecutorsSeen < o.Executors {
		t.Errorf("the leader heard from %d executors, want %d", res.ExecutorsSeen, o.Executors)
	}
	for i, s := range res.Steps {
		if want := (i + 1) * o.Step; s.Pending < want {
			t.Errorf("step %d: leader counts %d pending, want at least %d", i+1, s.Pending, want)
		}
		if s.Rate() <= 0 || s.Probes < o.Probes || s.ProbeP99 < s.ProbeP50 || s.ProbeP50 < 0 || s.ProbeP99 > 30*time.Second {
			t.Errorf("step %d: rate %.0f/s, %d probes, lateness p50 %s p99 %s", i+1, s.Rate(), s.Probes, s.ProbeP50, s.ProbeP99)
		}
		leaders := 0
		for _, n := range s.Nodes {
			if n.Role == member.RoleLeader {
				leaders++
			}
			if n.RSSKB <= 0 || n.AnonKB <= 0 || n.AnonKB > n.RSSKB || n.State <= 0 || n.Disk < n.State {
				t.Errorf("step %d node %s: rss %d kB, anon %d kB, fsm.db %d B, data dir %d B", i+1, n.ID, n.RSSKB, n.AnonKB, n.State, n.Disk)
			}
		}
		if len(s.Nodes) != 3 || leaders != 1 || s.Term == 0 {
			t.Errorf("step %d: %d nodes sampled, %d leaders, term %d", i+1, len(s.Nodes), leaders, s.Term)
		}
	}
	if last := res.Steps[len(res.Steps)-1]; last.Nodes[0].Snapshot.Index == 0 || last.Nodes[0].Snapshot.Size <= 0 || last.Nodes[0].Snapshot.Took < 0 {
		t.Errorf("no snapshot read back at the last step: %+v", last.Nodes[0].Snapshot)
	}
	f := res.Failover
	if f.New == "" || f.New == f.Old || f.Elected <= 0 || f.Visible < f.Elected || f.Fired <= 0 || f.Pending != o.Target {
		t.Errorf("failover: %+v", f)
	}
	for _, cu := range []CatchUp{res.Restart, res.Join} {
		if cu.Node == "" || cu.Index == 0 || cu.Took <= 0 || cu.PeakRSSKB <= 0 || cu.Samples == 0 || cu.RefRSSKB <= 0 {
			t.Errorf("catch-up: %+v", cu)
		}
	}
	if res.Restart.Node != f.Old || res.Join.Node != "n4" {
		t.Errorf("restarted %s (killed %s), joined %s (want n4)", res.Restart.Node, f.Old, res.Join.Node)
	}
	text := out.String()
	for _, want := range []string{"| pending | batched/s", "| 20000 |", "kill -9 -> new leader", "every pending instance (20000)", "first fire",
		"restart of the killed " + f.Old, "join of a fresh n4"} {
		if !strings.Contains(text, want) {
			t.Errorf("tables lack %q", want)
		}
	}
	if rows := strings.Count(text, "\n|"); rows != 2+4+2+5 { // headers and separators, steps, events
		t.Errorf("%d table lines, want 13", rows)
	}
}

// latestSnapshot reads the newest finished snapshot and its write time,
// skipping one being written.
func TestLatestSnapshot(t *testing.T) {
	dir := t.TempDir()
	made := time.Now().Add(-3 * time.Second).Truncate(time.Millisecond)
	write := func(name, meta string, mtime time.Time) {
		d := filepath.Join(dir, name)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(d, "meta.json")
		if err := os.WriteFile(p, []byte(meta), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, mtime, mtime); err != nil {
			t.Fatal(err)
		}
	}
	ms := func(t time.Time) string { return strconv.FormatInt(t.UnixMilli(), 10) }
	write("2-100-"+ms(made.Add(-time.Hour)), `{"Size":10}`, made.Add(-time.Hour))
	write("2-300-"+ms(made), `{"Size":4096}`, made.Add(1500*time.Millisecond))
	write("2-400-"+ms(made)+".tmp", `{"Size":1}`, made)
	write("1-900-"+ms(made), `{"Size":2}`, made)
	got := latestSnapshot(dir)
	if got.Index != 300 || got.Size != 4096 || got.Took != 1500*time.Millisecond || !got.Writing {
		t.Fatalf("got %+v, want index 300, 4096 bytes, written in 1.5s, another being written", got)
	}
	if err := os.RemoveAll(filepath.Join(dir, "2-400-"+ms(made)+".tmp")); err != nil {
		t.Fatal(err)
	}
	if got := latestSnapshot(dir); got.Index != 300 || got.Writing {
		t.Fatalf("none being written: %+v", got)
	}
	if got := latestSnapshot(filepath.Join(dir, "missing")); got.Index != 0 {
		t.Fatalf("no directory: %+v", got)
	}
}
