package raftnode

import (
	"bytes"
	"crypto/tls"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-msgpack/v2/codec"
	"github.com/hashicorp/raft"

	"github.com/ax-scheduler/ax/internal/testkit"
	"github.com/ax-scheduler/ax/tlsutil"
)

// rpcRequestVote is raft's wire type byte for RequestVote
// (net_transport.go).
const rpcRequestVote = 1

// forgeRPC encodes req the way raft's NetworkTransport sends it: the RPC
// type byte, then the msgpack-encoded request.
func forgeRPC(t *testing.T, rpcType byte, req any) []byte {
	t.Helper()
	var buf bytes.Buffer
	buf.WriteByte(rpcType)
	if err := codec.NewEncoder(&buf, &codec.MsgpackHandle{}).Encode(req); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// freeAddr returns a loopback address that was free a moment ago.
func freeAddr(t testing.TB) *net.TCPAddr {
	t.Helper()
	addr, err := net.ResolveTCPAddr("tcp", testkit.FreeAddr(t))
	if err != nil {
		t.Fatal(err)
	}
	return addr
}

// serve answers every RPC a transport receives with a granted vote and
// reports the requests on the returned channel.
func serve(t *testing.T, tr raft.Transport) <-chan any {
	got := make(chan any, 16)
	go func() {
		for rpc := range tr.Consumer() {
			got <- rpc.Command
			rpc.Respond(&raft.RequestVoteResponse{Term: 7, Granted: true}, nil)
		}
	}()
	return got
}

func holder(t *testing.T, dir, node string) *tlsutil.Holder {
	t.Helper()
	cert, key, err := tlsutil.CreateNodeCert(dir, node, nil, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	h, err := tlsutil.Load(tlsutil.Config{CAFile: dir + "/" + tlsutil.CACertFile, CertFile: cert, KeyFile: key})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func tlsTransport(t *testing.T, h *tlsutil.Holder, log hclog.Logger) *raft.NetworkTransport {
	t.Helper()
	addr := freeAddr(t)
	tr, err := newTLSTransport(addr.String(), addr, TLSConfig{Server: h.RaftServerConfig(), Client: h.PeerClientConfig()}, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close() })
	return tr
}

// sendRaw writes data on c and waits until the other side closes it;
// it fails the test if an answer comes back instead.
func sendRaw(t *testing.T, c net.Conn, data []byte) {
	t.Helper()
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	_, _ = c.Write(data) // may fail already: the server hung up
	n, err := io.ReadFull(c, make([]byte, 1))
	if err == nil || n > 0 {
		t.Fatalf("got an answer, want the connection closed")
	}
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatalf("connection still open after 5s")
	}
}

func TestTLSTransport_RefusesStrangers(t *testing.T) {
	dir, otherDir := t.TempDir(), t.TempDir()
	for _, d := range []string{dir, otherDir} {
		if _, _, err := tlsutil.CreateCA(d, 0); err != nil {
			t.Fatal(err)
		}
	}
	var logs testkit.Buffer
	log := hclog.New(&hclog.LoggerOptions{Output: &logs, Level: hclog.Warn})
	h1, h2, stranger := holder(t, dir, "n1"), holder(t, dir, "n2"), holder(t, otherDir, "n2")
	t1 := tlsTransport(t, h1, log)
	got := serve(t, t1)
	vote := &raft.RequestVoteRequest{
		RPCHeader: raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte("n2"), Addr: []byte("127.0.0.1:1")},
		Term:      1000, LastLogIndex: 1 << 40, LastLogTerm: 999,
	}
	forged := forgeRPC(t, rpcRequestVote, vote)

	// A plain TCP client speaking raft's wire protocol.
	plain, err := net.Dial("tcp", string(t1.LocalAddr()))
	if err != nil {
		t.Fatal(err)
	}
	plainFrom := plain.LocalAddr().String()
	sendRaw(t, plain, forged)

	// A client certificate of the cluster's CA: not a node.
	clientCert, clientKey, err := tlsutil.CreateClientCert(dir, "alice", 0)
	if err != nil {
		t.Fatal(err)
	}
	cc, err := tlsutil.NewClientConfig(dir+"/"+tlsutil.CACertFile, clientCert, clientKey)
	if err != nil {
		t.Fatal(err)
	}
	cc.ServerName = tlsutil.ServerName
	if c, err := tls.Dial("tcp", string(t1.LocalAddr()), cc); err == nil {
		sendRaw(t, c, forged)
	}

	// A node certificate of another CA.
	ts := tlsTransport(t, stranger, log)
	var resp raft.RequestVoteResponse
	if err := ts.RequestVote("n1", t1.LocalAddr(), vote, &resp); err == nil {
		t.Fatal("a node of another CA got an answer")
	}

	// A node of the cluster gets through, and its request is the first
	// the consumer sees.
	t2 := tlsTransport(t, h2, log)
	if err := t2.RequestVote("n1", t1.LocalAddr(), vote, &resp); err != nil {
		t.Fatalf("node to node: %v", err)
	}
	if !resp.Granted || resp.Term != 7 {
		t.Fatalf("got response %+v, want the served one", resp)
	}
	select {
	case cmd := <-got:
		if rv, ok := cmd.(*raft.RequestVoteRequest); !ok || string(rv.ID) != "n2" {
			t.Fatalf("first RPC delivered: %#v", cmd)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the node's RPC was not delivered")
	}
	select {
	case cmd := <-got:
		t.Fatalf("a second RPC was delivered: %#v", cmd)
	default:
	}
	out := logs.String()
	if !strings.Contains(out, "refused raft connection") || !strings.Contains(out, plainFrom) {
		t.Errorf("log lacks a refusal naming %s:\n%s", plainFrom, out)
	}

	// Control: the same bytes on a plain TCP transport are an RPC, so the
	// refusals above are the TLS layer's doing.
	addr := freeAddr(t)
	plainTr, err := raft.NewTCPTransportWithLogger(addr.String(), addr, 1, time.Second, log)
	if err != nil {
		t.Fatal(err)
	}
	defer plainTr.Close()
	plainGot := serve(t, plainTr)
	c, err := net.Dial("tcp", addr.String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write(forged); err != nil {
		t.Fatal(err)
	}
	select {
	case cmd := <-plainGot:
		if rv, ok := cmd.(*raft.RequestVoteRequest); !ok || rv.Term != 1000 {
			t.Fatalf("plain transport decoded %#v", cmd)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("control: the forged RPC did not reach a plain transport")
	}
}

func TestTLSTransport_HandshakeDeadlineAndCap(t *testing.T) {
	dir := t.TempDir()
	if _, _, err := tlsutil.CreateCA(dir, 0); err != nil {
		t.Fatal(err)
	}
	h := holder(t, dir, "n1")
	addr := freeAddr(t)
	tr, err := newTLSTransport(addr.String(), addr, TLSConfig{Server: h.RaftServerConfig(), Client: h.PeerClientConfig(),
		HandshakeTimeout: 2 * time.Second, MaxPending: 1}, hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	// A client that connects and says nothing holds the only handshake
	// slot until its deadline; one more connection meanwhile is closed at
	// once.
	silent, err := net.Dial("tcp", addr.String())
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	extra, err := net.Dial("tcp", addr.String())
	if err != nil {
		t.Fatal(err)
	}
	sendRaw(t, extra, nil)
	if el := time.Since(start); el > time.Second {
		t.Errorf("a connection over the cap was held %s, want it closed at once", el)
	}
	sendRaw(t, silent, nil)
	if el := time.Since(start); el < 1500*time.Millisecond || el > 4*time.Second {
		t.Errorf("a silent client was held %s, want ~2s", el)
	}
}

func TestLogLimiter_Allow(t *testing.T) {
	l := logLimiter{burst: 2, every: time.Second}
	t0 := time.Unix(1000, 0)
	steps := []struct {
		at      time.Duration
		ok      bool
		dropped int
	}{
		{0, true, 0}, {0, true, 0}, {0, false, 0}, {100 * time.Millisecond, false, 0},
		{1100 * time.Millisecond, true, 2}, {1200 * time.Millisecond, false, 0}, {5 * time.Second, true, 1}, {5 * time.Second, true, 0},
	}
	for i, s := range steps {
		ok, dropped := l.allow(t0.Add(s.at))
		if ok != s.ok || dropped != s.dropped {
			t.Fatalf("step %d: got %v, %d; want %v, %d", i, ok, dropped, s.ok, s.dropped)
		}
	}
}
