package clustertest

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ax-scheduler/ax/client"
	"github.com/ax-scheduler/ax/internal/localcluster"
	"github.com/ax-scheduler/ax/internal/testkit"
	"github.com/ax-scheduler/ax/worker"
)

// Proc is an agent running in the test's process (an *agent.Agent).
type Proc interface {
	// HTTPAddr is the address its API listens on.
	HTTPAddr() string
	// Shutdown stops the agent: a leader hands leadership over within
	// ctx, and a ctx already done leaves it no time to.
	Shutdown(ctx context.Context) error
}

// NodeConfig is what a Starter starts an in-process node with, the same
// at every (re)start of the node.
type NodeConfig struct {
	ID      string
	DataDir string
	// HTTPAddr is where the API listens: a port of the agent's choosing
	// (127.0.0.1:0). AdvertiseHTTP is the node's address for clients and
	// peers, picked once and kept across restarts: a proxy there passes
	// connections on to the API, and drops them when the node is killed.
	HTTPAddr, AdvertiseHTTP string
	// RaftAddr is the Raft address, picked once.
	RaftAddr string
	// Join lists the HTTP addresses of the nodes started before this
	// one; empty for the first, which bootstraps the cluster.
	Join []string
	// Logger logs at debug level to Node.Log, and to t.Log at the level
	// of $AX_TEST_LOG.
	Logger hclog.Logger
}

// Starter starts an in-process agent with cfg (internal/agenttest's
// Starter runs agent.New), not returning before it serves its API.
type Starter func(cfg NodeConfig) (Proc, error)

// InProcess is a Cluster of agents in the test's process, on loopback
// ports, each with its data in a temp dir. Kill is a shutdown that leaves
// the agent no time to hand leadership over or drain (the test fails if
// it did all the same); to its peers that is a crash, whose connections
// drop. Its data dir is closed cleanly, unlike a crashed process's.
type InProcess struct {
	t     testing.TB
	start Starter
	dir   string // the nodes' data dirs
	mu    sync.Mutex
	nodes []*inNode
	execs []*inExecutor
}

var _ Cluster = (*InProcess)(nil)

// StartInProcess starts n agents with start, the first bootstrapping and
// the others joining it, waits until each is a member and a leader is
// elected, and closes the cluster when the test ends. Skipped in -short
// mode.
func StartInProcess(t testing.TB, n int, start Starter) *InProcess {
	t.Helper()
	if testing.Short() {
		t.Skip("in-process cluster skipped in -short mode")
	}
	c := &InProcess{t: t, start: start, dir: t.TempDir()}
	t.Cleanup(c.Close) // before the temp dir is removed
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for range n {
		if _, err := c.AddNode(ctx); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

// AddNode starts one more agent, joining the cluster, and waits until it
// is a member with its address and sees a leader.
func (c *InProcess) AddNode(ctx context.Context) (Node, error) {
	c.mu.Lock()
	id := fmt.Sprintf("n%d", len(c.nodes)+1)
	var join []string
	for _, n := range c.nodes {
		join = append(join, n.cfg.AdvertiseHTTP)
	}
	c.mu.Unlock()
	httpAddr, err := localcluster.FreePort()
	if err != nil {
		return nil, err
	}
	raftAddr, err := localcluster.FreePort()
	if err != nil {
		return nil, err
	}
	n := &inNode{c: c, proxy: &proxy{addr: httpAddr}}
	logger := hclog.NewInterceptLogger(&hclog.LoggerOptions{Name: id, Level: hclog.Debug, Output: &n.log})
	logger.RegisterSink(hclog.NewSinkAdapter(&hclog.LoggerOptions{Name: id, Level: testkit.LogLevel(), Output: testkit.LogWriter(c.t)}))
	n.cfg = NodeConfig{ID: id, DataDir: filepath.Join(c.dir, id), HTTPAddr: "127.0.0.1:0", AdvertiseHTTP: httpAddr, RaftAddr: raftAddr,
		Join: join, Logger: logger}
	if err := n.Start(); err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.nodes = append(c.nodes, n)
	c.mu.Unlock()
	if err := localcluster.WaitMember(ctx, n.Client(), id, n.cfg.AdvertiseHTTP); err != nil {
		return nil, fmt.Errorf("clustertest: %s did not join: %w", id, err)
	}
	return n, nil
}

// Proc returns node n's running agent, nil when it is stopped: for tests
// that look inside it.
func (c *InProcess) Proc(n Node) Proc {
	in, ok := n.(*inNode)
	if !ok {
		return nil
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.proc
}

// SetHTTPFault makes node n's address do f with the connections it
// accepts from now on, and closes the open ones (a client's pooled
// connection must not bypass the fault). Raft is not behind that address:
// the node stays a member, and may lead, while its API is lost to the
// others.
func (c *InProcess) SetHTTPFault(n Node, f HTTPFault) {
	if in, ok := n.(*inNode); ok {
		in.proxy.setFault(f)
	}
}

// Heard reports whether a connection that node n's address blackholed
// sent s (a request line, say).
func (c *InProcess) Heard(n Node, s string) bool {
	in, ok := n.(*inNode)
	return ok && in.proxy.heardOf(s)
}

// Nodes returns every node in start order.
func (c *InProcess) Nodes() []Node {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]Node, len(c.nodes))
	for i, n := range c.nodes {
		out[i] = n
	}
	return out
}

// Leader waits until the running nodes agree on a leader.
func (c *InProcess) Leader(ctx context.Context, within time.Duration) (Node, error) {
	return waitLeader(ctx, within, c.Nodes())
}

// ClientConfig returns a client configuration for nodes (every node when
// none is given).
func (c *InProcess) ClientConfig(nodes ...Node) client.Config {
	if len(nodes) == 0 {
		nodes = c.Nodes()
	}
	return client.Config{Addrs: addrs(nodes)}
}

// Client returns a client that fails over across nodes (every node when
// none is given).
func (c *InProcess) Client(nodes ...Node) *client.Client { return client.New(c.ClientConfig(nodes...)) }

// StartExecutor runs a worker (the executor `ax executor` runs) in the
// test's process, connected to every node.
func (c *InProcess) StartExecutor(name string) (Executor, error) {
	w, err := worker.New(worker.Config{Servers: addrs(c.Nodes()), Name: name, Shell: true, HTTP: true,
		Logger: testkit.Logger(c.t, name)})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	e := &inExecutor{name: name, cancel: cancel, done: make(chan struct{})}
	go func() { defer close(e.done); _ = w.Run(ctx) }()
	c.mu.Lock()
	c.execs = append(c.execs, e)
	c.mu.Unlock()
	return e, nil
}

// Close stops the executors, then kills every node (as the process
// implementation does: the test is over).
func (c *InProcess) Close() {
	c.mu.Lock()
	execs, nodes := c.execs, c.nodes
	c.mu.Unlock()
	for _, e := range execs {
		e.Stop()
	}
	var wg sync.WaitGroup
	for _, n := range nodes {
		wg.Add(1)
		go func() { defer wg.Done(); n.Kill() }()
	}
	wg.Wait()
}

// inNode is one in-process agent.
type inNode struct {
	c     *InProcess
	cfg   NodeConfig
	log   testkit.Buffer
	proxy *proxy

	mu   sync.Mutex
	proc Proc
}

func (n *inNode) ID() string   { return n.cfg.ID }
func (n *inNode) Addr() string { return n.cfg.AdvertiseHTTP }
func (n *inNode) Log() string  { return n.log.String() }

func (n *inNode) Client() *client.Client {
	return client.New(client.Config{Addrs: []string{n.cfg.AdvertiseHTTP}, RetryFor: 2 * time.Second})
}

func (n *inNode) Running() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.proc != nil
}

