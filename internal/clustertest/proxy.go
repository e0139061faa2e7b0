package clustertest

import (
	"io"
	"net"
	"sync"
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
	conns  map[net.Conn]struct{}
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
// closes or the proxy is cut.
func (p *proxy) pass(c net.Conn) {
	p.mu.Lock()
	target, open := p.target, p.ln != nil
	p.mu.Unlock()
	if !open {
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
	_, _ = io.Copy(c, up)
	c.Close()
	<-done
}

// track records the pair, or closes it if the proxy was cut meanwhile.
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
