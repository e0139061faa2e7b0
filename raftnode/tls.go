package raftnode

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
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

// tlsHandshaker is the handshaker of mutual TLS.
type tlsHandshaker struct{ cfg TLSConfig }

// newTLSTransport listens on bind and returns a Raft network transport
// whose connections are mutual TLS.
func newTLSTransport(bind string, advertise *net.TCPAddr, cfg TLSConfig, logger hclog.Logger) (*raft.NetworkTransport, error) {
	if cfg.Server == nil || cfg.Client == nil {
		return nil, errors.New("raftnode: TLS needs a server and a client config")
	}
	return newStreamTransport(bind, advertise, tlsHandshaker{cfg},
		StreamConfig{HandshakeTimeout: cfg.HandshakeTimeout, MaxPending: cfg.MaxPending}, logger)
}

func (h tlsHandshaker) accept(ctx context.Context, c net.Conn) (net.Conn, error) {
	tc := tls.Server(c, h.cfg.Server)
	if err := tc.HandshakeContext(ctx); err != nil {
		return nil, err
	}
	return tc, nil
}

func (h tlsHandshaker) dial(ctx context.Context, addr raft.ServerAddress) (net.Conn, error) {
	td := tls.Dialer{NetDialer: &net.Dialer{}, Config: h.cfg.Client}
	return td.DialContext(ctx, "tcp", string(addr))
}

func (tlsHandshaker) refusal() string { return "TLS handshake failed" }