func (n *inNode) Start() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.proc != nil {
		return fmt.Errorf("clustertest: %s already running", n.cfg.ID)
	}
	p, err := n.c.start(n.cfg)
	if err != nil {
		return fmt.Errorf("clustertest: start %s: %w", n.cfg.ID, err)
	}
	if err := n.proxy.open(p.HTTPAddr()); err != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		_ = p.Shutdown(ctx)
		return fmt.Errorf("clustertest: %s's address: %w", n.cfg.ID, err)
	}
	n.proc = p
	return nil
}

// take returns the running agent and marks the node stopped.
func (n *inNode) take() Proc {
	n.mu.Lock()
	defer n.mu.Unlock()
	p := n.proc
	n.proc = nil
	return p
}

// handedOver is what the agent logs when it hands leadership over as it
// shuts down.
const handedOver = "transferred leadership before shutdown"

func (n *inNode) Kill() {
	p := n.take()
	if p == nil {
		return
	}
	n.proxy.cut() // its connections drop at once
	mark := n.log.Len()
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // no time for a handover
	_ = n.shutdown(ctx, p)
	if strings.Contains(n.log.String()[mark:], handedOver) {
		n.c.t.Errorf("clustertest: killing %s in process handed its leadership over, which a crash does not", n.cfg.ID)
	}
}

func (n *inNode) Stop() {
	p := n.take()
	if p == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := n.shutdown(ctx, p); err != nil {
		n.c.t.Errorf("clustertest: stopping %s: %v", n.cfg.ID, err)
	}
	n.proxy.cut()
}

// shutdownBound is how long an in-process agent's Shutdown may take
// before the test fails, rather than wait for go test's timeout.
const shutdownBound = time.Minute

// shutdown runs p.Shutdown(ctx), failing the test if it has not
// returned within shutdownBound (it is then left running).
func (n *inNode) shutdown(ctx context.Context, p Proc) error {
	done := make(chan error, 1)
	go func() { done <- p.Shutdown(ctx) }()
	select {
	case err := <-done:
		return err
	case <-time.After(shutdownBound):
		n.c.t.Errorf("clustertest: %s's Shutdown has not returned after %s", n.cfg.ID, shutdownBound)
		return nil
	}
}

// inExecutor is a worker run in the test's process.
type inExecutor struct {
	name   string
	cancel context.CancelFunc
	done   chan struct{}
}

func (e *inExecutor) Name() string { return e.name }

func (e *inExecutor) Stop() {
	e.cancel()
	<-e.done
}
