package raftnode

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/ax-scheduler/ax/fsm"
	"github.com/ax-scheduler/ax/fsm/command"
	"github.com/ax-scheduler/ax/internal/testkit"
	"github.com/ax-scheduler/ax/model"
)

type testNode struct {
	*Node
	fsm *fsm.FSM
	tr  *raft.InmemTransport
}

// startCluster starts n in-process nodes on an in-memory transport; the
// first bootstraps and the others are added as voters. Each tweak may
// change node i's configuration (0 is the first).
func startCluster(t *testing.T, n int, tweaks ...func(i int, cfg *Config)) []*testNode {
	t.Helper()
	var nodes []*testNode
	for i := 0; i < n; i++ {
		nodes = append(nodes, addNode(t, nodes, tweaks...))
	}
	// Every node knows every member before a test stops one: AddVoter
	// returns once a majority has the new configuration, and a node that
	// has not seen it refuses the votes of the members it lacks
	// (hashicorp/raft: "rejecting pre-vote request since node is not in
	// configuration"), so with the leader stopped early no one could win.
	testkit.Eventually(t, 10*time.Second, func() error {
		for _, tn := range nodes {
			servers, err := tn.Servers(context.Background())
			if err != nil {
				return err
			}
			if len(servers) != n {
				return fmt.Errorf("%s knows %d members, not %d", tn.ID(), len(servers), n)
			}
		}
		return nil
	})
	return nodes
}

