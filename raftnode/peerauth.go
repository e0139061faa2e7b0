package raftnode

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// Raft authentication without TLS: the member-key handshake.
//
// Every Raft connection of a node without TLS opens with a handshake in
// which both ends prove that they hold the cluster's member key, before
// raft reads or writes a byte of an RPC:
//
//	dialer   → acceptor  hello: "AXRA", version 1, a 32-byte nonce, the
//	                     length and text of the address it dialed
//	acceptor → dialer    a 32-byte nonce, HMAC(k, "server" ‖ hello ‖ nonce)
//	dialer   → acceptor  HMAC(k, "client" ‖ hello ‖ nonce)
//
// k is HMAC-SHA256(member key, "ax raft connection v1"). Both ends add a
// fresh nonce, so a recorded handshake cannot be replayed, and the MACs
// are compared in constant time. The acceptor refuses a hello meant for
// another address than its own, so that a process squatting a stopped
// member's port cannot relay a member's dial to another member. Then the
// connection is raft's, in clear: the handshake authenticates the peer,
// it does not encrypt (TLS does both).
//
// Upgrades: until every member speaks the handshake (the cluster's
// protocol says so, and RequirePeerAuth is called), an acceptor also
// takes connections that open with a raft RPC instead, from members of
// an older release, and a dialer whose hello a peer hangs up on talks to
// that peer without the handshake for a while.

// PeerAuthConfig turns on the member-key handshake for a node without
// TLS. The node keeps the member key in DATA/raft/member-key.json
// (0600): a node that restarts needs it before it can reach a peer.
type PeerAuthConfig struct {
	// StateKey is the member key held by this node's state machine, nil
	// if none (set_member_key).
	StateKey []byte
	// Required: the state machine says every member authenticates (the
	// cluster reached the protocol that requires it).
	Required bool
	// Legacy: the state machine, intact, says the cluster has not
	// reached that protocol. A node with Raft state and no key file (one
	// upgraded from a release without the handshake) then adopts
	// StateKey and accepts peers without the handshake until
	// RequirePeerAuth.
	Legacy bool
	// StreamConfig bounds the handshakes.
	StreamConfig
}

// PeerAuthState is how a node authenticates its Raft connections.
type PeerAuthState struct {
	// Enabled is false with TLS (mutual TLS authenticates) or an
	// in-process transport.
	Enabled bool
	// Key is the cluster's member key, nil until this node knows it.
	Key []byte
	// Required: every connection must authenticate; false while members
	// of an older release may remain.
	Required bool
	// Waiting: a node that has not yet learnt from its cluster how the
	// cluster authenticates (a new node joining, or one without its key
	// file); it refuses every connection until then.
	Waiting bool
}

const (
	keyFileName  = "member-key.json"
	helloVersion = 1
	nonceSize    = 32
	macSize      = sha256.Size
	// legacyFor is how long a dialer talks to a peer that hung up on its
	// hello without the handshake before trying the handshake again (the
	// peer may have been upgraded meanwhile).
	legacyFor = 30 * time.Second
)

var (
	helloMagic = [4]byte{'A', 'X', 'R', 'A'}
	kdfLabel   = []byte("ax raft connection v1")
	macServer  = []byte("server")
	macClient  = []byte("client")

	// errOlderPeer: the peer hung up on the hello without a word, as a
	// member of an older release does.
	errOlderPeer = errors.New("the peer closed the connection during the handshake: it refused this node's key or address, or runs a release without the handshake")
	// ErrKeyConflict: SetMemberKey was given a key other than the one
	// this node already holds.
	ErrKeyConflict = errors.New("raftnode: a different member key than this node's")
)

// keyFile is the persisted state of a node's Raft authentication.
type keyFile struct {
	MemberKey []byte `json:"memberKey"`
	Required  bool   `json:"required"`
}

// peerAuth is the handshaker of the member-key handshake and the node's
// key state.
type peerAuth struct {
	path string // the key file
	self string // this node's advertised Raft address
	log  hclog.Logger

	mu          sync.Mutex
	member      []byte // the member key, nil until known
	key         []byte // derived from member
	required    bool
	waiting     bool
	legacyPeers map[raft.ServerAddress]time.Time // peers to dial without the handshake, until when
	legacyConns map[*legacyConn]struct{}         // accepted without the handshake
	limit       logLimiter
}

