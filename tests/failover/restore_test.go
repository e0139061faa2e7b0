package failover

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
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
// while the leader is SIGKILLed at each step of the restore through the
// log: as it begins, once chunks of the file are committed, as it
// proposes the switch, and once a follower has switched to the restored
// state. The CLI says what happened: success, or an error naming the
// cause. After a new leader is elected and the killed node is back,
// every node holds the whole old state or the whole restored one (the
// same one on every node: the old one if the switch was never proposed,
// the restored one if a follower switched or the CLI said so), a new
// leader drops an unfinished restore's chunks, and a task still fires
// once.
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
				// Consistent: what the cluster committed, a switch the
				// new leader's first entry commits included.
				tasks, err := clustertest.CountTasks(ctx, n.Client(), client.Consistent())
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
	}{
		{"as the leader begins it", "restoring a saved state into the cluster", false},
		{"once chunks are committed", "restore staging", false},
		{"as the leader proposes the switch", "restore staged; switching", false},
		{"once a follower switched", "switched to a restored state from the log", true},
	} {
		t.Run(kill.name, func(t *testing.T) {
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
			from := logSizes(t, c.Nodes)
			defer func() {
				if t.Failed() {
					logLines(t, c.Nodes, from, "restor", "switch", "staging", "staged", "leader", "election", "snapshot", "term")
				}
			}()
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
			var (
				leader *localcluster.Node
				id     string // the restore's, in the lines that name it
			)
			testkit.Eventually(t, time.Minute, func() error {
				logged := map[*localcluster.Node]string{}
				for _, n := range c.Nodes {
					logged[n] = logSince(n, from)
					if m := restoreStart.FindStringSubmatch(logged[n]); m != nil {
						leader, id = n, m[1]
					}
				}
				for n, l := range logged {
					if leader == nil || (n == leader) == kill.byFollower {
						continue
					}
					for _, line := range strings.Split(l, "\n") {
						if strings.Contains(line, kill.after) && strings.Contains(line, "restore="+id) {
							return nil
						}
					}
				}
				return fmt.Errorf("no node has logged %q (leader %v, restore %q)", kill.after, leader, id)
			})
			leader.Kill()
			t.Logf("killed %s %s after the restore began", leader.ID, time.Since(began).Round(time.Millisecond))
			// What the cluster had committed when the leader died, as far
			// as the logs tell: a restore whose switch was never proposed
			// is not in effect; one a follower switched to is.
			leaderLog := logSince(leader, from)
			proposed := strings.Contains(leaderLog, "restore staged; switching")
			staged := strings.Contains(leaderLog, "restore staging")
			res := <-done
			t.Logf("ax snapshot restore, %s after it began: %v\n%s", time.Since(began).Round(time.Millisecond), res.err, res.out)

			if err := leader.Start(); err != nil {
				t.Fatal(err)
			}
			got := agreed(t)
			switch {
			case maps.Equal(got, restored):
				t.Logf("every node holds the restored state")
				if !proposed {
					t.Errorf("the cluster holds the restored state, but the killed leader never proposed the switch")
				}
			case maps.Equal(got, old):
				t.Logf("every node holds the old state")
				if res.err == nil {
					t.Errorf("the CLI said %q, but the cluster holds the old state", res.out)
				}
				if kill.byFollower {
					t.Errorf("a follower switched to the restored state, but the cluster holds the old one")
				}
			default:
				t.Fatalf("the nodes hold %d tasks: neither the old state's %d nor the restored one's %d", len(got), len(old), len(restored))
			}
			if staged && !proposed {
				// The next leader dropped the staged chunks as its term began.
				testkit.Eventually(t, time.Minute, func() error {
					for _, n := range c.Nodes {
						if strings.Contains(logSince(n, from), "dropping the staged state of a restore that did not finish") {
							return nil
						}
					}
					return fmt.Errorf("no node logged that it dropped the unfinished restore's staged state")
				})
			}
			switch {
			case res.err == nil && !strings.HasPrefix(res.out, "restored "+file):
				t.Errorf("ax snapshot restore succeeded saying %q", res.out)
			case res.err != nil && !strings.Contains(res.err.Error(), "snapshot restore: outcome unknown: the leader did not answer"):
				t.Errorf("ax snapshot restore failed without saying the outcome is unknown: %v", res.err)
			}
			inst := clustertest.Trigger(t, cl, "once")
			agenttest.WaitState(t, cl, inst, time.Minute, model.StateSuccess)
			if in, err := cl.GetInstance(ctx, inst); err != nil || in.Attempts != 1 {
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
	from := logSizes(t, c.Nodes)
	began := time.Now()
	if out, err := clustertest.AxOutput(t, axBinary, "snapshot", "restore", "-addr", follower.HTTPAddr, "-token", token, file); err != nil ||
		!strings.HasPrefix(out, "restored "+file) {
		t.Fatalf("ax snapshot restore: %v\n%s", err, out)
	}
	t.Logf("an uninterrupted restore took %s", time.Since(began).Round(time.Millisecond))
	// Where the time went: the leader's staging, each node's switch.
	logLines(t, c.Nodes, from, "restore staged;", "switched to a restored state")
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

// restoreStart is the leader's line as a restore begins; it names the
// restore.
var restoreStart = regexp.MustCompile(`restoring a saved state into the cluster: .* restore=([0-9a-f]+)`)

// logSizes returns each node's log size: where what it logs next starts.
func logSizes(t *testing.T, nodes []*localcluster.Node) map[*localcluster.Node]int64 {
	t.Helper()
	from := map[*localcluster.Node]int64{}
	for _, n := range nodes {
		st, err := os.Stat(n.LogPath)
		if err != nil {
			t.Fatal(err)
		}
		from[n] = st.Size()
	}
	return from
}

// logSince returns what n logged since from ("" if its log cannot be
// read).
func logSince(n *localcluster.Node, from map[*localcluster.Node]int64) string {
	b, err := os.ReadFile(n.LogPath)
	if err != nil || int64(len(b)) < from[n] {
		return ""
	}
	return string(b[from[n]:])
}

// logLines logs each node's lines since from that contain any of words.
func logLines(t *testing.T, nodes []*localcluster.Node, from map[*localcluster.Node]int64, words ...string) {
	for _, n := range nodes {
		for _, l := range strings.Split(logSince(n, from), "\n") {
			for _, w := range words {
				if strings.Contains(l, w) {
					t.Logf("%s: %s", n.ID, l)
					break
				}
			}
		}
	}
}
