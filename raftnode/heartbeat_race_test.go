package raftnode

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// errCut is what a cut transport answers.
var errCut = errors.New("cut off")

// cutTransport is a transport whose node can be cut off: with out set,
// its requests fail; with in set, requests to it are refused, except
// heartbeats while heartbeats is set.
type cutTransport struct {
	raft.Transport
	out, in, heartbeats atomic.Bool

	consumer  chan raft.RPC
	startOnce sync.Once
}

func newCutTransport(t raft.Transport) *cutTransport {
	return &cutTransport{Transport: t, consumer: make(chan raft.RPC)}
}

func (c *cutTransport) Consumer() <-chan raft.RPC {
	c.startOnce.Do(func() {
		go func() {
			for rpc := range c.Transport.Consumer() {
				if c.in.Load() {
					rpc.Respond(nil, errCut)
					continue
				}
				c.consumer <- rpc
			}
		}()
	})
	return c.consumer
}

func (c *cutTransport) SetHeartbeatHandler(cb func(raft.RPC)) {
	c.Transport.SetHeartbeatHandler(func(rpc raft.RPC) {
		if c.in.Load() && !c.heartbeats.Load() {
			rpc.Respond(nil, errCut)
			return
		}
		cb(rpc)
	})
}

func (c *cutTransport) AppendEntriesPipeline(id raft.ServerID, target raft.ServerAddress) (raft.AppendPipeline, error) {
	return nil, raft.ErrPipelineReplicationNotSupported
}

func (c *cutTransport) AppendEntries(id raft.ServerID, target raft.ServerAddress, args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) error {
	if c.out.Load() {
		return errCut
	}
	return c.Transport.AppendEntries(id, target, args, resp)
}

func (c *cutTransport) RequestVote(id raft.ServerID, target raft.ServerAddress, args *raft.RequestVoteRequest, resp *raft.RequestVoteResponse) error {
	if c.out.Load() {
		return errCut
	}
	return c.Transport.RequestVote(id, target, args, resp)
}

func (c *cutTransport) TimeoutNow(id raft.ServerID, target raft.ServerAddress, args *raft.TimeoutNowRequest, resp *raft.TimeoutNowResponse) error {
	if c.out.Load() {
		return errCut
	}
	return c.Transport.TimeoutNow(id, target, args, resp)
}

func (c *cutTransport) InstallSnapshot(id raft.ServerID, target raft.ServerAddress, args *raft.InstallSnapshotRequest, resp *raft.InstallSnapshotResponse, data io.Reader) error {
	if c.out.Load() {
		return errCut
	}
	return c.Transport.InstallSnapshot(id, target, args, resp, data)
}

// listFSM records the commands it applies.
type listFSM struct {
	mu  sync.Mutex
	got []string
}

func (f *listFSM) Apply(l *raft.Log) any {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.got = append(f.got, string(l.Data))
	return nil
}

func (f *listFSM) applied() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.got)
}

func (f *listFSM) Snapshot() (raft.FSMSnapshot, error) { return nil, errors.New("no snapshots") }
func (f *listFSM) Restore(io.ReadCloser) error         { return errors.New("no snapshots") }

// raceNode is one member of TestHeartbeatGate_DeposedLeader's cluster.
type raceNode struct {
	id    raft.ServerID
	raft  *raft.Raft
	fsm   *listFSM
	cut   *cutTransport
	watch *commitWatch
}

// TestHeartbeatGate_DeposedLeader replays hashicorp/raft#695 step by step
// with the real library over TCP on loopback: leader A is cut off; B and
// C elect B; B writes "fresh"; only B's heartbeats reach A. A heartbeat of
// a newer term makes A a follower; A, cut off, still runs its leader loop
// when it is handed a proposal ("stale"). Ungated (hashicorp/raft as it
// is), the heartbeat sets A's term from the transport's goroutine, A
// writes "stale" labelled with B's term at the index of B's no-op, keeps
// it as a duplicate once it follows B, and applies it: its state machine
// diverges. Gated, the heartbeat reaches A's main goroutine, A steps
// down before the proposal, which fails; every state machine holds the
// same commands.
func TestHeartbeatGate_DeposedLeader(t *testing.T) {
	for _, c := range []struct {
		name    string
		ungated bool
	}{{"gated", false}, {"ungated, as hashicorp/raft is", true}} {
		t.Run(c.name, func(t *testing.T) {
			diverged := replayDeposedLeader(t, c.ungated)
			switch {
			case !c.ungated && diverged != "":
				t.Fatalf("the state machines diverged: %s", diverged)
			case c.ungated && diverged == "":
				// The reproduction rests on hashicorp/raft's fast path;
				// a release that fixed it would land here.
				t.Logf("ungated, the state machines did not diverge: hashicorp/raft may have fixed #695")
			case c.ungated:
				t.Logf("reproduced hashicorp/raft#695: %s", diverged)
			}
		})
	}
}

