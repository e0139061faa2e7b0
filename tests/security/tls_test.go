package security

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-msgpack/v2/codec"
	"github.com/hashicorp/raft"

	"github.com/ax-scheduler/ax/client"
	"github.com/ax-scheduler/ax/fsm/command"
	"github.com/ax-scheduler/ax/internal/agenttest"
	"github.com/ax-scheduler/ax/internal/localcluster"
	"github.com/ax-scheduler/ax/internal/testkit"
	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/model/member"
	"github.com/ax-scheduler/ax/raftnode"
	"github.com/ax-scheduler/ax/tlsutil"
)

// Raft's wire types (hashicorp/raft net_transport.go).
const (
	rpcAppendEntries  byte = 0
	rpcRequestVote    byte = 1
	rpcRequestPreVote byte = 4
)

// axRun runs the test binary with args and returns its combined output.
func axRun(t *testing.T, args ...string) (string, error) {
	t.Helper()
	out, err := exec.Command(axBinary, args...).CombinedOutput()
	return string(out), err
}

// axMust runs the test binary and fails the test if it fails.
func axMust(t *testing.T, args ...string) string {
	t.Helper()
	out, err := axRun(t, args...)
	if err != nil {
		t.Fatalf("ax %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// makeCerts makes a CA and node certificates n1..nN in a new directory
// with the binary's ax tls commands, plus any client certificates.
func makeCerts(t *testing.T, nodes int, clients ...string) string {
	t.Helper()
	dir := t.TempDir()
	if out := axMust(t, "tls", "ca", "create", "-dir", dir); !strings.Contains(out, tlsutil.CACertFile) {
		t.Fatalf("ax tls ca create does not say what it wrote:\n%s", out)
	}
	for i := 1; i <= nodes; i++ {
		axMust(t, "tls", "cert", "create", "-dir", dir, "-node", fmt.Sprintf("n%d", i))
	}
	for _, c := range clients {
		axMust(t, "tls", "cert", "create", "-dir", dir, "-client", c)
	}
	return dir
}

// forgeRPC encodes req as raft's NetworkTransport sends it: the RPC type
// byte, then the msgpack-encoded request.
func forgeRPC(t *testing.T, rpcType byte, req any) []byte {
	t.Helper()
	var buf bytes.Buffer
	buf.WriteByte(rpcType)
	h := &codec.MsgpackHandle{}
	h.TimeNotBuiltin = true // as raft encodes
	if err := codec.NewEncoder(&buf, h).Encode(req); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// forgedRPCs are what an attacker who can reach a Raft port sends, built
// against the cluster's current term and last index: a vote request with
// a much higher term, an AppendEntries carrying a shell task, and one
// carrying a configuration that adds an outside voter.
func forgedRPCs(t *testing.T, h *member.Health, members []model.Node) map[string][]byte {
	t.Helper()
	hdr := raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte("evil"), Addr: []byte("127.0.0.1:1")}
	term, last := h.Term, h.CommitIndex
	task := model.Task{Name: "pwned", Trigger: model.Trigger{Type: model.TriggerEvent},
		Action: model.Action{Type: model.ActionShell, Command: "echo forged"}}
	cmd, err := command.New(command.TypePutTask, "forged", "attacker", command.PutTask{Task: task})
	if err != nil {
		t.Fatal(err)
	}
	conf := raft.Configuration{Servers: []raft.Server{{ID: "evil", Address: "127.0.0.1:1", Suffrage: raft.Voter}}}
	for _, m := range members {
		conf.Servers = append(conf.Servers, raft.Server{ID: raft.ServerID(m.ID), Address: raft.ServerAddress(m.RaftAddr), Suffrage: raft.Voter})
	}
	appendOne := func(typ raft.LogType, data []byte) *raft.AppendEntriesRequest {
		return &raft.AppendEntriesRequest{RPCHeader: hdr, Term: term + 100, PrevLogEntry: last, PrevLogTerm: term,
			Entries:           []*raft.Log{{Index: last + 1, Term: term + 100, Type: typ, Data: data}},
			LeaderCommitIndex: last + 1}
	}
	return map[string][]byte{
		"vote with a higher term": forgeRPC(t, rpcRequestVote, &raft.RequestVoteRequest{RPCHeader: hdr, Term: term + 100,
			LastLogIndex: last + 1000, LastLogTerm: term + 99}),
		"append a shell task":         forgeRPC(t, rpcAppendEntries, appendOne(raft.LogCommand, cmd.Encode())),
		"append a configuration":      forgeRPC(t, rpcAppendEntries, appendOne(raft.LogConfiguration, raft.EncodeConfiguration(conf))),
		"garbage":                     []byte("\x02\xff\xff\xff\xffnot msgpack at all"),
		"a TLS-looking record header": {0x16, 0x03, 0x01, 0x00, 0x05, 'h', 'e', 'l', 'l', 'o'},
	}
}

// expectHangUp writes data on c and expects the other side to close it
// without an answer: nothing, or a TLS alert, comes back before the end.
func expectHangUp(t *testing.T, what string, c net.Conn, data []byte) {
	t.Helper()
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	_, _ = c.Write(data) // may fail: the server may have hung up already
	got, err := io.ReadAll(c)
	var ne net.Error
	switch {
	case errors.As(err, &ne) && ne.Timeout():
		t.Errorf("%s: the Raft port kept the connection open", what)
	case len(got) > 0 && got[0] != 0x15: // 0x15: a TLS alert record
		t.Errorf("%s: the Raft port answered %q", what, got)
	}
}

// clusterState is what an attack must not move.
// clusterState is what a forged RPC would move on a node: its leader,
// term, applied index (a forged entry that reached the state machine),
// membership and the forged task. The commit index is left out: a read
// through a follower may commit a Raft barrier (never applied).
type clusterState struct {
	leader   string
	term     uint64
	applied  uint64
	members  string
	hasPwned bool
}

func stateOf(ctx context.Context, t *testing.T, n *localcluster.Node) clusterState {
	t.Helper()
	h, err := n.Client().Health(ctx)
	if err != nil {
		t.Fatalf("%s: %v", n.ID, err)
	}
	// The node's own state: stale reads, which commit nothing.
	st, err := n.Client().Cluster(ctx, client.Stale())
	if err != nil {
		t.Fatalf("%s: %v", n.ID, err)
	}
	var members []string
	for _, m := range st.Nodes {
		members = append(members, m.ID+"@"+m.RaftAddr+"/"+m.Suffrage)
	}
	_, err = n.Client().GetTask(ctx, "pwned", client.Stale())
	return clusterState{leader: h.Leader, term: h.Term, applied: h.AppliedIndex,
		members: strings.Join(members, ","), hasPwned: err == nil}
}

// peerDial dials a Raft port over TLS presenting cert, trusting ca.
func peerDial(addr, caFile, certFile, keyFile string) (net.Conn, error) {
	cfg, err := tlsutil.NewClientConfig(caFile, certFile, keyFile)
	if err != nil {
		return nil, err
	}
	cfg.ServerName = tlsutil.ServerName
	return tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, cfg)
}

// TestTLS_ClusterRefusesStrangersAndForgedRPCs runs a 3-node cluster on
// certificates made by ax tls and attacks every Raft port: forged RPCs
// over plain TCP, a certificate of another CA and a client certificate
// are all refused at the handshake, and no node's leader, term, applied
// index or membership moves. The CLI works over https with -ca-cert and
// fails clearly without it.
func TestTLS_ClusterRefusesStrangersAndForgedRPCs(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process test skipped in -short mode")
	}
	dir := makeCerts(t, 3, "alice")
	other := makeCerts(t, 2)
	caFile := filepath.Join(dir, tlsutil.CACertFile)
	c := startCluster(t, 3, withTLS(dir))
	ctx := ctxT(t, 60*time.Second)
	// A write on a follower is forwarded to the leader over TLS, and a
	// consistent read on a follower asks the leader for its read index.
	leader, follower := leaderAndFollower(ctx, t, c)
	if _, err := follower.Client().PutTask(ctx, eventTask("over-tls")); err != nil {
		t.Fatalf("write on a follower: %v", err)
	}
	for _, n := range c.Nodes {
		if _, err := n.Client().GetTask(ctx, "over-tls"); err != nil {
			t.Fatalf("consistent read on %s: %v", n.ID, err)
		}
	}
	// Such a read may have the leader send the followers its commit index
	// with a barrier entry, which they learn is committed a little later:
	// the commit indexes compared below settle first.
	testkit.Eventually(t, 5*time.Second, func() error {
		var commits []uint64
		for _, n := range c.Nodes {
			h, err := n.Client().Health(ctx)
			if err != nil {
				return err
			}
			commits = append(commits, h.CommitIndex)
		}
		if slices.Min(commits) != slices.Max(commits) {
			return fmt.Errorf("commit indexes %v", commits)
		}
		return nil
	})

	before := map[string]clusterState{}
	for _, n := range c.Nodes {
		before[n.ID] = stateOf(ctx, t, n)
	}
	h, err := leader.Client().Health(ctx)
	if err != nil {
		t.Fatal(err)
	}
	st, err := leader.Client().Cluster(ctx)
	if err != nil {
		t.Fatal(err)
	}
	forged := forgedRPCs(t, h, st.Nodes)
	aliceCert, aliceKey := tlsutil.CertFiles(dir, "alice")
	strangerCert, strangerKey := tlsutil.CertFiles(other, "n2")
	for _, n := range c.Nodes {
		for what, data := range forged {
			conn, err := net.DialTimeout("tcp", n.RaftAddr, 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			expectHangUp(t, n.ID+": plain TCP, "+what, conn, data)
		}
		for who, files := range map[string][2]string{"a node certificate of another CA": {strangerCert, strangerKey}, "a client certificate": {aliceCert, aliceKey}} {
			conn, err := peerDial(n.RaftAddr, caFile, files[0], files[1])
			if err != nil {
				continue // refused during the handshake
			}
			// TLS 1.3: the client may finish first; the server's verdict
			// arrives on the first read.
			expectHangUp(t, n.ID+": "+who, conn, forged["vote with a higher term"])
		}
	}
	for _, n := range c.Nodes {
		if got := stateOf(ctx, t, n); got != before[n.ID] {
			t.Errorf("%s moved: before %+v, after %+v", n.ID, before[n.ID], got)
		}
		b, _ := os.ReadFile(n.LogPath)
		if !strings.Contains(string(b), "refused raft connection") {
			t.Errorf("%s logged no refused raft connection", n.ID)
		}
		if strings.Contains(string(b), "failed to decode incoming command") {
			t.Errorf("%s: a forged RPC reached raft's decoder", n.ID)
		}
	}

	// The CLI: https with the CA (and a client certificate, which a TLS
	// cluster without tokens admits clients by) works, by host:port and
	// by URL; without the CA it fails with a certificate error and a hint.
	addr := leader.HTTPAddr
	if out := axMust(t, "task", "get", "over-tls", "-addr", addr, "-ca-cert", caFile, "-client-cert", aliceCert, "-client-key", aliceKey); !strings.Contains(out, "over-tls") {
		t.Errorf("ax task get over https:\n%s", out)
	}
	axMust(t, "task", "list", "-addr", "https://"+addr, "-ca-cert", caFile, "-client-cert", aliceCert, "-client-key", aliceKey)
	start := time.Now()
	out, err := axRun(t, "task", "list", "-addr", "https://"+addr)
	if err == nil || !strings.Contains(out, "certificate") || !strings.Contains(out, "-ca-cert") {
		t.Errorf("ax task list without -ca-cert: err %v, output:\n%s", err, out)
	}
	if el := time.Since(start); el > 5*time.Second {
		t.Errorf("the certificate error took %s: it was retried", el)
	}
	// With the CA but no client certificate the hint names what is
	// missing: a client certificate, not a token.
	out, err = axRun(t, "task", "list", "-addr", addr, "-ca-cert", caFile)
	if err == nil || !strings.Contains(out, "-client-cert") || strings.Contains(out, "-token") {
		t.Errorf("ax task list without a client certificate: err %v, output:\n%s", err, out)
	}
}

// TestTLS_SIGHUPReloadsCertificate re-issues a node's certificate, sends
// SIGHUP, and checks that its HTTP and Raft listeners present the new
// certificate and the cluster keeps working: writes, and jobs run by the
// nodes' embedded executors and by an ax executor, all over TLS.
func TestTLS_SIGHUPReloadsCertificate(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process test skipped in -short mode")
	}
	dir := makeCerts(t, 3)
	caFile := filepath.Join(dir, tlsutil.CACertFile)
	c := startCluster(t, 3, withTLS(dir), withArgs("-executor", "true", "-executor-labels", "kind=embedded"))
	if _, err := c.StartExecutor("cli-exec", "-labels", "kind=cli"); err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t, 60*time.Second)
	n1 := c.Nodes[0]
	certFile, keyFile := tlsutil.CertFiles(dir, "n1")
	old := serialOf(t, certFile)
	for _, f := range []string{certFile, keyFile} {
		if err := os.Remove(f); err != nil {
			t.Fatal(err)
		}
	}
	axMust(t, "tls", "cert", "create", "-dir", dir, "-node", "n1")
	fresh := serialOf(t, certFile)
	if fresh == old {
		t.Fatal("re-issued certificate has the old serial")
	}
	if err := n1.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 10*time.Second, func() error {
		b, _ := os.ReadFile(n1.LogPath)
		if !strings.Contains(string(b), "reloaded TLS certificates") {
			return errors.New("no reload logged yet")
		}
		return nil
	})
	n2Cert, n2Key := tlsutil.CertFiles(dir, "n2")
	for what, addr := range map[string]string{"raft": n1.RaftAddr, "http": n1.HTTPAddr} {
		conn, err := peerDial(addr, caFile, n2Cert, n2Key)
		if err != nil {
			t.Fatalf("%s after reload: %v", what, err)
		}
		got := conn.(*tls.Conn).ConnectionState().PeerCertificates[0].SerialNumber.String()
		conn.Close()
		if got != fresh {
			t.Errorf("%s presents serial %s, want the re-issued %s", what, got, fresh)
		}
	}
	if _, err := n1.Client().PutTask(ctx, eventTask("after-reload")); err != nil {
		t.Fatalf("write through n1 after reload: %v", err)
	}
	for _, n := range c.Nodes {
		testkit.Eventually(t, 10*time.Second, func() error { return hasAll(ctx, n.Client(), map[string]bool{"after-reload": true}) })
	}
	for _, kind := range []string{"embedded", "cli"} {
		task := shellTask("run-"+kind, "echo ok", model.Policy{ExecutorLabels: map[string]string{"kind": kind}})
		if _, err := n1.Client().PutTask(ctx, task); err != nil {
			t.Fatal(err)
		}
		agenttest.WaitState(t, n1.Client(), trigger(t, n1.Client(), task.Name), 15*time.Second, model.StateSuccess)
	}
	// A task's own ax command reaches the TLS cluster through the
	// environment its executor hands down.
	approval := shellTask("approval-over-tls", axBinary+` approval request -summary "go?" && echo approved-path`,
		model.Policy{ExecutorLabels: map[string]string{"kind": "cli"}})
	if _, err := n1.Client().PutTask(ctx, approval); err != nil {
		t.Fatal(err)
	}
	id := trigger(t, n1.Client(), approval.Name)
	agenttest.WaitState(t, n1.Client(), id, 15*time.Second, model.StateWaitingApproval)
	if _, err := n1.Client().Decide(ctx, id, client.Approve, ""); err != nil {
		t.Fatal(err)
	}
	if in := agenttest.WaitState(t, n1.Client(), id, 15*time.Second, model.StateSuccess); !strings.Contains(in.AttemptList[0].Output, "approved-path") {
		t.Errorf("approved task's output %q", in.AttemptList[0].Output)
	}
}