// addNode starts node len(nodes) (0-based) connected to nodes: the first
// bootstraps, any other is added as a voter by nodes[0], the leader.
func addNode(t *testing.T, nodes []*testNode, tweaks ...func(i int, cfg *Config)) *testNode {
	t.Helper()
	i := len(nodes)
	id := fmt.Sprintf("n%d", i+1)
	_, tr := raft.NewInmemTransport(raft.ServerAddress(id))
	for _, other := range nodes {
		tr.Connect(other.tr.LocalAddr(), other.tr)
		other.tr.Connect(tr.LocalAddr(), tr)
	}
	dir := t.TempDir()
	f, err := fsm.Open(fsm.Config{Path: filepath.Join(dir, "fsm.db"), NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{
		ID: id, RaftAddr: id, DataDir: dir, Bootstrap: i == 0, FSM: f, Transport: tr,
		Logger:           testkit.Logger(t, id),
		HeartbeatTimeout: 300 * time.Millisecond, ElectionTimeout: 300 * time.Millisecond, LeaderLeaseTimeout: 200 * time.Millisecond,
	}
	for _, tweak := range tweaks {
		tweak(i, &cfg)
	}
	node, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	tn := &testNode{Node: node, fsm: f, tr: tr}
	t.Cleanup(func() { tn.Close(); f.Close() })
	if i == 0 {
		testkit.Eventually(t, 5*time.Second, func() error {
			if !node.IsLeader() {
				return errors.New("n1 not leader yet")
			}
			return nil
		})
		return tn
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := nodes[0].AddVoter(ctx, id, id); err != nil {
		t.Fatalf("add %s: %v", id, err)
	}
	return tn
}

func leaderOf(t *testing.T, nodes []*testNode) *testNode {
	t.Helper()
	var leader *testNode
	testkit.Eventually(t, 10*time.Second, func() error {
		for _, n := range nodes {
			if n.State() != "shutdown" && n.IsLeader() {
				leader = n
				return nil
			}
		}
		return errors.New("no leader")
	})
	return leader
}

// failover closes leader and returns the other nodes.
func failover(leader *testNode, nodes []*testNode) []*testNode {
	leader.Close()
	var rest []*testNode
	for _, n := range nodes {
		if n != leader {
			rest = append(rest, n)
		}
	}
	return rest
}

func putTask(t *testing.T, n *testNode, name string) error {
	t.Helper()
	c, err := command.New(command.TypePutTask, "", "test", command.PutTask{Task: model.Task{
		Name: name, Trigger: model.Trigger{Type: model.TriggerEvent}, Action: model.Action{Type: model.ActionShell, Command: "true"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	c.Now = time.Now().UnixMilli()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, _, err := n.Apply(ctx, c.Encode())
	if err != nil {
		return err
	}
	return resp.(*fsm.Result).Decode(nil)
}

func TestNode_ReplicatesAndFailsOver(t *testing.T) {
	nodes := startCluster(t, 3)
	leader := leaderOf(t, nodes)
	for i := 0; i < 20; i++ {
		if err := putTask(t, leader, fmt.Sprintf("t%d", i)); err != nil {
			t.Fatalf("apply on leader: %v", err)
		}
	}
	for _, n := range nodes {
		testkit.Eventually(t, 5*time.Second, func() error {
			if got := n.fsm.CountTasks(); got != 20 {
				return fmt.Errorf("%s has %d tasks, want 20", n.ID(), got)
			}
			return nil
		})
	}
	for _, n := range nodes {
		if n != leader {
			if err := putTask(t, n, "on-follower"); !errors.Is(err, ErrNotLeader) {
				t.Fatalf("apply on follower %s: got %v, want ErrNotLeader", n.ID(), err)
			}
			break
		}
	}

	rest := failover(leader, nodes)
	next := leaderOf(t, rest)
	if err := putTask(t, next, "after-failover"); err != nil {
		t.Fatalf("apply on new leader: %v", err)
	}
	for _, n := range rest {
		testkit.Eventually(t, 5*time.Second, func() error {
			if got := n.fsm.CountTasks(); got != 21 {
				return fmt.Errorf("%s has %d tasks, want 21", n.ID(), got)
			}
			return nil
		})
	}
}

func TestNode_LeadershipChangesAndTransfer(t *testing.T) {
	nodes := startCluster(t, 3)
	leader := leaderOf(t, nodes)
	// Subscribed after the election: the first value says it leads, once.
	changes := leader.LeadershipChanges()
	select {
	case isLeader := <-changes:
		if !isLeader {
			t.Fatal("a leader's new subscription got false first, want true")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a subscription made after the election never heard that this node leads")
	}
	var target *testNode
	for _, n := range nodes {
		if n != leader {
			target = n
			break
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := leader.TransferLeadership(ctx, target.ID()); err != nil {
		t.Fatalf("transfer: %v", err)
	}
	select {
	case isLeader := <-changes:
		if isLeader {
			t.Fatalf("old leader notified true, want false")
		}
	case <-ctx.Done():
		t.Fatal("no leadership change notification")
	}
	testkit.Eventually(t, 5*time.Second, func() error {
		if !target.IsLeader() {
			return errors.New("target not leader")
		}
		return nil
	})
	if id, _ := leader.Leader(); id != target.ID() {
		testkit.Eventually(t, 5*time.Second, func() error {
			if id, _ := leader.Leader(); id != target.ID() {
				return fmt.Errorf("old leader sees %q", id)
			}
			return nil
		})
	}
	if err := leader.TransferLeadership(ctx, "nope"); !errors.Is(err, ErrNotLeader) && !errors.Is(err, ErrNotFound) {
		t.Fatalf("transfer from follower: got %v", err)
	}
	servers, err := target.Servers(ctx)
	if err != nil || len(servers) != 3 {
		t.Fatalf("servers: got %v %v, want 3", servers, err)
	}
}

// TestNew_Timing checks that New refuses timeouts hashicorp/raft would
// refuse, before it makes or opens anything, and fills in the defaults
// for zero.
func TestNew_Timing(t *testing.T) {
	ms := time.Millisecond
	cases := []struct {
		name                        string
		heartbeat, election, lease  time.Duration
		wantErr                     string
		wantHeartbeat, wantElection time.Duration
	}{
		{"defaults", 0, 0, 0, "", DefaultHeartbeatTimeout, DefaultElectionTimeout},
		{"given", 200 * ms, 400 * ms, 100 * ms, "", 200 * ms, 400 * ms},
		{"lease over heartbeat", 200 * ms, 200 * ms, 300 * ms, "LeaderLeaseTimeout", 0, 0},
		{"election under heartbeat", 2 * time.Second, time.Second, 500 * ms, "ElectionTimeout", 0, 0},
		{"heartbeat too short", ms, time.Second, ms, "HeartbeatTimeout is too low", 0, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			f, err := fsm.Open(fsm.Config{Path: filepath.Join(dir, "fsm.db"), NoSync: true})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { f.Close() })
			_, tr := raft.NewInmemTransport("n1")
			n, err := New(Config{ID: "n1", RaftAddr: "n1", DataDir: dir, Bootstrap: true, FSM: f, Transport: tr,
				HeartbeatTimeout: c.heartbeat, ElectionTimeout: c.election, LeaderLeaseTimeout: c.lease})
			if c.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				defer n.Close()
				if rc := n.raft.ReloadableConfig(); rc.HeartbeatTimeout != c.wantHeartbeat || rc.ElectionTimeout != c.wantElection {
					t.Errorf("heartbeat, election: got %s, %s, want %s, %s", rc.HeartbeatTimeout, rc.ElectionTimeout, c.wantHeartbeat, c.wantElection)
				}
				return
			}
			if err == nil {
				n.Close()
				t.Fatalf("got a node, want an error containing %q", c.wantErr)
			}
			if !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("got %q, want it to contain %q", err, c.wantErr)
			}
			if _, err := os.Stat(filepath.Join(dir, "raft")); !os.IsNotExist(err) {
				t.Errorf("the raft directory was made before the timing was checked (stat: %v)", err)
			}
		})
	}
}

// TestNode_StateIndex: a new leader's no-op and barriers never reach the
// state machine, so its applied index stays below such a commit index
// until the next write; StateIndex names the last entry it does apply.
func TestNode_StateIndex(t *testing.T) {
	nodes := startCluster(t, 3)
	leader := leaderOf(t, nodes)
	if err := putTask(t, leader, "t1"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := leader.Barrier(ctx); err != nil {
		t.Fatal(err)
	}
	commit := leader.CommitIndex()
	state := leader.StateIndex(commit)
	if state >= commit {
		t.Fatalf("StateIndex(%d) = %d, want below the barrier", commit, state)
	}
	if got := leader.fsm.AppliedIndex(); got != state {
		t.Fatalf("leader applied %d, StateIndex %d", got, state)
	}

	// After a failover the new leader's commit index is its no-op (and
	// whatever barrier follows); no state changed.
	rest := failover(leader, nodes)
	next := leaderOf(t, rest)
	if err := next.Barrier(ctx); err != nil {
		t.Fatal(err)
	}
	commit2 := next.CommitIndex()
	if commit2 <= commit {
		t.Fatalf("commit index %d after the new term, want above %d", commit2, commit)
	}
	if got := next.StateIndex(commit2); got != state {
		t.Fatalf("StateIndex(%d) = %d after a failover with no write, want %d", commit2, got, state)
	}
	for _, n := range rest {
		testkit.Eventually(t, 5*time.Second, func() error {
			if got := n.fsm.AppliedIndex(); got != state {
				return fmt.Errorf("%s applied %d, want %d", n.ID(), got, state)
			}
			return nil
		})
	}
	if err := putTask(t, next, "t2"); err != nil {
		t.Fatal(err)
	}
	if c := next.CommitIndex(); next.StateIndex(c) != c {
		t.Fatalf("StateIndex(%d) = %d right after a command", c, next.StateIndex(c))
	}
}
