package raftnode

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// TLSConfig turns on mutual TLS for Raft.
type TLSConfig struct {
	// Server is used for accepted connections. It must require and verify
	// a client certificate, and should refuse peers that are not cluster
	// nodes (tlsutil.Holder.RaftServerConfig does both).
	Server *tls.Config
	// Client is used to dial peers (tlsutil.Holder.PeerClientConfig).
	Client *tls.Config
	// HandshakeTimeout bounds each handshake; default 5s.
	HandshakeTimeout time.Duration
	// MaxPending caps the handshakes in progress; connections beyond it
	// are closed at once. Default 64.
	MaxPending int
}

// tlsStream is a raft.StreamLayer over TLS. Every accepted connection is
// handshaken in its own goroutine, within a deadline, before Accept hands
// it to raft: a peer that cannot complete a handshake never reaches
// raft's decoder.
type tlsStream struct {
	ln        net.Listener
	advertise net.Addr
	cfg       TLSConfig
	log       hclog.Logger

	conns   chan net.Conn // handshaken, waiting for Accept
	pending chan struct{} // one token per handshake in progress
	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	limit   logLimiter
}

var _ raft.StreamLayer = (*tlsStream)(nil)

// newTLSTransport listens on bind and returns a Raft network transport
// whose connections are mutual TLS.
func newTLSTransport(bind string, advertise *net.TCPAddr, cfg TLSConfig, logger hclog.Logger) (*raft.NetworkTransport, error) {
	if cfg.Server == nil || cfg.Client == nil {
		return nil, errors.New("raftnode: TLS needs a server and a client config")
	}
	if advertise.IP == nil || advertise.IP.IsUnspecified() {
		return nil, fmt.Errorf("raftnode: raft address %s is not advertisable: give the address peers reach this node at", advertise)
	}
	if cfg.HandshakeTimeout <= 0 {
		cfg.HandshakeTimeout = 5 * time.Second
	}
	if cfg.MaxPending <= 0 {
		cfg.MaxPending = 64
	}
	ln, err := net.Listen("tcp", bind)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &tlsStream{
		ln: ln, advertise: advertise, cfg: cfg, log: logger,
		conns: make(chan net.Conn), pending: make(chan struct{}, cfg.MaxPending),
		ctx: ctx, cancel: cancel, limit: logLimiter{burst: 5, every: time.Second},
	}
	s.wg.Add(1)
	go s.acceptLoop()
	return raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		Stream: s, MaxPool: 4, Timeout: 10 * time.Second, Logger: logger,
	}), nil
}

// acceptLoop accepts TCP connections and starts a handshake for each.
func (s *tlsStream) acceptLoop() {
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

// handshake completes the TLS handshake of c within the timeout and hands
// it to Accept, or closes it.
func (s *tlsStream) handshake(c net.Conn) {
	defer s.wg.Done()
	release := func() { <-s.pending }
	_ = c.SetDeadline(time.Now().Add(s.cfg.HandshakeTimeout))
	tc := tls.Server(c, s.cfg.Server)
	ctx, cancel := context.WithTimeout(s.ctx, s.cfg.HandshakeTimeout)
	err := tc.HandshakeContext(ctx)
	cancel()
	release()
	if err != nil {
		c.Close()
		if s.ctx.Err() == nil {
			s.refused(c.RemoteAddr(), err)
		}
		return
	}
	_ = c.SetDeadline(time.Time{})
	select {
	case s.conns <- tc:
	case <-s.ctx.Done():
		tc.Close()
	}
}

// refused logs a refused connection, at most a few lines a second.
func (s *tlsStream) refused(remote net.Addr, reason error) {
	ok, dropped := s.limit.allow(time.Now())
	if !ok {
		return
	}
	args := []any{"remote", remote.String(), "reason", reason.Error()}
	if dropped > 0 {
		args = append(args, "not_logged_since", dropped)
	}
	s.log.Warn("refused raft connection: TLS handshake failed", args...)
}

// Accept returns the next handshaken connection.
func (s *tlsStream) Accept() (net.Conn, error) {
	select {
	case c := <-s.conns:
		return c, nil
	case <-s.ctx.Done():
		return nil, net.ErrClosed
	}
}

// Close stops accepting and aborts the handshakes in progress.
func (s *tlsStream) Close() error {
	if s.ctx.Err() != nil {
		return nil
	}
	s.cancel()
	err := s.ln.Close()
	s.wg.Wait()
	return err
}

// Addr is the advertised address.
func (s *tlsStream) Addr() net.Addr { return s.advertise }

// Dial connects to a peer and completes the client handshake within the
// handshake timeout (or raft's, if shorter).
func (s *tlsStream) Dial(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	d := s.cfg.HandshakeTimeout
	if timeout > 0 && timeout < d {
		d = timeout
	}
	ctx, cancel := context.WithTimeout(s.ctx, d)
	defer cancel()
	td := tls.Dialer{NetDialer: &net.Dialer{}, Config: s.cfg.Client}
	c, err := td.DialContext(ctx, "tcp", string(addr))
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
