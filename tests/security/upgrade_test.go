package security

import (
	"context"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/fsm/command"
	"github.com/ax-scheduler/ax/internal/localcluster"
	"github.com/ax-scheduler/ax/internal/testkit"
	"github.com/ax-scheduler/ax/model/member"
	"github.com/ax-scheduler/ax/raftnode"
)

// TestUpgrade_RollingFromProtocol5 upgrades a three-node cluster without
// TLS, protected by a token, one node at a time from a release before
// the Raft handshake (protocol 5) to this one, as README "Upgrades" says
// (and a fourth node of this release joins it before):
// upgraded and old members keep talking (the upgraded ones accept the
// old ones' plain connections and talk to them in clear), writes go
// through every node at every step, the cluster stays at protocol 5
// while an old member remains, and once the last one is upgraded it
// reaches protocol 6, from which every node requires the handshake:
// forged RPCs in clear are refused. The first node upgraded is made the
// leader: it must not raise the cluster's protocol past the old members'.
//
// It needs the old release's binary: AX_OLD_BINARY=/path/to/ax (see
// docs/testing.md for how to build it from git).
func TestUpgrade_RollingFromProtocol5(t *testing.T) {
	old := os.Getenv("AX_OLD_BINARY")
	if old == "" {
		t.Skip("set AX_OLD_BINARY to an ax binary of protocol 5 (docs/testing.md)")
	}
	const token = "management-token-of-the-upgrade-test"
	var mu sync.Mutex
	upgraded := map[string]bool{}
	// Every agent runs the old binary until it is upgraded: then the
	// wrapper execs this suite's in its place.
	wrap := func(c *localcluster.Config) {
		c.Wrap = func(id string) []string {
			mu.Lock()
			defer mu.Unlock()
			if upgraded[id] {
				return []string{"sh", "-c", `shift; exec "$0" "$@"`, axBinary}
			}
			return nil
		}
	}
	c := startCluster(t, 3, withBinary(old), withToken(token), wrap)
	ctx := ctxT(t, 4*time.Minute)
	waitProtocol := func(want int) {
		t.Helper()
		for _, n := range c.Nodes {
			waitHealth(ctx, t, n, 30*time.Second, func(h *member.Health) error {
				if h.Protocol != want || h.Leader == "" {
					return fmt.Errorf("%s: protocol %d (want %d), leader %q", n.ID, h.Protocol, want, h.Leader)
				}
				return nil
			})
		}
	}
	waitProtocol(5)
	if _, err := c.Client().PutSecret(ctx, "db-password", "hunter2"); err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	// writeThroughAll writes a task through every node and waits until
	// every node holds every task written so far.
	writeThroughAll := func(step string) {
		t.Helper()
		for _, n := range c.Nodes {
			name := fmt.Sprintf("%s-via-%s", step, n.ID)
			if _, err := n.Client().PutTask(ctx, eventTask(name)); err != nil {
				t.Fatalf("%s: write through %s: %v", step, n.ID, err)
			}
			want[name] = true
		}
		for _, n := range c.Nodes {
			testkit.Eventually(t, 20*time.Second, func() error { return hasAll(ctx, n.Client(), want) })
		}
	}
	writeThroughAll("old")
	// A node of this release joins the old cluster: its leader has no
	// member key to hand out, so it joins without the handshake.
	mu.Lock()
	upgraded["n4"] = true
	mu.Unlock()
	n4, err := c.AddNode(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(n4.LogPath); !strings.Contains(string(b), "does not authenticate Raft connections yet") {
		t.Errorf("n4 did not say it joins without the handshake")
	}
	writeThroughAll("joined")

	leader, err := c.Leader(ctx, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	order := []*localcluster.Node{}
	for _, n := range c.Nodes {
		if n != leader && n != n4 {
			order = append(order, n)
		}
	}
	order = append(order, leader) // the leader last: it hands over on SIGTERM
	for i, n := range order {
		n.Stop()
		mu.Lock()
		upgraded[n.ID] = true
		mu.Unlock()
		if err := n.Start(); err != nil {
			t.Fatal(err)
		}
		waitHealth(ctx, t, n, 30*time.Second, func(h *member.Health) error {
			if h.Leader == "" || h.Proto != command.ProtoVersion {
				return fmt.Errorf("%s: leader %q, binary protocol %d", n.ID, h.Leader, h.Proto)
			}
			return nil
		})
		if i == 0 {
			// An upgraded leader among old members: it must not raise
			// the cluster's protocol past theirs.
			if err := n.Client().Transfer(ctx, n.ID); err != nil {
				t.Fatal(err)
			}
			waitHealth(ctx, t, n, 20*time.Second, func(h *member.Health) error {
				if h.Role != member.RoleLeader {
					return fmt.Errorf("%s: role %s, want leader", n.ID, h.Role)
				}
				return nil
			})
		}
		writeThroughAll(fmt.Sprintf("step%d", i+1))
		if i < len(order)-1 {
			// An old member remains: the cluster stays at its protocol.
			for _, m := range c.Nodes {
				h, err := m.Client().Health(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if h.Protocol != 5 {
					t.Fatalf("after upgrading %d node(s), %s is at protocol %d, want 5 while an old member remains", i+1, m.ID, h.Protocol)
				}
			}
		}
	}
	waitProtocol(command.ProtoVersion)
	for _, n := range c.Nodes {
		testkit.Eventually(t, 10*time.Second, func() error {
			if _, required, err := raftnode.ReadMemberKey(n.DataDir); err != nil || !required {
				return fmt.Errorf("%s: member key file: required %v, %v", n.ID, required, err)
			}
			return nil
		})
	}
	writeThroughAll("new")
	// Every node now refuses what a local process forges in clear. (An
	// old member logged the hellos of upgraded ones as undecodable.)
	marks := logMarks(c.Nodes)
	for _, n := range c.Nodes {
		h := settled(ctx, t, n)
		st, err := n.Client().Cluster(ctx)
		if err != nil {
			t.Fatal(err)
		}
		conn, err := net.DialTimeout("tcp", n.RaftAddr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		expectHangUp(t, n.ID+" after the upgrade", conn, forgedRPCs(t, h, st.Nodes)["append a shell task"])
	}
	checkRefusalsSince(t, c.Nodes, marks)
	// A leader change: every pair of members reconnects with the
	// handshake.
	leader, err = c.Leader(ctx, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := leader.Client().Transfer(context.Background(), ""); err != nil {
		t.Fatal(err)
	}
	writeThroughAll("after-transfer")
}
