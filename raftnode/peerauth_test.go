package raftnode

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/ax-scheduler/ax/internal/testkit"
	"github.com/ax-scheduler/ax/tlsutil"
)

var (
	keyA = bytes.Repeat([]byte{0xa1}, 32)
	keyB = bytes.Repeat([]byte{0xb2}, 32)
)

// vote is a RequestVote with a term no member would send.
func vote(from string) *raft.RequestVoteRequest {
	return &raft.RequestVoteRequest{
		RPCHeader: raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte(from), Addr: []byte("127.0.0.1:1")},
		Term:      1000, LastLogIndex: 1 << 40, LastLogTerm: 999,
	}
}

// authNode is a transport with the member-key handshake and its key
// state, as a node has them.
type authNode struct {
	tr   *raft.NetworkTransport
	auth *peerAuth
	addr string
}

// newAuthNode starts a transport whose key state is member (nil: none)
// and required.
func newAuthNode(t *testing.T, member []byte, required bool, cfg StreamConfig, log hclog.Logger) *authNode {
	t.Helper()
	addr := freeAddr(t)
	// Adopted as an upgraded node does, then required if asked.
	p, err := loadPeerAuth(t.TempDir(), addr.String(), PeerAuthConfig{StateKey: member, Legacy: true}, false, false, log)
	if err != nil {
		t.Fatal(err)
	}
	p.required = required
	tr, err := newStreamTransport(addr.String(), addr, p, cfg, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close() })
	return &authNode{tr: tr, auth: p, addr: addr.String()}
}

func (n *authNode) vote(to *authNode) (*raft.RequestVoteResponse, error) {
	var resp raft.RequestVoteResponse
	err := n.tr.RequestVote("x", raft.ServerAddress(to.addr), vote(n.addr), &resp)
	return &resp, err
}

// expectNothing fails the test if got receives an RPC within d.
func expectNothing(t *testing.T, got <-chan any, d time.Duration) {
	t.Helper()
	select {
	case cmd := <-got:
		t.Fatalf("an RPC reached raft: %#v", cmd)
	case <-time.After(d):
	}
}

