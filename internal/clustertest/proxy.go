package clustertest

import (
	"io"
	"net"
	"strings"
	"sync"

	"github.com/ax-scheduler/ax/internal/testkit"
)

// HTTPFault is what an in-process node's address does with the
// connections it accepts (InProcess.SetHTTPFault): its peers and clients
// reach its API there, Raft does not, so the node keeps its place in the
// cluster while its API is lost to the others.
type HTTPFault int

const (
	// HTTPPass passes connections on to the node's API.
	HTTPPass HTTPFault = iota
	// HTTPBlackhole accepts and reads connections, never passes them on
	// nor answers: a request sent there hangs until its own deadline.
	HTTPBlackhole
	// HTTPSwallow passes requests on and drops the answers: the node
	// does what it is asked and its caller never hears.
	HTTPSwallow
)

// proxy listens on a node's fixed HTTP address and passes connections on
// to where the in-process agent listens. Cutting it drops every
// connection at once, as a crashed process's kernel does: an agent in
// the test's process that shuts down leaves requests it is serving
// waiting on their own deadlines, which a client of a crashed node never
// does.
type proxy struct {
	addr string

	mu     sync.Mutex
	ln     net.Listener
	target string
	fault  HTTPFault
	conns  map[net.Conn]struct{}
	// heard is what blackholed connections sent.
	heard testkit.Buffer
}

// open listens on the proxy's address and passes connections to target.
func (p *proxy) open(target string) error {
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		return err
	}
	p.mu.Lock()
	p.ln, p.target, p.conns = ln, target, map[net.Conn]struct{}{}
	p.mu.Unlock()
	go p.serve(ln)
	return nil
}

func (p *proxy) serve(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go p.pass(c)
	}
}

// pass copies between c and a connection to the target until either
// closes or the proxy is cut, as its fault says.
func (p *proxy) pass(c net.Conn) {
	p.mu.Lock()
	target, fault, open := p.target, p.fault, p.ln != nil
	p.mu.Unlock()
	if !open {
		c.Close()
		return
	}
	if fault == HTTPBlackhole {
		if !p.track(c) {
			return
		}
		defer p.untrack(c)
		_, _ = io.Copy(&p.heard, c)
		c.Close()
		return
	}
	up, err := net.Dial("tcp", target)
	if err != nil {
		c.Close()
		return
	}
	if !p.track(c, up) {
		return
	}
	defer p.untrack(c, up)
	done := make(chan struct{})
	go func() { _, _ = io.Copy(up, c); up.Close(); close(done) }()
	if fault == HTTPSwallow {
		_, _ = io.Copy(io.Discard, up)
	} else {
		_, _ = io.Copy(c, up)
	}
	c.Close()
	<-done
}

// track records the connections, or closes them if the proxy was cut
// meanwhile.
func (p *proxy) track(conns ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln == nil {
		for _, c := range conns {
			c.Close()
		}
		return false
	}
	for _, c := range conns {
		p.conns[c] = struct{}{}
	}
	return true
}

func (p *proxy) untrack(conns ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range conns {
		delete(p.conns, c)
	}
}

// setFault changes what the proxy does with new connections and closes
// the open ones, so that a client's pooled connection cannot bypass it.
func (p *proxy) setFault(f HTTPFault) {
	p.mu.Lock()
	p.fault = f
	conns := p.conns
	if p.ln != nil {
		p.conns = map[net.Conn]struct{}{}
	}
	p.mu.Unlock()
	for c := range conns {
		c.Close()
	}
}

// heardOf reports whether a blackholed connection sent s.
func (p *proxy) heardOf(s string) bool { return strings.Contains(p.heard.String(), s) }

// cut stops listening and closes every connection.
func (p *proxy) cut() {
	p.mu.Lock()
	ln, conns := p.ln, p.conns
	p.ln, p.conns = nil, nil
	p.mu.Unlock()
	if ln != nil {
		ln.Close()
	}
	for c := range conns {
		c.Close()
	}
}
