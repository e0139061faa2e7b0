package agent

import (
	"crypto/tls"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
)

// connLimiter caps the connections of the API listener. At the cap, a new
// connection evicts the one that has waited longest without a request in
// flight (idle keep-alives, connections that never sent a byte); when
// every connection is busy, the new one is closed. So idle or stalled
// clients cannot lock others out, and the node stays within its cap.
// Slow senders of headers and bodies are bounded by the server's
// ReadHeaderTimeout and the body deadline (bodyDeadline).
type connLimiter struct {
	net.Listener
	max int

	mu    sync.Mutex
	conns map[net.Conn]*connInfo

	evicted, refused atomic.Uint64
}

type connInfo struct {
	state http.ConnState
	since time.Time
}

func newConnLimiter(ln net.Listener, max int) *connLimiter {
	return &connLimiter{Listener: ln, max: max, conns: map[net.Conn]*connInfo{}}
}

// Accept returns the next connection within the cap.
func (l *connLimiter) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.admit(c) {
			return c, nil
		}
		l.refused.Add(1)
		c.Close()
	}
}

func (l *connLimiter) admit(c net.Conn) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.conns) >= l.max {
		var victim net.Conn
		var oldest time.Time
		for vc, in := range l.conns {
			if in.state != http.StateActive && (victim == nil || in.since.Before(oldest)) {
				victim, oldest = vc, in.since
			}
		}
		if victim == nil {
			return false
		}
		delete(l.conns, victim)
		victim.Close()
		l.evicted.Add(1)
	}
	l.conns[c] = &connInfo{state: http.StateNew, since: time.Now()}
	return true
}

// track is the http.Server's ConnState hook.
func (l *connLimiter) track(c net.Conn, s http.ConnState) {
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	in, ok := l.conns[c]
	if !ok {
		return
	}
	switch s {
	case http.StateClosed, http.StateHijacked:
		delete(l.conns, c)
	default:
		in.state, in.since = s, time.Now()
	}
}

// open returns the number of connections held.
func (l *connLimiter) open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.conns)
}

// bodyDeadline bounds how long a request body may take to arrive. The
// deadline is lifted once the body is read to its end, so that it cannot
// cut a long-poll short (a read deadline that passes while a handler runs
// cancels its context).
const bodyDeadline = 30 * time.Second

// limitBody sets the body read deadline on a request that has a body.
func limitBody(w http.ResponseWriter, r *http.Request) {
	if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
		return
	}
	rc := http.NewResponseController(w)
	if rc.SetReadDeadline(time.Now().Add(bodyDeadline)) != nil {
		return
	}
	r.Body = &deadlineBody{ReadCloser: r.Body, rc: rc}
}

type deadlineBody struct {
	io.ReadCloser
	rc   *http.ResponseController
	done bool
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && !b.done {
		b.done = true
		if errors.Is(err, io.EOF) {
			_ = b.rc.SetReadDeadline(time.Time{})
		}
	}
	return n, err
}

// serverLog is the HTTP server's error log: its lines (TLS handshake
// errors, bad requests) go to the agent's log at WARN, at most burst at
// once and one a second on average, so that a flood of bad connections
// cannot flood the log; how many were dropped is said with the next line.
type serverLog struct {
	log     hclog.Logger
	now     func() time.Time
	mu      sync.Mutex
	tokens  float64
	last    time.Time
	dropped int
}

const serverLogBurst = 10

func newServerLog(l hclog.Logger) *log.Logger {
	return log.New(&serverLog{log: l.Named("http"), now: time.Now, tokens: serverLogBurst}, "", 0)
}

func (s *serverLog) Write(p []byte) (int, error) {
	s.mu.Lock()
	now := s.now()
	s.tokens = min(serverLogBurst, s.tokens+now.Sub(s.last).Seconds())
	s.last = now
	if s.tokens < 1 {
		s.dropped++
		s.mu.Unlock()
		return len(p), nil
	}
	s.tokens--
	dropped := s.dropped
	s.dropped = 0
	s.mu.Unlock()
	if dropped > 0 {
		s.log.Warn(strings.TrimSpace(string(p)), "dropped_before", dropped)
	} else {
		s.log.Warn(strings.TrimSpace(string(p)))
	}
	return len(p), nil
}