func serialOf(t *testing.T, certFile string) string {
	t.Helper()
	b, err := os.ReadFile(certFile)
	if err != nil {
		t.Fatal(err)
	}
	blk, _ := pem.Decode(b)
	if blk == nil {
		t.Fatalf("%s: no PEM", certFile)
	}
	c, err := x509.ParseCertificate(blk.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c.SerialNumber.String()
}

// TestForged_AppendEntriesNeedsTheMemberKey is the control of the tests
// that attack Raft ports (here and in raftauth_test.go): the forged
// AppendEntries sent in clear to a node without TLS is refused, and the
// same bytes sent after the member-key handshake, with the key from the
// node's data dir, are decoded and obeyed (the term jumps and the forged
// task is written). So the encoding is right, and the handshake is what
// stops it. (A forged vote from a non-member is ignored by raft itself.)
func TestForged_AppendEntriesNeedsTheMemberKey(t *testing.T) {
	c := startCluster(t, 1)
	ctx := ctxT(t, 30*time.Second)
	n := c.Nodes[0]
	h := settled(ctx, t, n)
	st, err := n.Client().Cluster(ctx)
	if err != nil {
		t.Fatal(err)
	}
	forged := forgedRPCs(t, h, st.Nodes)["append a shell task"]
	conn, err := net.DialTimeout("tcp", n.RaftAddr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	expectHangUp(t, "in clear", conn, forged)
	if got := stateOf(ctx, t, n); got.hasPwned || got.term != h.Term {
		t.Fatalf("the forged entry sent in clear moved the node: %+v", got)
	}

	key, required, err := raftnode.ReadMemberKey(n.DataDir)
	if err != nil || !required {
		t.Fatalf("member key file: required %v, %v", required, err)
	}
	conn, err = raftnode.DialPeer(n.RaftAddr, key, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write(forged); err != nil {
		t.Fatal(err)
	}
	waitHealth(ctx, t, n, 10*time.Second, func(got *member.Health) error {
		if got.Term < h.Term+100 {
			return fmt.Errorf("term %d, want >= %d", got.Term, h.Term+100)
		}
		return nil
	})
	testkit.Eventually(t, 10*time.Second, func() error {
		_, err := n.Client().GetTask(ctx, "pwned")
		return err
	})
}

// TestInsecure_NonLoopbackNeedsTLSOrInsecure: an agent without TLS on
// 0.0.0.0 refuses to start and says why; with -insecure it starts and
// warns.
func TestInsecure_NonLoopbackNeedsTLSOrInsecure(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process test skipped in -short mode")
	}
	httpAddr, err := localcluster.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	raftAddr, err := localcluster.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(httpAddr)
	args := []string{"agent", "-data", t.TempDir(), "-http", "0.0.0.0:" + port, "-raft", raftAddr, "-executor", "false"}
	out, err := axRun(t, args...)
	if err == nil {
		t.Fatalf("agent on 0.0.0.0 without TLS started:\n%s", out)
	}
	for _, want := range []string{"0.0.0.0:" + port, "-tls-ca", "-insecure"} {
		if !strings.Contains(out, want) {
			t.Errorf("refusal does not mention %s:\n%s", want, out)
		}
	}

	ctx := ctxT(t, 30*time.Second)
	logPath := filepath.Join(t.TempDir(), "agent.log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	// Listening on 0.0.0.0 also needs the address the others dial.
	cmd := exec.Command(axBinary, append(args, "-insecure", "-advertise-http", "127.0.0.1:"+port)...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	testkit.Eventually(t, 10*time.Second, func() error {
		h, err := client.New(client.Config{Addrs: []string{"127.0.0.1:" + port}, RetryFor: time.Second}).Health(ctx)
		if err != nil {
			return err
		}
		if h.Role != member.RoleLeader {
			return fmt.Errorf("role %s", h.Role)
		}
		return nil
	})
	b, _ := os.ReadFile(logPath)
	if !strings.Contains(string(b), "[WARN]") || !strings.Contains(string(b), "without TLS") {
		t.Errorf("-insecure logged no warning:\n%s", b)
	}
}