var _ handshaker = (*peerAuth)(nil)

// loadPeerAuth reads the key file in dir or decides the node's first
// state: fresh says the node has no Raft state, bootstrap that it starts
// a new cluster.
func loadPeerAuth(dir, self string, cfg PeerAuthConfig, fresh, bootstrap bool, logger hclog.Logger) (*peerAuth, error) {
	p := &peerAuth{path: filepath.Join(dir, keyFileName), self: self, log: logger,
		legacyPeers: map[raft.ServerAddress]time.Time{}, legacyConns: map[*legacyConn]struct{}{},
		limit: logLimiter{burst: 5, every: time.Second}}
	kf, err := readKeyFile(p.path)
	switch {
	case err == nil:
		if fi, err := os.Stat(p.path); err == nil && fi.Mode().Perm()&0o077 != 0 {
			logger.Warn("the member key file is readable by others: chmod 600 it", "path", p.path, "mode", fi.Mode().Perm().String())
		}
		p.setKey(kf.MemberKey)
		p.required = kf.Required || cfg.Required
		if p.required && !kf.Required {
			return p, p.save()
		}
		return p, nil
	case !errors.Is(err, os.ErrNotExist):
		return nil, fmt.Errorf("raftnode: member key: %w", err)
	}
	switch {
	case fresh && bootstrap:
		key := make([]byte, 32)
		if _, err := rand.Read(key); err != nil {
			return nil, fmt.Errorf("raftnode: %w", err)
		}
		p.setKey(key)
		p.required = true
		return p, p.save()
	case fresh:
		p.required, p.waiting = true, true
	case cfg.Legacy:
		if cfg.StateKey != nil {
			p.setKey(cfg.StateKey)
			return p, p.save()
		}
	default:
		// Its state machine cannot say whether the cluster requires the
		// handshake (it does, or the state was rebuilt): ask it.
		p.required, p.waiting = true, true
		logger.Error("this node has Raft state but no member key file, and its cluster requires one: asking the other members for it (or copy "+keyFileName+" into the raft dir from another member)",
			"path", p.path)
	}
	return p, nil
}

func (p *peerAuth) setKey(member []byte) {
	p.member = append([]byte(nil), member...)
	p.key = deriveKey(p.member)
}

// deriveKey is the handshake's key for a member key.
func deriveKey(member []byte) []byte {
	h := hmac.New(sha256.New, member)
	h.Write(kdfLabel)
	return h.Sum(nil)
}

// ReadMemberKey reads the member key a node keeps in its data dir, and
// whether the node requires the handshake.
func ReadMemberKey(dataDir string) (key []byte, required bool, err error) {
	kf, err := readKeyFile(filepath.Join(dataDir, "raft", keyFileName))
	return kf.MemberKey, kf.Required, err
}

// readKeyFile reads a key file; a damaged one is an error that says what
// to do.
func readKeyFile(path string) (keyFile, error) {
	var kf keyFile
	b, err := os.ReadFile(path)
	if err != nil {
		return kf, err
	}
	if err := json.Unmarshal(b, &kf); err != nil {
		return keyFile{}, fmt.Errorf("%s is damaged (%v): copy it from another member", path, err)
	}
	if len(kf.MemberKey) == 0 {
		return keyFile{}, fmt.Errorf("%s is damaged (no key): copy it from another member", path)
	}
	return kf, nil
}

// DialPeer dials the Raft port at addr and proves membership with the
// member key, as a member does; the connection then carries raft's RPCs.
// For tools and tests.
func DialPeer(addr string, memberKey []byte, timeout time.Duration) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	if err := clientHandshake(ctx, c, deriveKey(memberKey), raft.ServerAddress(addr)); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// save writes the key file (owner-only), replacing it atomically. Called
// with p.mu held or before p is shared.
func (p *peerAuth) save() error {
	if p.member == nil {
		return nil
	}
	b, err := json.Marshal(keyFile{MemberKey: p.member, Required: p.required})
	if err != nil {
		return err
	}
	if err := writeFileDurable(p.path, b); err != nil {
		return fmt.Errorf("raftnode: save member key: %w", err)
	}
	return nil
}

func (p *peerAuth) state() PeerAuthState {
	p.mu.Lock()
	defer p.mu.Unlock()
	return PeerAuthState{Enabled: true, Key: append([]byte(nil), p.member...), Required: p.required, Waiting: p.waiting}
}