// replayDeposedLeader runs the steps of TestHeartbeatGate_DeposedLeader
// and returns how the state machines diverged ("" if they did not).
func replayDeposedLeader(t *testing.T, ungated bool) string {
	nodes := map[string]*raceNode{}
	var servers []raft.Server
	trans := map[string]*raft.NetworkTransport{}
	for _, id := range []string{"a", "b", "c"} {
		tr, err := raft.NewTCPTransportWithLogger("127.0.0.1:0", nil, 3, 2*time.Second, hclog.NewNullLogger())
		if err != nil {
			t.Fatal(err)
		}
		trans[id] = tr
		servers = append(servers, raft.Server{ID: raft.ServerID(id), Address: tr.LocalAddr(), Suffrage: raft.Voter})
	}
	for _, id := range []string{"a", "b", "c"} {
		conf := raft.DefaultConfig()
		conf.LocalID = raft.ServerID(id)
		conf.Logger = hclog.New(&hclog.LoggerOptions{Name: id, Level: hclog.Warn, Output: io.Discard})
		if id == "a" {
			// A never times out on its own: cut off, it stays in its
			// leader loop until something tells it otherwise.
			conf.HeartbeatTimeout, conf.ElectionTimeout, conf.LeaderLeaseTimeout = time.Minute, time.Minute, time.Minute
		} else {
			conf.HeartbeatTimeout, conf.ElectionTimeout, conf.LeaderLeaseTimeout = 200*time.Millisecond, 200*time.Millisecond, 200*time.Millisecond
		}
		cut := newCutTransport(trans[id])
		wrapped, watch := watchCommits(cut)
		watch.gate.ungated = ungated
		store := raft.NewInmemStore()
		snaps := raft.NewInmemSnapshotStore()
		if err := raft.BootstrapCluster(conf, store, store, snaps, wrapped, raft.Configuration{Servers: servers}); err != nil {
			t.Fatal(err)
		}
		f := &listFSM{}
		r, err := raft.NewRaft(conf, f, store, store, snaps, wrapped)
		if err != nil {
			t.Fatal(err)
		}
		watch.gate.setRaft(r)
		n := &raceNode{id: conf.LocalID, raft: r, fsm: f, cut: cut, watch: watch}
		nodes[id] = n
		t.Cleanup(func() {
			cut.out.Store(false)
			cut.in.Store(false)
			_ = r.Shutdown().Error()
			watch.stop()
			_ = trans[id].Close()
		})
	}
	a := nodes["a"]
	leader := func(within time.Duration, want ...*raceNode) *raceNode {
		t.Helper()
		deadline := time.Now().Add(within)
		for time.Now().Before(deadline) {
			for _, n := range want {
				if n.raft.State() == raft.Leader {
					return n
				}
			}
			time.Sleep(5 * time.Millisecond)
		}
		t.Fatalf("no leader among %d nodes within %s", len(want), within)
		return nil
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}

	// A leads, with "before" committed everywhere.
	first := leader(10*time.Second, nodes["b"], nodes["c"], a)
	if first != a {
		if err := first.raft.LeadershipTransferToServer(a.id, servers[0].Address).Error(); err != nil {
			t.Fatalf("transfer to a: %v", err)
		}
		leader(10*time.Second, a)
	}
	if err := a.raft.Apply([]byte("before"), 5*time.Second).Error(); err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		waitFor(string(n.id)+" applying before", func() bool { return len(n.fsm.applied()) == 1 })
	}
	term := a.raft.CurrentTerm()

	// A cut off both ways; B and C elect one of them, which writes
	// "fresh" (the new leader is called b below whichever it is).
	a.cut.out.Store(true)
	a.cut.in.Store(true)
	b := leader(10*time.Second, nodes["b"], nodes["c"])
	if err := b.raft.Apply([]byte("fresh"), 5*time.Second).Error(); err != nil {
		t.Fatal(err)
	}
	if a.raft.State() != raft.Leader {
		t.Fatalf("a is %s, want still leader (cut off, with a minute's lease)", a.raft.State())
	}

	// B's heartbeats reach A.
	a.cut.heartbeats.Store(true)
	if ungated {
		waitFor("a to take b's term from its heartbeat", func() bool { return a.raft.CurrentTerm() > term })
	} else {
		// Gated, the heartbeat waits for A's main goroutine, where it
		// is handled as any append: A steps down.
		waitFor("a to step down", func() bool { return a.raft.State() != raft.Leader })
	}

	// A is handed a proposal.
	stale := a.raft.ApplyLog(raft.Log{Data: []byte("stale")}, 0)

	// Healed: A follows B.
	a.cut.in.Store(false)
	a.cut.out.Store(false)
	if err := b.raft.Apply([]byte("after"), 5*time.Second).Error(); err != nil {
		t.Fatal(err)
	}
	want := []string{"before", "fresh", "after"}
	for _, n := range []*raceNode{nodes["b"], nodes["c"]} {
		waitFor(string(n.id)+" applying after", func() bool { return slices.Contains(n.fsm.applied(), "after") })
		if got := n.fsm.applied(); !slices.Equal(got, want) {
			return fmt.Sprintf("%s applied %q, want %q", n.id, got, want)
		}
	}
	waitFor("a applying after", func() bool { return slices.Contains(a.fsm.applied(), "after") })
	if err := stale.Error(); err == nil {
		return "a's proposal after its successor's heartbeat succeeded"
	}
	if got := a.fsm.applied(); !slices.Equal(got, want) {
		return fmt.Sprintf("a applied %q, its peers %q", got, want)
	}
	return ""
}
