package raftnode

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// handshaker authenticates the connections of a stream layer: mutual TLS
// (tls.go) or the member-key handshake (peerauth.go).
type handshaker interface {
	// accept authenticates an accepted connection before raft reads a
	// byte of it, and returns the connection raft is to use. The stream
	// has set a deadline on c; accept must give up when ctx ends.
	accept(ctx context.Context, c net.Conn) (net.Conn, error)
	// dial connects to a peer and authenticates it within ctx.
	dial(ctx context.Context, addr raft.ServerAddress) (net.Conn, error)
	// refusal names what a refused connection failed, for the log.
	refusal() string
}

// StreamConfig bounds the handshakes of a stream layer.
type StreamConfig struct {
	// HandshakeTimeout bounds each handshake; default 5s.
	HandshakeTimeout time.Duration
	// MaxPending caps the handshakes in progress; connections beyond it
	// are closed at once. Default 64.
	MaxPending int
}

func (c *StreamConfig) defaults() {
	if c.HandshakeTimeout <= 0 {
		c.HandshakeTimeout = 5 * time.Second
	}
	if c.MaxPending <= 0 {
		c.MaxPending = 64
	}
}

// stream is a raft.StreamLayer whose connections are authenticated by a
// handshaker. Every accepted connection is handshaken in its own
// goroutine, within a deadline, before Accept hands it to raft: a peer
// that cannot complete a handshake never reaches raft's decoder.
type stream struct {
	ln        net.Listener
	advertise net.Addr
	hs        handshaker
	cfg       StreamConfig
	log       hclog.Logger

	conns   chan net.Conn // handshaken, waiting for Accept
	pending chan struct{} // one token per handshake in progress
	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	limit   logLimiter
}

var _ raft.StreamLayer = (*stream)(nil)

// newStreamTransport listens on bind and returns a Raft network transport
// whose connections hs authenticates.
func newStreamTransport(bind string, advertise *net.TCPAddr, hs handshaker, cfg StreamConfig, logger hclog.Logger) (*raft.NetworkTransport, error) {
	s, err := newStream(bind, advertise, hs, cfg, logger)
	if err != nil {
		return nil, err
	}
	return raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		Stream: s, MaxPool: 4, Timeout: 10 * time.Second, Logger: logger,
	}), nil
}

func newStream(bind string, advertise *net.TCPAddr, hs handshaker, cfg StreamConfig, logger hclog.Logger) (*stream, error) {
	if advertise.IP == nil || advertise.IP.IsUnspecified() {
		return nil, fmt.Errorf("raftnode: raft address %s is not advertisable: give the address peers reach this node at", advertise)
	}
	cfg.defaults()
	ln, err := net.Listen("tcp", bind)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &stream{
		ln: ln, advertise: advertise, hs: hs, cfg: cfg, log: logger,
		conns: make(chan net.Conn), pending: make(chan struct{}, cfg.MaxPending),
		ctx: ctx, cancel: cancel, limit: logLimiter{burst: 5, every: time.Second},
	}
	s.wg.Add(1)
	go s.acceptLoop()
	return s, nil
}

// acceptLoop accepts TCP connections and starts a handshake for each.
func (s *stream) acceptLoop() {
	defer s.wg.Done()
	var backoff time.Duration
	for {
		c, err := s.ln.Accept()
		if err != nil {
			if s.ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return
			}
			// Out of file descriptors and the like: wait a little.
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			s.log.Error("raft accept failed", "error", err, "retry_in", backoff)
			select {
			case <-time.After(backoff):
				continue
			case <-s.ctx.Done():
				return
			}
		}
		backoff = 0
		select {
		case s.pending <- struct{}{}:
			s.wg.Add(1)
			go s.handshake(c)
		default:
			c.Close()
			s.refused(c.RemoteAddr(), errors.New("too many handshakes in progress"))
		}
	}
}

// handshake authenticates c within the timeout and hands it to Accept, or
// closes it.
func (s *stream) handshake(c net.Conn) {
	defer s.wg.Done()
	_ = c.SetDeadline(time.Now().Add(s.cfg.HandshakeTimeout))
	ctx, cancel := context.WithTimeout(s.ctx, s.cfg.HandshakeTimeout)
	ac, err := s.hs.accept(ctx, c)
	cancel()
	<-s.pending
	if err != nil {
		c.Close()
		if s.ctx.Err() == nil {
			s.refused(c.RemoteAddr(), err)
		}
		return
	}
	_ = c.SetDeadline(time.Time{})
	select {
	case s.conns <- ac:
	case <-s.ctx.Done():
		ac.Close()
	}
}

// refused logs a refused connection, at most a few lines a second.
func (s *stream) refused(remote net.Addr, reason error) {
	s.limit.log(s.log.Warn, "refused raft connection: "+s.hs.refusal(), "remote", remote.String(), "reason", reason.Error())
}

// Accept returns the next handshaken connection.
func (s *stream) Accept() (net.Conn, error) {
	select {
	case c := <-s.conns:
		return c, nil
	case <-s.ctx.Done():
		return nil, net.ErrClosed
	}
}

// Close stops accepting and aborts the handshakes in progress.
func (s *stream) Close() error {
	if s.ctx.Err() != nil {
		return nil
	}
	s.cancel()
	err := s.ln.Close()
	s.wg.Wait()
	return err
}

// Addr is the advertised address.
func (s *stream) Addr() net.Addr { return s.advertise }

// Dial connects to a peer and completes the handshake within the
// handshake timeout (or raft's, if shorter).
func (s *stream) Dial(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	d := s.cfg.HandshakeTimeout
	if timeout > 0 && timeout < d {
		d = timeout
	}
	ctx, cancel := context.WithTimeout(s.ctx, d)
	defer cancel()
	c, err := s.hs.dial(ctx, addr)
	if err != nil {
		return nil, fmt.Errorf("raftnode: dial %s: %w", addr, err)
	}
	return c, nil
}

// logLimiter is a token bucket for log lines: burst lines at once, then
// one per every; it counts what it holds back.
type logLimiter struct {
	burst   int
	every   time.Duration
	mu      sync.Mutex
	tokens  float64
	last    time.Time
	dropped int
}

// log calls logf unless the limit holds the line back, adding how many
// lines it held back since the last one.
func (l *logLimiter) log(logf func(msg string, args ...any), msg string, args ...any) {
	ok, dropped := l.allow(time.Now())
	if !ok {
		return
	}
	if dropped > 0 {
		args = append(args, "not_logged_since", dropped)
	}
	logf(msg, args...)
}

// allow says whether a line may be logged now, and how many were held
// back since the last one that was.
func (l *logLimiter) allow(now time.Time) (ok bool, dropped int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.last.IsZero() {
		l.tokens = float64(l.burst)
	} else {
		l.tokens = min(float64(l.burst), l.tokens+float64(now.Sub(l.last))/float64(l.every))
	}
	l.last = now
	if l.tokens < 1 {
		l.dropped++
		return false, 0
	}
	l.tokens--
	dropped, l.dropped = l.dropped, 0
	return true, dropped
}