// set adopts the cluster's member key; required also requires the
// handshake from now on.
func (p *peerAuth) set(member []byte, required bool) error {
	if len(member) == 0 {
		return errors.New("raftnode: empty member key")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.member != nil && !hmac.Equal(p.member, member) {
		return ErrKeyConflict
	}
	changed := p.member == nil || p.waiting || required && !p.required
	p.setKey(member)
	if p.waiting {
		p.waiting, p.required = false, required
	}
	if required {
		p.requireLocked()
	}
	if !changed {
		return nil
	}
	return p.save()
}

// allowLegacy lets a waiting node talk to members of an older release:
// its cluster has no member key to give.
func (p *peerAuth) allowLegacy() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.waiting {
		p.waiting, p.required = false, false
	}
}

// require makes the handshake mandatory, for good: connections accepted
// without it are closed.
func (p *peerAuth) require() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.required && !p.waiting {
		return nil
	}
	p.requireLocked()
	return p.save()
}

func (p *peerAuth) requireLocked() {
	p.required, p.waiting = true, false
	clear(p.legacyPeers)
	for c := range p.legacyConns {
		_ = c.Conn.Close()
	}
	clear(p.legacyConns)
}

func (p *peerAuth) refusal() string { return "it did not prove membership" }

// accept runs the acceptor's side of the handshake on c, or, while older
// members may remain, passes a connection that opens with a raft RPC.
func (p *peerAuth) accept(ctx context.Context, c net.Conn) (net.Conn, error) {
	stop := context.AfterFunc(ctx, func() { _ = c.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	var first [1]byte
	if _, err := io.ReadFull(c, first[:]); err != nil {
		return nil, fmt.Errorf("no handshake: %w", err)
	}
	p.mu.Lock()
	key, required := p.key, p.required
	if first[0] != helloMagic[0] {
		defer p.mu.Unlock()
		if required {
			return nil, errors.New("no handshake: the peer is not a member, or a member of a release without it")
		}
		return p.legacyLocked(c, first[:])
	}
	p.mu.Unlock()
	hello, target, err := readHello(c, first[0])
	if err != nil {
		return nil, err
	}
	if key == nil {
		return nil, errors.New("this node has no member key yet")
	}
	if target != p.self {
		return nil, fmt.Errorf("the peer dialed %s, and this node is %s", target, p.self)
	}
	nonce := make([]byte, nonceSize)
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	transcript := append(hello, nonce...)
	if _, err := c.Write(append(nonce, mac(key, macServer, transcript)...)); err != nil {
		return nil, fmt.Errorf("handshake: %w", err)
	}
	proof := make([]byte, macSize)
	if _, err := io.ReadFull(c, proof); err != nil {
		return nil, fmt.Errorf("handshake: no proof: %w", err)
	}
	if !hmac.Equal(proof, mac(key, macClient, transcript)) {
		return nil, errors.New("wrong member key")
	}
	if !stop() {
		return nil, ctx.Err()
	}
	return c, nil
}

// readHello reads the rest of a hello whose first byte is first.
func readHello(c net.Conn, first byte) (hello []byte, target string, err error) {
	const fixed = len(helloMagic) + 1 + nonceSize + 1
	buf := make([]byte, fixed, fixed+255)
	buf[0] = first
	if _, err := io.ReadFull(c, buf[1:]); err != nil {
		return nil, "", fmt.Errorf("handshake: short hello: %w", err)
	}
	if !bytes.Equal(buf[:len(helloMagic)], helloMagic[:]) {
		return nil, "", errors.New("no handshake: not a hello")
	}
	if v := buf[len(helloMagic)]; v != helloVersion {
		return nil, "", fmt.Errorf("handshake version %d: this node speaks %d", v, helloVersion)
	}
	n := int(buf[fixed-1])
	buf = buf[:fixed+n]
	if _, err := io.ReadFull(c, buf[fixed:]); err != nil {
		return nil, "", fmt.Errorf("handshake: short hello: %w", err)
	}
	return buf, string(buf[fixed:]), nil
}

// dial connects to addr and runs the dialer's side of the handshake.
func (p *peerAuth) dial(ctx context.Context, addr raft.ServerAddress) (net.Conn, error) {
	p.mu.Lock()
	key, required := p.key, p.required
	inClear := !required && time.Now().Before(p.legacyPeers[addr])
	p.mu.Unlock()
	if key == nil && required {
		return nil, errors.New("this node has no member key yet")
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", string(addr))
	if err != nil {
		return nil, err
	}
	if key == nil || inClear {
		return p.legacy(c, nil)
	}
	err = clientHandshake(ctx, c, key, addr)
	if err == nil {
		return c, nil
	}
	c.Close()
	p.mu.Lock()
	required = p.required
	if errors.Is(err, errOlderPeer) && !required {
		p.legacyPeers[addr] = time.Now().Add(legacyFor)
	}
	p.mu.Unlock()
	if errors.Is(err, errOlderPeer) && !required {
		p.limit.log(p.log.Info, "raft peer runs a release without the member-key handshake: talking to it without it until every member is upgraded",
			"peer", string(addr))
		c, err := d.DialContext(ctx, "tcp", string(addr))
		if err != nil {
			return nil, err
		}
		return p.legacy(c, nil)
	}
	p.limit.log(p.log.Warn, "raft peer did not prove membership: not talking to it", "peer", string(addr), "reason", err.Error())
	return nil, err
}

// clientHandshake runs the dialer's side of the handshake on c.
func clientHandshake(ctx context.Context, c net.Conn, key []byte, addr raft.ServerAddress) error {
	if len(addr) > 255 {
		return fmt.Errorf("address %q is too long for the handshake", addr)
	}
	if d, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(d)
	}
	stop := context.AfterFunc(ctx, func() { _ = c.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	hello := make([]byte, 0, len(helloMagic)+1+nonceSize+1+len(addr))
	hello = append(hello, helloMagic[:]...)
	hello = append(hello, helloVersion)
	nonce := make([]byte, nonceSize)
	if _, err := rand.Read(nonce); err != nil {
		return err
	}
	hello = append(hello, nonce...)
	hello = append(hello, byte(len(addr)))
	hello = append(hello, addr...)
	if _, err := c.Write(hello); err != nil {
		return fmt.Errorf("handshake: %w", err)
	}
	reply := make([]byte, nonceSize+macSize)
	if n, err := io.ReadFull(c, reply); err != nil {
		if n == 0 && (errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET)) {
			return errOlderPeer
		}
		return fmt.Errorf("handshake: %w", err)
	}
	transcript := append(hello, reply[:nonceSize]...)
	if !hmac.Equal(reply[nonceSize:], mac(key, macServer, transcript)) {
		return errors.New("it did not prove membership: wrong member key")
	}
	if _, err := c.Write(mac(key, macClient, transcript)); err != nil {
		return fmt.Errorf("handshake: %w", err)
	}
	if !stop() {
		return ctx.Err()
	}
	_ = c.SetDeadline(time.Time{})
	return nil
}

// mac is HMAC-SHA256(key, label ‖ transcript).
func mac(key, label, transcript []byte) []byte {
	h := hmac.New(sha256.New, key)
	h.Write(label)
	h.Write(transcript)
	return h.Sum(nil)
}

// legacy registers c, a connection without the handshake, to be closed
// when the handshake becomes mandatory; first is what was read of it
// already. It refuses c if the handshake became mandatory meanwhile.
func (p *peerAuth) legacy(c net.Conn, first []byte) (net.Conn, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.legacyLocked(c, first)
}

func (p *peerAuth) legacyLocked(c net.Conn, first []byte) (net.Conn, error) {
	if p.required {
		c.Close()
		return nil, errors.New("the handshake is required now")
	}
	lc := &legacyConn{Conn: c, first: first, p: p}
	p.legacyConns[lc] = struct{}{}
	return lc, nil
}

// legacyConn is a connection without the handshake, with a member of an
// older release (or before this node knows the key of a cluster of one):
// it gives back what the acceptor read first, and is closed when the
// handshake becomes mandatory.
type legacyConn struct {
	net.Conn
	first []byte
	p     *peerAuth
}

func (c *legacyConn) Read(b []byte) (int, error) {
	if len(c.first) > 0 && len(b) > 0 {
		n := copy(b, c.first)
		c.first = c.first[n:]
		return n, nil
	}
	return c.Conn.Read(b)
}

func (c *legacyConn) Close() error {
	c.p.mu.Lock()
	delete(c.p.legacyConns, c)
	c.p.mu.Unlock()
	return c.Conn.Close()
}