func expectVote(t *testing.T, got <-chan any) {
	t.Helper()
	select {
	case cmd := <-got:
		if _, ok := cmd.(*raft.RequestVoteRequest); !ok {
			t.Fatalf("delivered %#v", cmd)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the RPC did not reach raft")
	}
}

// recordingConn keeps what is written on it.
type recordingConn struct {
	net.Conn
	mu  sync.Mutex
	out bytes.Buffer
}

func (c *recordingConn) Write(b []byte) (int, error) {
	c.mu.Lock()
	c.out.Write(b)
	c.mu.Unlock()
	return c.Conn.Write(b)
}

func TestPeerAuth_Handshake(t *testing.T) {
	var logs testkit.Buffer
	log := hclog.New(&hclog.LoggerOptions{Output: &logs, Level: hclog.Info})
	n1 := newAuthNode(t, keyA, true, StreamConfig{}, log)
	got := serve(t, n1.tr)

	t.Run("a member gets through", func(t *testing.T) {
		n2 := newAuthNode(t, keyA, true, StreamConfig{}, log)
		resp, err := n2.vote(n1)
		if err != nil {
			t.Fatal(err)
		}
		if !resp.Granted || resp.Term != 7 {
			t.Fatalf("got %+v, want the served response", resp)
		}
		expectVote(t, got)
	})
	t.Run("wrong key", func(t *testing.T) {
		n3 := newAuthNode(t, keyB, true, StreamConfig{}, log)
		if _, err := n3.vote(n1); err == nil {
			t.Fatal("a node with another key got an answer")
		}
		expectNothing(t, got, 200*time.Millisecond)
	})
	t.Run("no key: a raft RPC in clear", func(t *testing.T) {
		c, err := net.Dial("tcp", n1.addr)
		if err != nil {
			t.Fatal(err)
		}
		from := c.LocalAddr().String()
		sendRaw(t, c, forgeRPC(t, rpcRequestVote, vote("evil")))
		expectNothing(t, got, 200*time.Millisecond)
		if out := logs.String(); !strings.Contains(out, "refused raft connection") || !strings.Contains(out, from) {
			t.Errorf("no refusal naming %s logged:\n%s", from, out)
		}
	})
	t.Run("a hello meant for another address", func(t *testing.T) {
		c, err := net.Dial("tcp", n1.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		// The right key, relayed from a dial of another member's address.
		if err := clientHandshake(ctx, c, deriveKey(keyA), "127.0.0.1:1"); err == nil {
			t.Fatal("the handshake passed for another address")
		}
		expectNothing(t, got, 200*time.Millisecond)
	})
	t.Run("replay of a member's handshake", func(t *testing.T) {
		raw, err := net.Dial("tcp", n1.addr)
		if err != nil {
			t.Fatal(err)
		}
		c := &recordingConn{Conn: raw}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := clientHandshake(ctx, c, deriveKey(keyA), raft.ServerAddress(n1.addr)); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Write(forgeRPC(t, rpcRequestVote, vote("member"))); err != nil {
			t.Fatal(err)
		}
		expectVote(t, got)
		c.Close()
		replay, err := net.Dial("tcp", n1.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer replay.Close()
		// The acceptor answers the hello with a fresh challenge, which
		// the recorded proof does not meet: it hangs up.
		_ = replay.SetDeadline(time.Now().Add(5 * time.Second))
		_, _ = replay.Write(c.out.Bytes())
		answer, err := io.ReadAll(replay)
		if errors.Is(err, syscall.ECONNRESET) { // closed with the replayed RPC unread
			err = nil
		}
		if err != nil || len(answer) != nonceSize+macSize {
			t.Fatalf("got %d bytes (%v), want the %d-byte challenge and the end", len(answer), err, nonceSize+macSize)
		}
		expectNothing(t, got, 200*time.Millisecond)
	})
	t.Run("the dialer refuses an acceptor without the key", func(t *testing.T) {
		// A squatter on a member's address answers the hello with bytes
		// of the right length.
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		rest := make(chan int, 1)
		go func() {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close()
			_, _ = c.Read(make([]byte, 512))
			_, _ = c.Write(bytes.Repeat([]byte{1}, nonceSize+macSize))
			_ = c.SetReadDeadline(time.Now().Add(time.Second))
			n, _ := c.Read(make([]byte, 512))
			rest <- n
		}()
		n2 := newAuthNode(t, keyA, true, StreamConfig{}, log)
		var resp raft.RequestVoteResponse
		if err := n2.tr.RequestVote("x", raft.ServerAddress(ln.Addr().String()), vote("member"), &resp); err == nil {
			t.Fatal("the dialer talked to a squatter")
		}
		if n := <-rest; n > 0 {
			t.Fatalf("the dialer sent the squatter %d bytes after its hello", n)
		}
		if out := logs.String(); !strings.Contains(out, "did not prove membership") {
			t.Errorf("the dialer logged no refusal:\n%s", out)
		}
	})
}

// TestPeerAuth_SlowPeer: a peer that connects and says nothing is closed
// at the handshake deadline and meanwhile holds up no member.
func TestPeerAuth_SlowPeer(t *testing.T) {
	n1 := newAuthNode(t, keyA, true, StreamConfig{HandshakeTimeout: time.Second}, hclog.NewNullLogger())
	got := serve(t, n1.tr)
	start := time.Now()
	silent, err := net.Dial("tcp", n1.addr)
	if err != nil {
		t.Fatal(err)
	}
	// Half a hello, then silence.
	if _, err := silent.Write(helloMagic[:]); err != nil {
		t.Fatal(err)
	}
	n2 := newAuthNode(t, keyA, true, StreamConfig{}, hclog.NewNullLogger())
	if _, err := n2.vote(n1); err != nil {
		t.Fatal(err)
	}
	expectVote(t, got)
	if el := time.Since(start); el > 900*time.Millisecond {
		t.Errorf("a member waited %s behind a silent peer", el)
	}
	sendRaw(t, silent, nil)
	if el := time.Since(start); el < 900*time.Millisecond || el > 3*time.Second {
		t.Errorf("the silent peer was held %s, want ~1s", el)
	}
}

// TestPeerAuth_Upgrade: while members of an older release may remain, an
// acceptor takes their plain RPCs and a dialer falls back to talking to
// them in clear; once the handshake is required, the plain connections
// are closed and refused.
func TestPeerAuth_Upgrade(t *testing.T) {
	log := hclog.NewNullLogger()
	n1 := newAuthNode(t, keyA, false, StreamConfig{}, log)
	got := serve(t, n1.tr)

	// An old member dials n1 in clear.
	oldAddr := freeAddr(t)
	old, err := raft.NewTCPTransportWithLogger(oldAddr.String(), oldAddr, 1, 5*time.Second, log)
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	oldGot := serve(t, old)
	var resp raft.RequestVoteResponse
	if err := old.RequestVote("n1", raft.ServerAddress(n1.addr), vote("old"), &resp); err != nil {
		t.Fatalf("old member to upgraded one: %v", err)
	}
	expectVote(t, got)
	// n1 dials the old member: the hello is hung up on, and n1 talks to
	// it in clear.
	if err := n1.tr.RequestVote("old", old.LocalAddr(), vote("n1"), &resp); err != nil {
		t.Fatalf("upgraded member to old one: %v", err)
	}
	expectVote(t, oldGot)
	// An upgraded member with the key uses the handshake.
	n2 := newAuthNode(t, keyA, false, StreamConfig{}, log)
	if _, err := n2.vote(n1); err != nil {
		t.Fatal(err)
	}
	expectVote(t, got)

	if err := n1.auth.require(); err != nil {
		t.Fatal(err)
	}
	// The old member's pooled connection was closed, and a new one is
	// refused.
	if err := old.RequestVote("n1", raft.ServerAddress(n1.addr), vote("old"), &resp); err == nil {
		t.Fatal("old member still heard after the handshake became required")
	}
	expectNothing(t, got, 200*time.Millisecond)
	if err := n1.tr.RequestVote("old", old.LocalAddr(), vote("n1"), &resp); err == nil {
		t.Fatal("n1 still talks to the old member in clear")
	}
	if _, err := n2.vote(n1); err != nil {
		t.Fatalf("upgraded member after the switch: %v", err)
	}
	expectVote(t, got)
	if kf, err := readKeyFile(n1.auth.path); err != nil || !kf.Required {
		t.Fatalf("key file after require: %+v, %v", kf, err)
	}
}

func TestLoadPeerAuth(t *testing.T) {
	tests := []struct {
		name             string
		file             string // key file content, "" for none
		cfg              PeerAuthConfig
		fresh, bootstrap bool
		wantKey          []byte // nil: none; keyB stands for "generated"
		required         bool
		waiting          bool
		wantErr          string
	}{
		{name: "new cluster: a key is made", fresh: true, bootstrap: true, wantKey: keyB, required: true},
		{name: "new node joining: waits for the cluster's", fresh: true, required: true, waiting: true},
		{name: "the key file", file: `{"memberKey":"oaGhoaGhoaGhoaGhoaGhoaGhoaGhoaGhoaGhoaGhoaE=","required":true}`, wantKey: keyA, required: true},
		{name: "the key file, the cluster since required", file: `{"memberKey":"oaGhoaGhoaGhoaGhoaGhoaGhoaGhoaGhoaGhoaGhoaE="}`,
			cfg: PeerAuthConfig{Required: true}, wantKey: keyA, required: true},
		{name: "upgraded from a release without it", cfg: PeerAuthConfig{StateKey: keyA, Legacy: true}, wantKey: keyA},
		{name: "upgraded from a release without a member key", cfg: PeerAuthConfig{Legacy: true}},
		{name: "state but no key file in a cluster that requires it", cfg: PeerAuthConfig{StateKey: keyA, Required: true}, required: true, waiting: true},
		{name: "state but no key file, and a rebuilt state machine", required: true, waiting: true},
		{name: "a damaged key file", file: `{"memberKey":""}`, wantErr: "damaged"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dataDir := t.TempDir()
			dir := filepath.Join(dataDir, "raft")
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, keyFileName)
			if tc.file != "" {
				if err := os.WriteFile(path, []byte(tc.file), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			p, err := loadPeerAuth(dir, "127.0.0.1:1", tc.cfg, tc.fresh, tc.bootstrap, hclog.NewNullLogger())
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got %v, want an error with %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			st := p.state()
			switch {
			case tc.wantKey == nil && len(st.Key) != 0:
				t.Errorf("key %x, want none", st.Key)
			case bytes.Equal(tc.wantKey, keyB) && len(st.Key) != 32:
				t.Errorf("key %x, want 32 new bytes", st.Key)
			case bytes.Equal(tc.wantKey, keyA) && !bytes.Equal(st.Key, keyA):
				t.Errorf("key %x, want %x", st.Key, keyA)
			}
			if st.Required != tc.required || st.Waiting != tc.waiting {
				t.Errorf("required %v waiting %v, want %v %v", st.Required, st.Waiting, tc.required, tc.waiting)
			}
			fi, err := os.Stat(path)
			if len(st.Key) == 0 {
				if err == nil && tc.file == "" {
					t.Errorf("a key file without a key")
				}
				return
			}
			if err != nil {
				t.Fatalf("no key file: %v", err)
			}
			if fi.Mode().Perm() != 0o600 && tc.file == "" {
				t.Errorf("key file mode %v, want 0600", fi.Mode().Perm())
			}
			key, required, err := ReadMemberKey(dataDir)
			if err != nil || !bytes.Equal(key, st.Key) || required != st.Required {
				t.Errorf("ReadMemberKey: %x %v %v, want %x %v", key, required, err, st.Key, st.Required)
			}
		})
	}
}

func TestPeerAuth_Set(t *testing.T) {
	dir := t.TempDir()
	p, err := loadPeerAuth(dir, "127.0.0.1:1", PeerAuthConfig{}, true, false, hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	// A joining node learns the cluster's key; the cluster does not
	// require the handshake yet.
	if err := p.set(keyA, false); err != nil {
		t.Fatal(err)
	}
	if st := p.state(); st.Waiting || st.Required || !bytes.Equal(st.Key, keyA) {
		t.Fatalf("after set: %+v", st)
	}
	if err := p.set(keyB, false); !errors.Is(err, ErrKeyConflict) {
		t.Fatalf("another key: got %v, want ErrKeyConflict", err)
	}
	if err := p.set(keyA, true); err != nil {
		t.Fatal(err)
	}
	kf, err := readKeyFile(filepath.Join(dir, keyFileName))
	if err != nil || !bytes.Equal(kf.MemberKey, keyA) || !kf.Required {
		t.Fatalf("key file %+v, %v", kf, err)
	}
	// Required stays.
	if err := p.set(keyA, false); err != nil || !p.state().Required {
		t.Fatalf("required dropped: %+v %v", p.state(), err)
	}

	// A node joining an older cluster, which has no key to give.
	q, err := loadPeerAuth(t.TempDir(), "127.0.0.1:1", PeerAuthConfig{}, true, false, hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	q.allowLegacy()
	if st := q.state(); st.Waiting || st.Required {
		t.Fatalf("after allowLegacy: %+v", st)
	}
}

// plainHandshaker authenticates nothing: the baseline of
// BenchmarkStream_Connect.
type plainHandshaker struct{}

func (plainHandshaker) accept(_ context.Context, c net.Conn) (net.Conn, error) { return c, nil }
func (plainHandshaker) dial(ctx context.Context, addr raft.ServerAddress) (net.Conn, error) {
	var d net.Dialer
	return d.DialContext(ctx, "tcp", string(addr))
}
func (plainHandshaker) refusal() string { return "" }

// BenchmarkStream_Connect measures what it costs to establish one Raft
// connection, from the dial until the acceptor hands it to raft: plain
// TCP, the member-key handshake, mutual TLS 1.3.
//
//	go test -run xxx -bench Stream_Connect ./raftnode/
func BenchmarkStream_Connect(b *testing.B) {
	dir := b.TempDir()
	if _, _, err := tlsutil.CreateCA(dir, 0); err != nil {
		b.Fatal(err)
	}
	cert, key, err := tlsutil.CreateNodeCert(dir, "n1", nil, nil, 0)
	if err != nil {
		b.Fatal(err)
	}
	h, err := tlsutil.Load(tlsutil.Config{CAFile: dir + "/" + tlsutil.CACertFile, CertFile: cert, KeyFile: key})
	if err != nil {
		b.Fatal(err)
	}
	log := hclog.NewNullLogger()
	for _, tc := range []struct {
		name string
		hs   func(self string) handshaker
	}{
		{"tcp", func(string) handshaker { return plainHandshaker{} }},
		{"member-key", func(self string) handshaker {
			p, err := loadPeerAuth(b.TempDir(), self, PeerAuthConfig{StateKey: keyA, Legacy: true}, false, false, log)
			if err != nil {
				b.Fatal(err)
			}
			p.required = true
			return p
		}},
		{"tls", func(string) handshaker {
			return tlsHandshaker{TLSConfig{Server: h.RaftServerConfig(), Client: h.PeerClientConfig()}}
		}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			addr := freeAddr(b)
			s, err := newStream(addr.String(), addr, tc.hs(addr.String()), StreamConfig{}, log)
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			accepted := make(chan struct{})
			go func() {
				for {
					c, err := s.Accept()
					if err != nil {
						return
					}
					c.Close()
					accepted <- struct{}{}
				}
			}()
			b.ResetTimer()
			for range b.N {
				c, err := s.Dial(raft.ServerAddress(addr.String()), 5*time.Second)
				if err != nil {
					b.Fatal(err)
				}
				<-accepted
				c.Close()
			}
		})
	}
}
