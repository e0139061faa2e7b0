package agent

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/internal/clustertest"
	"github.com/ax-scheduler/ax/internal/testkit"
)

// testCluster is agents of this package in the test's process, on the
// shared harness's in-process cluster (internal/clustertest, which
// imports nothing of the agent): each node's HTTP address is a proxy
// that a test can turn into a blackhole or make lose its answers
// (proxyOf) while Raft goes on; the tests look inside the agents.
type testCluster struct {
	c      *clustertest.InProcess
	nodes  []clustertest.Node
	agents []*Agent // nodes' agents, as first started
}

// startCluster starts n agents (the first bootstraps, the others join),
// lets tweak (may be nil) change each one's configuration first, and
// waits until every one is a member and one leads a ready term.
func startCluster(t *testing.T, n int, tweak func(*Config)) *testCluster {
	t.Helper()
	c := clustertest.StartInProcess(t, n, func(nc clustertest.NodeConfig) (clustertest.Proc, error) {
		cfg := Config{NodeID: nc.ID, DataDir: nc.DataDir, HTTPAddr: nc.HTTPAddr, AdvertiseHTTP: nc.AdvertiseHTTP,
			RaftAddr: nc.RaftAddr, Join: nc.Join, LeaderWait: 2 * time.Second, Logger: nc.Logger}
		if tweak != nil {
			tweak(&cfg)
		}
		return New(cfg)
	})
	tc := &testCluster{c: c, nodes: c.Nodes()}
	for _, node := range tc.nodes {
		tc.agents = append(tc.agents, c.Proc(node).(*Agent))
	}
	testkit.Until(t, 30*time.Second, fmt.Sprintf("a %d-node cluster", n), func() bool {
		for _, a := range tc.agents {
			nodes, err := a.fsm.Nodes()
			if err != nil || len(nodes) != n {
				return false
			}
		}
		return tc.leader() != nil
	})
	return tc
}

// newAgent starts an agent with cfg and shuts it down when the test
// ends.
func newAgent(t *testing.T, cfg Config) *Agent {
	t.Helper()
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = a.Shutdown(ctx)
	})
	return a
}

// leader returns the agent that leads a ready term, or nil.
func (tc *testCluster) leader() *Agent {
	for _, a := range tc.agents {
		if a.rep.Current() != nil {
			return a
		}
	}
	return nil
}

// waitLeader waits until some agent other than not leads a ready term.
func (tc *testCluster) waitLeader(t *testing.T, not *Agent) *Agent {
	t.Helper()
	var l *Agent
	testkit.Until(t, 20*time.Second, "a new leader", func() bool {
		l = tc.leader()
		return l != nil && l != not
	})
	return l
}

// follower returns an agent that does not lead.
func (tc *testCluster) follower(not *Agent) *Agent {
	for _, a := range tc.agents {
		if a != not && !a.node.IsLeader() {
			return a
		}
	}
	return nil
}

// follower2 returns the agent that is neither a nor b.
func (tc *testCluster) follower2(a, b *Agent) *Agent {
	for _, c := range tc.agents {
		if c != a && c != b {
			return c
		}
	}
	return nil
}

// proxyMode is what a node's HTTP address does with new connections.
type proxyMode = clustertest.HTTPFault

const (
	proxyPass      = clustertest.HTTPPass      // forward both ways
	proxyBlackhole = clustertest.HTTPBlackhole // accept, read, never connect or answer
	proxySwallow   = clustertest.HTTPSwallow   // forward requests, drop the answers
)

// nodeAddr is a node's HTTP address, which it advertises to its peers.
type nodeAddr struct {
	c    *clustertest.InProcess
	node clustertest.Node
}

// set changes what the address does with new connections and closes the
// open ones.
func (p nodeAddr) set(m proxyMode) { p.c.SetHTTPFault(p.node, m) }

// heard reports whether a blackholed connection sent s (a request line).
func (p nodeAddr) heard(s string) bool { return p.c.Heard(p.node, s) }

// proxyOf returns a's address.
func (tc *testCluster) proxyOf(a *Agent) nodeAddr {
	for i, b := range tc.agents {
		if b == a {
			return nodeAddr{tc.c, tc.nodes[i]}
		}
	}
	panic("proxyOf: not an agent of the cluster")
}
