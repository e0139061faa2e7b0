package clustertest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/client"
	"github.com/ax-scheduler/ax/internal/localcluster"
)

// Cluster is a running ax cluster under test: real agent processes or
// agents in the test's process. Its nodes are named n1, n2, ... in the
// order they started; the first bootstrapped it and the others joined.
type Cluster interface {
	// Nodes returns every node, running or not, in start order.
	Nodes() []Node
	// Leader waits within the given time until the running nodes agree
	// on a leader that is one of them, and returns it.
	Leader(ctx context.Context, within time.Duration) (Node, error)
	// ClientConfig returns what a client of the given nodes (every node
	// when none is given) needs: their addresses, and the TLS and token
	// the cluster's clients present.
	ClientConfig(nodes ...Node) client.Config
	// Client returns client.New(ClientConfig(nodes...)): it fails over
	// across those nodes.
	Client(nodes ...Node) *client.Client
	// StartExecutor starts an executor named name that runs shell and
	// http actions, connected to every node. Close stops it.
	StartExecutor(name string) (Executor, error)
	// Close stops every node and executor. The test's cleanup calls it.
	Close()
}

// Node is one agent of a Cluster.
type Node interface {
	// ID is the node id (n1, n2, ...).
	ID() string
	// Addr is the HTTP address clients and peers reach it at.
	Addr() string
	// Client returns a client of this node only.
	Client() *client.Client
	// Kill stops the node at once, as a crash does: no leadership
	// handover, no drain; its peers see its connections drop. Its data
	// stays for Start.
	Kill()
	// Stop stops the node gracefully, as SIGTERM does: a leader hands
	// leadership over first.
	Stop()
	// Start starts a stopped or killed node again, with its data dir,
	// its addresses and its settings.
	Start() error
	// Running reports whether the node runs.
	Running() bool
	// Log returns what the node has logged so far, at debug level.
	Log() string
}

// Executor is an executor started by Cluster.StartExecutor.
type Executor interface {
	Name() string
	// Stop stops it gracefully, as SIGTERM does `ax executor`: it takes
	// no new work and its running attempts get their shutdown grace.
	Stop()
}

// Others returns c's nodes but not.
func Others(c Cluster, not ...Node) []Node {
	var out []Node
	for _, n := range c.Nodes() {
		skip := false
		for _, x := range not {
			skip = skip || n == x
		}
		if !skip {
			out = append(out, n)
		}
	}
	return out
}

// addrs returns the nodes' HTTP addresses.
func addrs(nodes []Node) []string {
	var out []string
	for _, n := range nodes {
		out = append(out, n.Addr())
	}
	return out
}

// waitLeader waits within the given time until the running nodes agree
// on a leader that is one of them.
func waitLeader(ctx context.Context, within time.Duration, nodes []Node) (Node, error) {
	var leader Node
	err := localcluster.WaitFor(ctx, within, func() error {
		id := ""
		for _, n := range nodes {
			if !n.Running() {
				continue
			}
			h, err := n.Client().Health(ctx)
			if h == nil {
				return err
			}
			if h.Leader == "" || (id != "" && h.Leader != id) {
				return fmt.Errorf("no agreed leader (%s says %q)", n.ID(), h.Leader)
			}
			id = h.Leader
		}
		for _, n := range nodes {
			if n.ID() == id && n.Running() {
				leader = n
				return nil
			}
		}
		return fmt.Errorf("leader %q is not a running node", id)
	})
	return leader, err
}

// Impl starts clusters of one implementation of Cluster.
type Impl struct {
	Name string
	// Start starts an n-node cluster that the test's cleanup closes.
	Start func(t *testing.T, n int) Cluster
}

// ProcessImpl starts clusters of real processes with StartProcesses.
func ProcessImpl(opts ...Option) Impl {
	return Impl{Name: "processes", Start: func(t *testing.T, n int) Cluster {
		t.Helper()
		return Processes(StartProcesses(t, n, opts...))
	}}
}

// Each runs body on a fresh n-node cluster of each implementation, as a
// subtest named after it: one scenario, written once, on each.
func Each(t *testing.T, impls []Impl, n int, body func(t *testing.T, c Cluster)) {
	t.Helper()
	for _, im := range impls {
		t.Run(im.Name, func(t *testing.T) { body(t, im.Start(t, n)) })
	}
}
