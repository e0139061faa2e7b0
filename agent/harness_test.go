package agent

import (
	"context"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/internal/testkit"
)

// proxyMode is what a proxy does with a connection.
type proxyMode int

const (
	proxyPass      proxyMode = iota // forward both ways
	proxyBlackhole                  // accept, read, never connect or answer
	proxySwallow                    // forward requests, drop the answers
)

// proxy stands in front of a node's HTTP address, which the node
// advertises to its peers: tests make that node unreachable (or its
// answers lost) for the others while Raft goes on.
type proxy struct {
	ln     net.Listener
	mu     sync.Mutex
	target string
	mode   proxyMode
	conns  []net.Conn
	// swallowed is what blackholed connections sent.
	swallowed testkit.Buffer
}

func newProxy(t *testing.T) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln}
	t.Cleanup(p.close)
	go p.serve()
	return p
}

func (p *proxy) addr() string { return p.ln.Addr().String() }

// heard reports whether a blackholed connection sent s (a request line).
func (p *proxy) heard(s string) bool { return strings.Contains(p.swallowed.String(), s) }

// set changes the mode for new connections and closes the open ones (a
// client's pooled connection must not bypass the new mode).
func (p *proxy) set(m proxyMode) {
	p.mu.Lock()
	p.mode = m
	conns := p.conns
	p.conns = nil
	p.mu.Unlock()
	for _, c := range conns {
		c.Close()
	}
}

func (p *proxy) close() {
	p.ln.Close()
	p.set(proxyPass)
}

func (p *proxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		mode, target := p.mode, p.target
		p.conns = append(p.conns, c)
		p.mu.Unlock()
		go p.handle(c, mode, target)
	}
}

func (p *proxy) handle(c net.Conn, mode proxyMode, target string) {
	defer c.Close()
	if mode == proxyBlackhole {
		_, _ = io.Copy(&p.swallowed, c)
		return
	}
	up, err := net.Dial("tcp", target)
	if err != nil {
		return
	}
	p.mu.Lock()
	p.conns = append(p.conns, up)
	p.mu.Unlock()
	defer up.Close()
	// A client that goes away closes the connection upstream too, as it
	// would without the proxy.
	go func() { _, _ = io.Copy(up, c); up.Close() }()
	if mode == proxySwallow {
		_, _ = io.Copy(io.Discard, up)
		return
	}
	_, _ = io.Copy(c, up)
}

// testCluster is three in-process agents, each behind a proxy.
type testCluster struct {
	agents  []*Agent
	proxies []*proxy
}

// startCluster starts n agents (the first bootstraps, the others join it
// through its proxy) and waits until every one is a member and one leads
// a ready term.
func startCluster(t *testing.T, n int, tweak func(*Config)) *testCluster {
	t.Helper()
	if testing.Short() {
		t.Skip("in-process cluster skipped in -short mode")
	}
	tc := &testCluster{}
	for i := 0; i < n; i++ {
		p := newProxy(t)
		cfg := Config{NodeID: "n" + string(rune('1'+i)), DataDir: t.TempDir(), HTTPAddr: "127.0.0.1:0", RaftAddr: testkit.FreeAddr(t),
			AdvertiseHTTP: p.addr(), LeaderWait: 2 * time.Second, Logger: testkit.Logger(t, "")}
		if i > 0 {
			cfg.Join = []string{tc.proxies[0].addr()}
		}
		if tweak != nil {
			tweak(&cfg)
		}
		a := newAgent(t, cfg)
		p.mu.Lock()
		p.target = a.HTTPAddr()
		p.mu.Unlock()
		tc.agents = append(tc.agents, a)
		tc.proxies = append(tc.proxies, p)
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

func (tc *testCluster) proxyOf(a *Agent) *proxy {
	for i, b := range tc.agents {
		if b == a {
			return tc.proxies[i]
		}
	}
	return nil
}
