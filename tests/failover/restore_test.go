package failover

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/client"
	"github.com/ax-scheduler/ax/internal/agenttest"
	"github.com/ax-scheduler/ax/internal/clustertest"
	"github.com/ax-scheduler/ax/internal/localcluster"
	"github.com/ax-scheduler/ax/internal/testkit"
	"github.com/ax-scheduler/ax/model"
)

// TestFailover_RestoreLeaderKilled: ax snapshot restore of a sizeable
// saved state into a running three-node cluster, through a follower,
// while the leader is SIGKILLed at each step of the restore: as it
// begins, once Raft has stored the file as the leader's snapshot, once
// the leader's state machine holds it (before any follower has it), and
// once a follower has installed it. The CLI says what happened: success, or an error naming the
// cause. After a new leader is elected and the killed node is back,
// every node holds the whole old state or the whole restored one (the
// same one on every node, the restored one if the CLI said so), and a
// task still fires once.
func TestFailover_RestoreLeaderKilled(t *testing.T) {
	const token = "s3cret-s3cret-s3cret"
	c := startCluster(t, 3, withToken(token))
	ctx := ctxT(t, 8*time.Minute)
	cl := c.Client()
	if _, err := c.StartExecutor("e1"); err != nil {
		t.Fatal(err)
	}
	for _, tk := range []*model.Task{eventTask("bulk"), clustertest.ShellTask("once", "true", model.Policy{})} {
		if _, err := cl.PutTask(ctx, tk); err != nil {
			t.Fatal(err)
		}
	}
	// The saved state: pending instances with 1 KiB payloads, enough
	// that the restore takes a noticeable time.
	filled := time.Now()
	payload := fmt.Sprintf(`{"pad":%q}`, strings.Repeat("x", 1000))
	reqs := make([]model.SubmitRequest, 800)
	for i := range reqs {
		reqs[i] = model.SubmitRequest{Delay: model.Duration(24 * time.Hour), Payload: []byte(payload)}
	}
	for i := 0; i < restoreBatches(); i++ {
		if _, err := cl.SubmitBatch(ctx, "bulk", reqs); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("filled %d pending instances in %s", restoreBatches()*len(reqs), time.Since(filled).Round(time.Millisecond))
	follower, _, err := c.Follower(ctx, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "backup.ax")
	if out, err := clustertest.AxOutput(t, axBinary, "snapshot", "save", "-addr", follower.HTTPAddr, "-token", token, file); err != nil {
		t.Fatalf("ax snapshot save: %v\n%s", err, out)
	}
	restored, err := clustertest.CountTasks(ctx, cl, client.Consistent())
	if err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(file); err == nil {
		t.Logf("saved state: %d bytes, %d tasks", st.Size(), len(restored))
	}

	// agreed waits until every node answers, healthy, with the same task
	// set, and returns it.
	agreed := func(t *testing.T) map[string]uint64 {
		t.Helper()
		var got map[string]uint64
		testkit.Eventually(t, time.Minute, func() error {
			var states []map[string]uint64
			for _, n := range c.Nodes {
				h, err := n.Client().Health(ctx)
				if err != nil || h.Problem != "" {
					return fmt.Errorf("%s: %v %+v", n.ID, err, h)
				}
				tasks, err := clustertest.CountTasks(ctx, n.Client(), client.Stale())
				if err != nil {
					return fmt.Errorf("%s: %w", n.ID, err)
				}
				states = append(states, tasks)
			}
			for j, s := range states[1:] {
				if !maps.Equal(s, states[0]) {
					return fmt.Errorf("%s holds %d tasks, %s %d", c.Nodes[0].ID, len(states[0]), c.Nodes[j+1].ID, len(s))
				}
			}
			got = states[0]
			return nil
		})
		return got
	}

	for i, kill := range []struct {
		name string
		// after is the log line after which the leader is killed: the
		// leader's, or a follower's if byFollower.
		after      string
		byFollower bool
		// abandons: the killed leader held the restored state before it
		// was committed, which it discards as it starts again. (Killed
		// once a follower installed it, it may have seen the commit.)
		abandons bool
	}{
		{"as the leader begins it", "restoring a saved state into the cluster", false, false},
		{"once Raft stored it as the leader's snapshot", "copied to local snapshot", false, true},
		{"once the leader's state machine holds it", "restored user snapshot", false, true},
		{"once a follower installed it", "Installed remote snapshot", true, false},
	} {
		t.Run(kill.name, func(t *testing.T) {
			if kill.byFollower && os.Getenv("AX_RESTORE_KILL_INSTALLED") == "" {
				// A known defect, not yet mended (docs/operations.md, "If
				// the leader dies during the restore"): killed here, the
				// restarted leader discards its entries after the
				// restore and can vote in a node without them; a
				// follower holding them then cannot be brought level
				// (hashicorp/raft cannot remove log entries that follow
				// a restore's snapshot index, which has no entry), and
				// installs the same snapshot over and over. Seen in one
				// CI run of about ten.
				t.Skip("AX_RESTORE_KILL_INSTALLED=1 runs it: a known defect, it fails about one run in ten")
			}
			// The running state differs from the file's by a task written
			// after the save.
			if _, err := cl.PutTask(ctx, eventTask(fmt.Sprintf("after-save-%d", i))); err != nil {
				t.Fatal(err)
			}
			old, err := clustertest.CountTasks(ctx, cl, client.Consistent())
			if err != nil {
				t.Fatal(err)
			}
			follower, _, err := c.Follower(ctx, 10*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			from := map[*localcluster.Node]int64{}
			for _, n := range c.Nodes {
				st, err := os.Stat(n.LogPath)
				if err != nil {
					t.Fatal(err)
				}
				from[n] = st.Size()
			}
			type result struct {
				out string
				err error
			}
			done := make(chan result, 1)
			began := time.Now()
			go func() {
				out, err := clustertest.AxOutput(t, axBinary, "snapshot", "restore", "-addr", follower.HTTPAddr, "-token", token, file)
				done <- result{out, err}
			}()
			// The leader is the node that logs the restore's start (the
			// one that led when the follower was picked may have lost it
			// since); the kill waits for its line, or a follower's.
			var leader *localcluster.Node
			testkit.Eventually(t, time.Minute, func() error {
				logged := map[*localcluster.Node]string{}
				for _, n := range c.Nodes {
					b, err := os.ReadFile(n.LogPath)
					if err != nil {
						return err
					}
					logged[n] = string(b[from[n]:])
					if strings.Contains(logged[n], "restoring a saved state into the cluster") {
						leader = n
					}
				}
				for n, l := range logged {
					if leader != nil && (n == leader) != kill.byFollower && strings.Contains(l, kill.after) {
						return nil
					}
				}
				return fmt.Errorf("no node has logged %q (leader %v)", kill.after, leader)
			})
			leader.Kill()
			t.Logf("killed %s %s after the restore began", leader.ID, time.Since(began).Round(time.Millisecond))
			res := <-done
			t.Logf("ax snapshot restore, %s after it began: %v\n%s", time.Since(began).Round(time.Millisecond), res.err, res.out)

			killedAt, err := os.Stat(leader.LogPath)
			if err != nil {
				t.Fatal(err)
			}
			if err := leader.Start(); err != nil {
				t.Fatal(err)
			}
			got := agreed(t)
			switch {
			case maps.Equal(got, restored):
				t.Logf("every node holds the restored state")
			case maps.Equal(got, old):
				t.Logf("every node holds the old state")
				if res.err == nil {
					t.Errorf("the CLI said %q, but the cluster holds the old state", res.out)
				}
			default:
				t.Fatalf("the nodes hold %d tasks: neither the old state's %d nor the restored one's %d", len(got), len(old), len(restored))
			}
			if b, err := os.ReadFile(leader.LogPath); err != nil || kill.abandons &&
				!strings.Contains(string(b[killedAt.Size():]), "discarding the restored state") {
				t.Errorf("%s, killed holding the restored state, did not say it discards it as it starts (%v)", leader.ID, err)
			}
			switch {
			case res.err == nil && !strings.HasPrefix(res.out, "restored "+file):
				t.Errorf("ax snapshot restore succeeded saying %q", res.out)
			case res.err != nil && !strings.Contains(res.err.Error(), "snapshot restore: outcome unknown: the leader did not answer"):
				t.Errorf("ax snapshot restore failed without saying the outcome is unknown: %v", res.err)
			}
			id := clustertest.Trigger(t, cl, "once")
			agenttest.WaitState(t, cl, id, time.Minute, model.StateSuccess)
			if in, err := cl.GetInstance(ctx, id); err != nil || in.Attempts != 1 {
				t.Errorf("a trigger after the restore: %+v %v, want one attempt", in, err)
			}
		})
	}

	// Uninterrupted, the restore of the same file takes this long.
	if _, err := cl.PutTask(ctx, eventTask("after-save-last")); err != nil {
		t.Fatal(err)
	}
	follower, _, err = c.Follower(ctx, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	if out, err := clustertest.AxOutput(t, axBinary, "snapshot", "restore", "-addr", follower.HTTPAddr, "-token", token, file); err != nil ||
		!strings.HasPrefix(out, "restored "+file) {
		t.Fatalf("ax snapshot restore: %v\n%s", err, out)
	}
	t.Logf("an uninterrupted restore took %s", time.Since(began).Round(time.Millisecond))
	if got := agreed(t); !maps.Equal(got, restored) {
		t.Errorf("after an uninterrupted restore the nodes hold %d tasks, the file %d", len(got), len(restored))
	}
}

// restoreBatches is how many batches of 800 instances (1 KiB payloads)
// the saved state holds: 30 (35 MB, about 1 s to restore here) unless
// AX_RESTORE_KILL_BATCHES says otherwise (60: 69 MB).
func restoreBatches() int {
	if n, err := strconv.Atoi(os.Getenv("AX_RESTORE_KILL_BATCHES")); err == nil && n > 0 {
		return n
	}
	return 30
}
