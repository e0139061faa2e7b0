package clustertest

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/client"
	"github.com/ax-scheduler/ax/internal/localcluster"
)

// Option adjusts the cluster StartProcesses starts.
type Option func(*localcluster.Config)

// WithArgs gives every agent extra flags.
func WithArgs(args ...string) Option {
	return func(c *localcluster.Config) { c.Args = append(c.Args, args...) }
}

// WithFirstArgs gives the first (bootstrapping) agent extra flags.
func WithFirstArgs(args ...string) Option {
	return func(c *localcluster.Config) { c.FirstArgs = append(c.FirstArgs, args...) }
}

// WithToken protects the cluster with a token that the clients,
// executors and CLI of localcluster present.
func WithToken(token string) Option {
	return func(c *localcluster.Config) { c.Token = token }
}

// WithTLS makes a TLS cluster with the CA and certificates in dir
// (whatever is missing is created).
func WithTLS(dir string) Option {
	return func(c *localcluster.Config) { c.TLSDir = dir }
}

// WithBinary runs the agents from path in place of the ax Main
// installed (a build with fault hooks, say).
func WithBinary(path string) Option {
	return func(c *localcluster.Config) { c.Binary = path }
}

// WithNodeEnv adds variables ("K=V") to the environment of agent id.
func WithNodeEnv(id string, env ...string) Option {
	return func(c *localcluster.Config) {
		if c.NodeEnv == nil {
			c.NodeEnv = map[string][]string{}
		}
		c.NodeEnv[id] = append(c.NodeEnv[id], env...)
	}
}

// StartProcesses starts n agents of the ax binary Main installed in a
// temp dir, with debug logs and no embedded executor unless an option
// asks (tests that run work start executors of their own), and stops
// them when the test ends. A data race (with AX_TEST_RACE=1), a panic or a fatal error
// in any agent's or executor's log fails the test; on failure the logs'
// tails are printed. Skipped in -short mode.
func StartProcesses(t testing.TB, n int, opts ...Option) *localcluster.Cluster {
	t.Helper()
	if testing.Short() {
		t.Skip("multi-process test skipped in -short mode")
	}
	statInstalled()
	dir := t.TempDir()
	cfg := localcluster.Config{Nodes: n, Dir: dir}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.Binary == "" {
		cfg.Binary = installedAx(t)
	}
	cfg.Args = append([]string{"-log-level", "debug", "-executor", "false"}, cfg.Args...)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := localcluster.Start(ctx, cfg)
	if err != nil {
		DumpLogs(t, dir)
		t.Fatalf("start cluster: %v", err)
	}
	t.Cleanup(func() {
		c.Close()
		logs, _ := filepath.Glob(filepath.Join(dir, "*.log"))
		for _, l := range logs {
			b, _ := os.ReadFile(l)
			for _, bad := range []string{"WARNING: DATA RACE", "panic:", "fatal error:"} {
				if strings.Contains(string(b), bad) {
					t.Errorf("%s: %q in the log", filepath.Base(l), bad)
				}
			}
		}
		if t.Failed() {
			DumpLogs(t, dir)
		}
	})
	return c
}

// DumpLogs prints the last 150 lines of every log in dir.
func DumpLogs(t testing.TB, dir string) {
	t.Helper()
	logs, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	for _, l := range logs {
		b, _ := os.ReadFile(l)
		lines := strings.Split(string(b), "\n")
		if len(lines) > 150 {
			lines = lines[len(lines)-150:]
		}
		t.Logf("==== %s (last %d lines)\n%s", filepath.Base(l), len(lines), strings.Join(lines, "\n"))
	}
}

// Processes is the Cluster of lc's agent processes (StartProcesses
// starts one). Kill is SIGKILL, Stop SIGTERM.
func Processes(lc *localcluster.Cluster) Cluster {
	return &processes{lc: lc, nodes: map[*localcluster.Node]*procNode{}}
}

type processes struct {
	lc    *localcluster.Cluster
	mu    sync.Mutex
	nodes map[*localcluster.Node]*procNode
}

func (c *processes) Nodes() []Node {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []Node
	for _, n := range c.lc.Members() {
		p, ok := c.nodes[n]
		if !ok {
			p = &procNode{n}
			c.nodes[n] = p
		}
		out = append(out, p)
	}
	return out
}

func (c *processes) Leader(ctx context.Context, within time.Duration) (Node, error) {
	return waitLeader(ctx, within, c.Nodes())
}

func (c *processes) ClientConfig(nodes ...Node) client.Config {
	if len(nodes) == 0 {
		nodes = c.Nodes()
	}
	return c.lc.ClientConfig(addrs(nodes)...)
}

func (c *processes) Client(nodes ...Node) *client.Client { return client.New(c.ClientConfig(nodes...)) }

func (c *processes) StartExecutor(name string) (Executor, error) {
	n, err := c.lc.StartExecutor(name)
	if err != nil {
		return nil, err
	}
	return procExecutor{n}, nil
}

func (c *processes) Close() { c.lc.Close() }

// procNode is one agent process.
type procNode struct{ n *localcluster.Node }

func (p *procNode) ID() string             { return p.n.ID }
func (p *procNode) Addr() string           { return p.n.HTTPAddr }
func (p *procNode) Client() *client.Client { return p.n.Client() }
func (p *procNode) Kill()                  { p.n.Kill() }
func (p *procNode) Stop()                  { p.n.Stop() }
func (p *procNode) Start() error           { return p.n.Start() }
func (p *procNode) Running() bool          { return p.n.Running() }
func (p *procNode) Log() string            { b, _ := os.ReadFile(p.n.LogPath); return string(b) }

// procExecutor is an `ax executor` process.
type procExecutor struct{ n *localcluster.Node }

func (e procExecutor) Name() string { return e.n.ID }
func (e procExecutor) Stop()        { e.n.Stop() }
