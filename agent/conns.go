package agent

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/ax-scheduler/ax/api"
	"github.com/ax-scheduler/ax/cluster"
	"github.com/hashicorp/go-hclog"
)

// connLimiter caps the connections of the API listener. At the cap, a new
// connection evicts one that has no request in a handler, in this order:
//
//  1. a stalled one: it has never had a request reach a handler and has
//     been at it for stalledAfter (it has not finished its TLS handshake,
//     or is still sending its first request's headers: bare TCP
//     connects, slowloris, scans — nothing that proved it speaks HTTP to
//     us, let alone holds a credential);
//  2. the one idle longest between requests (keep-alive);
//  3. the oldest one that has not yet had a request reach a handler.
//
// When every connection is in a handler (event streams, executors' long
// polls, requests being answered), the new one is closed. So connections
// that never sent a request cannot push out clients that did, nor a new
// client still in its handshake while idle ones can go; a flood of them
// churns among themselves and the node stays within its cap. Slow
// senders of headers and bodies are also bounded by the server's
// ReadHeaderTimeout (which bounds the TLS handshake too) and the body
// deadline (bodyDeadline).
//
// Connections are keyed by what the listener returns (a *tls.Conn on a
// TLS node): the http.Server hands that same value to the ConnState and
// ConnContext hooks.
type connLimiter struct {
	net.Listener
	max int

	mu    sync.Mutex
	conns map[net.Conn]*connInfo

	evicted, refused atomic.Uint64
}

type connInfo struct {
	state    http.ConnState
	since    time.Time // of the last state change or handler exit
	served   bool      // a request of it has reached a handler
	handlers int       // handlers running for it
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
		ok, victim := l.admit(c)
		if victim != nil {
			closeRaw(victim)
		}
		if ok {
			return c, nil
		}
		l.refused.Add(1)
		closeRaw(c)
	}
}

// closeRaw closes c's network connection: a TLS connection without its
// close_notify alert, which could block on a peer that does not read.
func closeRaw(c net.Conn) {
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	c.Close()
}

// admit records c if the cap allows, evicting a connection if need be
// (returned for the caller to close outside the lock).
func (l *connLimiter) admit(c net.Conn) (bool, net.Conn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var victim net.Conn
	if len(l.conns) >= l.max {
		victim = l.victim()
		if victim == nil {
			return false, nil
		}
		delete(l.conns, victim)
		l.evicted.Add(1)
	}
	l.conns[c] = &connInfo{state: http.StateNew, since: time.Now()}
	return true, victim
}

// stalledAfter is how long a connection may go without a request reaching
// a handler before it is the first to be evicted: longer than a TLS
// handshake and a request's headers take on any network a client uses.
const stalledAfter = 2 * time.Second

// victim picks the connection to evict (see connLimiter), nil if every
// connection has a request in a handler. l.mu is held.
func (l *connLimiter) victim() net.Conn {
	now := time.Now()
	var victim net.Conn
	var best *connInfo
	bestRank := 0
	for c, in := range l.conns {
		r := evictRank(in, now)
		if r == 0 {
			continue
		}
		if best == nil || r < bestRank || (r == bestRank && in.since.Before(best.since)) {
			victim, best, bestRank = c, in, r
		}
	}
	return victim
}

// evictRank orders eviction candidates (1 first, see connLimiter); 0: not
// evictable, because a handler runs for it or it is in the middle of a
// request that reached one (a served connection is taken only while idle
// between requests, never while its answer is being finished).
func evictRank(in *connInfo, now time.Time) int {
	switch {
	case in.handlers > 0:
		return 0
	case !in.served && now.Sub(in.since) >= stalledAfter:
		return 1
	case in.served && in.state == http.StateIdle:
		return 2
	case !in.served:
		return 3
	}
	return 0
}

// track is the http.Server's ConnState hook.
func (l *connLimiter) track(c net.Conn, s http.ConnState) {
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

type connKey struct{}

// connContext is the http.Server's ConnContext hook: it gives the
// requests of c their connection's record, for serving.
func (l *connLimiter) connContext(ctx context.Context, c net.Conn) context.Context {
	l.mu.Lock()
	in := l.conns[c]
	l.mu.Unlock()
	if in == nil {
		return ctx
	}
	return context.WithValue(ctx, connKey{}, in)
}

// serving marks r's connection as having a request in a handler until the
// returned function is called.
func (l *connLimiter) serving(r *http.Request) (done func()) {
	in, _ := r.Context().Value(connKey{}).(*connInfo)
	if in == nil {
		return func() {}
	}
	l.mu.Lock()
	in.handlers++
	in.served = true
	l.mu.Unlock()
	return func() {
		l.mu.Lock()
		in.handlers--
		in.since = time.Now()
		l.mu.Unlock()
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

// restoreBodyDeadline is bodyDeadline for a state to restore (POST
// /v1/snapshot), a file of any size.
const restoreBodyDeadline = cluster.RestoreTimeout

// limitBody sets the body read deadline on a request that has a body.
func limitBody(w http.ResponseWriter, r *http.Request) {
	if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
		return
	}
	rc := http.NewResponseController(w)
	d := bodyDeadline
	if api.IsRestore(r) {
		d = restoreBodyDeadline
	}
	if rc.SetReadDeadline(time.Now().Add(d)) != nil {
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

// DefaultMaxConns is -max-conns's default: half the process's limit of
// open files (which the Go runtime raises to the hard limit at start),
// between 1,024 and 8,192. Each idle executor holds two connections on
// the node it polls (its long poll and its liveness check), so 1,024
// served ~500 executors a node (docs/performance.md, "Ceilings"); the
// other half of the descriptors is left to Raft, the state files and
// the peers.
func DefaultMaxConns() int {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return minMaxConns
	}
	return maxConnsFor(lim.Cur)
}

// maxConnsFor is DefaultMaxConns for an open-file limit of nofile.
func maxConnsFor(nofile uint64) int {
	return int(min(max(nofile/2, minMaxConns), maxMaxConns))
}

const (
	minMaxConns = 1024
	maxMaxConns = 8192
)
