package security

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-msgpack/v2/codec"
	"github.com/hashicorp/raft"

	"github.com/ax-scheduler/ax/fsm/command"
	"github.com/ax-scheduler/ax/internal/localcluster"
	"github.com/ax-scheduler/ax/internal/testkit"
	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/model/member"
	"github.com/ax-scheduler/ax/raftnode"
)

// The attacks of issue 21 against a cluster without TLS: a local process
// that reaches a Raft port forges entries (a shell task, an admin token),
// adds itself as a voter, puts a node into a crash loop with forged
// configuration entries, or squats a stopped member's port to receive
// what the leader sends it. Each must get nowhere: every Raft connection
// proves membership before raft reads a byte of it.

// evilHeader is the RPC header of the forger.
func evilHeader(addr string) raft.RPCHeader {
	return raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte("evil"), Addr: []byte(addr)}
}

// forgeAppend encodes an AppendEntries from "evil" at term that follows
// (prev, prevTerm) with entries and commits them all.
func forgeAppend(t *testing.T, term, prev, prevTerm uint64, entries ...*raft.Log) []byte {
	t.Helper()
	commit := prev
	if len(entries) > 0 {
		commit = entries[len(entries)-1].Index
	}
	return forgeRPC(t, rpcAppendEntries, &raft.AppendEntriesRequest{RPCHeader: evilHeader("127.0.0.1:1"), Term: term,
		PrevLogEntry: prev, PrevLogTerm: prevTerm, Entries: entries, LeaderCommitIndex: commit})
}

// forgedCommand is the data of a log entry carrying an ax command.
func forgedCommand(t *testing.T, typ command.Type, body any) []byte {
	t.Helper()
	c, err := command.New(typ, "forged", "attacker", body)
	if err != nil {
		t.Fatal(err)
	}
	return c.Encode()
}

// evilToken is the admin token a forged acl_put_token mints.
const evilToken = "axt_forged-admin-token-from-the-raft-port"

// tokenHash is a token's SHA-256 in hex, as the state machine keeps it.
func tokenHash(tok string) string {
	h := sha256.Sum256([]byte(tok))
	return hex.EncodeToString(h[:])
}

// settled waits until n follows a leader at this version's protocol and
// its applied index has stopped moving (the new leader's own writes are
// done, so that a forged entry after the last one is not overtaken), and
// returns its health.
func settled(ctx context.Context, t *testing.T, n *localcluster.Node) *member.Health {
	t.Helper()
	return settledAt(ctx, t, n, 0)
}

// settledAt is settled once n has applied at least index.
func settledAt(ctx context.Context, t *testing.T, n *localcluster.Node, index uint64) *member.Health {
	t.Helper()
	var h *member.Health
	waitHealth(ctx, t, n, 15*time.Second, func(got *member.Health) error {
		if got.Protocol != command.ProtoVersion || got.Leader == "" {
			return fmt.Errorf("cluster protocol %d (want %d), leader %q", got.Protocol, command.ProtoVersion, got.Leader)
		}
		if got.AppliedIndex < index {
			return fmt.Errorf("applied index %d, want at least %d", got.AppliedIndex, index)
		}
		// Both indexes unchanged since the last probe: the commit index
		// may stay above the applied one (a barrier or a new leader's
		// no-op is committed, never applied to the state machine).
		if h == nil || got.AppliedIndex != h.AppliedIndex || got.CommitIndex != h.CommitIndex {
			h = got
			return fmt.Errorf("applied index %d, commit index %d, waiting for them to settle", got.AppliedIndex, got.CommitIndex)
		}
		return nil
	})
	return h
}

// sendRaw dials addr over plain TCP and writes data.
func sendRaw(t *testing.T, addr string, data []byte) net.Conn {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = conn.Write(data)
	return conn
}

// checkRefusals checks that every node logged a refused Raft connection
// and that no forged byte reached raft's decoder.
func checkRefusals(t *testing.T, nodes []*localcluster.Node) {
	t.Helper()
	checkRefusalsSince(t, nodes, nil)
}

// logMarks returns the sizes of the nodes' logs, for checkRefusalsSince.
func logMarks(nodes []*localcluster.Node) map[string]int {
	marks := map[string]int{}
	for _, n := range nodes {
		b, _ := os.ReadFile(n.LogPath)
		marks[n.ID] = len(b)
	}
	return marks
}

// checkRefusalsSince is checkRefusals on what the nodes logged after
// marks.
func checkRefusalsSince(t *testing.T, nodes []*localcluster.Node, marks map[string]int) {
	t.Helper()
	for _, n := range nodes {
		b, _ := os.ReadFile(n.LogPath)
		b = b[min(marks[n.ID], len(b)):]
		if !strings.Contains(string(b), "refused raft connection") {
			t.Errorf("%s logged no refused raft connection", n.ID)
		}
		for _, line := range strings.Split(string(b), "\n") {
			// A node stopping closes its members' connections mid-read:
			// raft logs that as a decode failure with the transport's
			// shutdown error; any other decode failure is a forged RPC
			// that reached the decoder.
			if strings.Contains(line, "failed to decode incoming command") && !strings.Contains(line, `error="transport shutdown"`) {
				t.Errorf("%s: a forged RPC reached raft's decoder: %s", n.ID, line)
			}
		}
	}
}

// TestRaftAuth_ForgedEntriesGetNowhere attacks every Raft port of a
// three-node cluster without TLS, protected by -token and bootstrapped
// ACLs, with what a local process can send: an AppendEntries carrying a
// shell task, one carrying an acl_put_token that mints an admin token,
// one adding an outside voter, a vote with a higher term, garbage. Every
// connection is closed unanswered, no node's leader, term, indexes or
// membership moves, and the minted token opens nothing.
func TestRaftAuth_ForgedEntriesGetNowhere(t *testing.T) {
	const mgmt = "management-token-of-the-raft-auth-test"
	c := startCluster(t, 3, withToken(mgmt))
	ctx := ctxT(t, 90*time.Second)
	leader, err := c.Leader(ctx, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	settled(ctx, t, leader)
	if _, err := tokenClient(c, mgmt).ACLBootstrap(ctx); err != nil {
		t.Fatal(err)
	}
	before := map[string]clusterState{}
	health := map[string]*member.Health{}
	lead := settled(ctx, t, leader)
	for _, n := range c.Nodes {
		health[n.ID] = settledAt(ctx, t, n, lead.AppliedIndex)
		before[n.ID] = stateOf(ctx, t, n)
	}
	st, err := leader.Client().Cluster(ctx)
	if err != nil {
		t.Fatal(err)
	}
	mint := forgedCommand(t, command.TypeACLPutToken, command.ACLPutToken{Token: command.TokenRecord{Name: "evil", Role: model.RoleAdmin,
		Hash: tokenHash(evilToken)}})
	for _, n := range c.Nodes {
		h := health[n.ID]
		attacks := forgedRPCs(t, h, st.Nodes)
		attacks["append an admin token"] = forgeAppend(t, h.Term+100, h.CommitIndex, h.Term,
			&raft.Log{Index: h.CommitIndex + 1, Term: h.Term + 100, Type: raft.LogCommand, Data: mint})
		for what, data := range attacks {
			conn, err := net.DialTimeout("tcp", n.RaftAddr, 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			expectHangUp(t, n.ID+": "+what, conn, data)
		}
	}
	for _, n := range c.Nodes {
		if got := stateOf(ctx, t, n); got != before[n.ID] {
			t.Errorf("%s moved: before %+v, after %+v", n.ID, before[n.ID], got)
		}
		_, err := tokenClient(c, evilToken, n.HTTPAddr).ListTokens(ctx)
		if !errors.Is(err, model.ErrUnauthorized) {
			t.Errorf("%s: the minted token: got %v, want unauthorized", n.ID, err)
		}
	}
	checkRefusals(t, c.Nodes)
}

// rogue is a Raft peer of the attacker's: it answers what members send
// it as a follower would (asking for the log from its start) and keeps
// what it received.
type rogue struct {
	ln net.Listener
	mu sync.Mutex
	// rpcs counts the RPCs received by type; cmds the command types in
	// the entries; secret whether the secret's value went by.
	rpcs   map[byte]int
	cmds   map[command.Type]int
	secret bool
	want   [][]byte // the secret's value as commands carry it
}

func newRogue(t *testing.T, secret string) *rogue {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &rogue{ln: ln, rpcs: map[byte]int{}, cmds: map[command.Type]int{},
		want: [][]byte{[]byte(secret), []byte(base64.StdEncoding.EncodeToString([]byte(secret)))}}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go r.serve(c)
		}
	}()
	return r
}

func (r *rogue) addr() string { return r.ln.Addr().String() }

func (r *rogue) serve(c net.Conn) {
	defer c.Close()
	br := bufio.NewReader(c)
	w := bufio.NewWriter(c)
	dec := codec.NewDecoder(br, &codec.MsgpackHandle{})
	eh := &codec.MsgpackHandle{}
	eh.TimeNotBuiltin = true
	enc := codec.NewEncoder(w, eh)
	hdr := evilHeader(r.addr())
	var last uint64
	for {
		typ, err := br.ReadByte()
		if err != nil {
			return
		}
		r.mu.Lock()
		r.rpcs[typ]++
		r.mu.Unlock()
		var resp any
		switch typ {
		case rpcAppendEntries:
			var req raft.AppendEntriesRequest
			if dec.Decode(&req) != nil {
				return
			}
			ok := req.PrevLogEntry <= last
			if ok {
				for _, e := range req.Entries {
					r.see(e)
					last = e.Index
				}
			}
			resp = &raft.AppendEntriesResponse{RPCHeader: hdr, Term: req.Term, LastLog: last, Success: ok, NoRetryBackoff: true}
		case rpcRequestVote:
			var req raft.RequestVoteRequest
			if dec.Decode(&req) != nil {
				return
			}
			resp = &raft.RequestVoteResponse{RPCHeader: hdr, Term: req.Term}
		case rpcRequestPreVote:
			var req raft.RequestPreVoteRequest
			if dec.Decode(&req) != nil {
				return
			}
			resp = &raft.RequestPreVoteResponse{RPCHeader: hdr, Term: req.Term}
		case 2: // InstallSnapshot: the request, then the snapshot's bytes
			var req raft.InstallSnapshotRequest
			if dec.Decode(&req) != nil {
				return
			}
			snap, err := io.ReadAll(io.LimitReader(br, req.Size))
			if err != nil {
				return
			}
			r.mu.Lock()
			r.secret = r.secret || r.carries(snap)
			r.mu.Unlock()
			last = req.LastLogIndex
			resp = &raft.InstallSnapshotResponse{RPCHeader: hdr, Term: req.Term, Success: true}
		default:
			return
		}
		if enc.Encode("") != nil || enc.Encode(resp) != nil || w.Flush() != nil {
			return
		}
	}
}

// carries reports whether b holds the secret's value. Called with r.mu
// held.
func (r *rogue) carries(b []byte) bool {
	for _, w := range r.want {
		if bytes.Contains(b, w) {
			return true
		}
	}
	return false
}

func (r *rogue) see(e *raft.Log) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.secret = r.secret || r.carries(e.Data)
	if e.Type == raft.LogCommand {
		if c, err := command.Decode(e.Data); err == nil {
			r.cmds[c.Type]++
		}
	}
}

func (r *rogue) report() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return fmt.Sprintf("rpcs by type %v, commands %v, saw the secret %v", r.rpcs, r.cmds, r.secret)
}

func (r *rogue) received() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.rpcs) > 0
}

// TestRaftAuth_RogueVoterGetsNothing forges, to every member, a
// configuration that adds the attacker's own Raft peer as a voter. It is
// refused: the membership stays, and in the seconds that follow (several
// election timeouts) no member sends the rogue peer a single RPC — on
// the old code the next leader replicated the whole log to it, the
// secrets and the member key included.
func TestRaftAuth_RogueVoterGetsNothing(t *testing.T) {
	c := startCluster(t, 3)
	ctx := ctxT(t, 90*time.Second)
	leader, err := c.Leader(ctx, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	const secret = "value-of-a-secret-the-rogue-must-not-see"
	if _, err := leader.Client().PutSecret(ctx, "db-password", secret); err != nil {
		t.Fatal(err)
	}
	evil := newRogue(t, secret)
	st, err := leader.Client().Cluster(ctx)
	if err != nil {
		t.Fatal(err)
	}
	conf := raft.Configuration{Servers: []raft.Server{{ID: "evil", Address: raft.ServerAddress(evil.addr()), Suffrage: raft.Voter}}}
	var members []string
	for _, m := range st.Nodes {
		conf.Servers = append(conf.Servers, raft.Server{ID: raft.ServerID(m.ID), Address: raft.ServerAddress(m.RaftAddr), Suffrage: raft.Voter})
		members = append(members, m.ID)
	}
	for _, n := range c.Nodes {
		h := settled(ctx, t, n)
		conn := sendRaw(t, n.RaftAddr, forgeAppend(t, h.Term+100, h.CommitIndex, h.Term,
			&raft.Log{Index: h.CommitIndex + 1, Term: h.Term + 100, Type: raft.LogConfiguration, Data: raft.EncodeConfiguration(conf)}))
		defer conn.Close()
	}
	// Several election timeouts: long enough for the old code's next
	// leader to replicate to the rogue voter.
	deadline := time.Now().Add(8 * time.Second)
	for time.Now().Before(deadline) && !evil.received() {
		time.Sleep(100 * time.Millisecond)
	}
	if _, err := c.Leader(ctx, 15*time.Second); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second)
	if evil.received() {
		t.Errorf("members talked to the rogue voter: %s", evil.report())
	}
	for _, n := range c.Nodes {
		testkit.Eventually(t, 10*time.Second, func() error {
			st, err := n.Client().Cluster(ctx)
			if err != nil {
				return err
			}
			var got []string
			for _, m := range st.Nodes {
				got = append(got, m.ID)
			}
			if strings.Join(got, ",") != strings.Join(members, ",") {
				return fmt.Errorf("%s: members %v, want %v", n.ID, got, members)
			}
			return nil
		})
	}
	checkRefusals(t, c.Nodes)
}

// startThree starts a three-node cluster without TLS and returns a
// context for the test, its leader and a follower.
func startThree(t *testing.T) (context.Context, *localcluster.Node, *localcluster.Node) {
	t.Helper()
	c := startCluster(t, 3)
	ctx := ctxT(t, 90*time.Second)
	leader, follower := leaderAndFollower(ctx, t, c)
	return ctx, leader, follower
}

// leaderAndFollower waits for c's leader and returns it and a follower.
func leaderAndFollower(ctx context.Context, t *testing.T, c *localcluster.Cluster) (leader, follower *localcluster.Node) {
	t.Helper()
	leader, err := c.Leader(ctx, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	follower = c.Nodes[0]
	if follower == leader {
		follower = c.Nodes[1]
	}
	return leader, follower
}

// TestRaftAuth_ForgedConfigurationsCannotCrashLoop sends a follower three
// forged configuration entries with a hole in their indexes (raft stores
// a batch as it comes). On the old code the follower stored them and,
// from its next start on, panicked in raft.NewRaft ("log not found")
// every time. Now they are refused, and the follower restarts and
// follows.
func TestRaftAuth_ForgedConfigurationsCannotCrashLoop(t *testing.T) {
	ctx, leader, victim := startThree(t)
	st, err := leader.Client().Cluster(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var conf raft.Configuration
	for _, m := range st.Nodes {
		conf.Servers = append(conf.Servers, raft.Server{ID: raft.ServerID(m.ID), Address: raft.ServerAddress(m.RaftAddr), Suffrage: raft.Voter})
	}
	data := raft.EncodeConfiguration(conf)
	h := settled(ctx, t, victim)
	term, last := h.Term+100, h.CommitIndex
	conn := sendRaw(t, victim.RaftAddr, forgeAppend(t, term, last, h.Term,
		&raft.Log{Index: last + 1, Term: term, Type: raft.LogConfiguration, Data: data},
		&raft.Log{Index: last + 2, Term: term, Type: raft.LogConfiguration, Data: data},
		&raft.Log{Index: last + 4, Term: term, Type: raft.LogConfiguration, Data: data}))
	defer conn.Close()
	// Whatever the victim did with them, it is restarted.
	time.Sleep(500 * time.Millisecond)
	victim.Stop()
	if err := victim.Start(); err != nil {
		t.Fatal(err)
	}
	waitHealth(ctx, t, victim, 20*time.Second, func(got *member.Health) error {
		if got.Role != member.RoleFollower && got.Role != member.RoleLeader || got.Leader == "" {
			return fmt.Errorf("role %q, leader %q", got.Role, got.Leader)
		}
		return nil
	})
	if !victim.Running() {
		t.Fatalf("%s exited after its restart", victim.ID)
	}
	if _, err := leader.Client().PutTask(ctx, eventTask("after-restart")); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 10*time.Second, func() error {
		return hasAll(ctx, victim.Client(), map[string]bool{"after-restart": true})
	})
	checkRefusals(t, []*localcluster.Node{victim})
}

// TestRaftAuth_SquatterOnAMemberPortGetsNothing stops a follower and
// listens on its Raft address in its place: the leader, which keeps
// dialing the member there, sends the squatter nothing but its
// handshake (on the old code: AppendEntries with every new entry), and
// drops the connection when the squatter cannot prove membership. The
// follower then comes back and catches up.
func TestRaftAuth_SquatterOnAMemberPortGetsNothing(t *testing.T) {
	ctx, leader, victim := startThree(t)
	victim.Kill()
	var ln net.Listener
	testkit.Eventually(t, 5*time.Second, func() (err error) {
		ln, err = net.Listen("tcp", victim.RaftAddr)
		return err
	})
	type conn struct {
		first []byte
		rest  int
	}
	got := make(chan conn, 16)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_ = c.SetDeadline(time.Now().Add(5 * time.Second))
				buf := make([]byte, 512)
				n, _ := c.Read(buf)
				first := buf[:n]
				// Answer like a member would, without the key.
				_, _ = c.Write(bytes.Repeat([]byte{0x42}, 64))
				rest, _ := io.Copy(io.Discard, c)
				got <- conn{first: first, rest: int(rest)}
			}()
		}
	}()
	if _, err := leader.Client().PutTask(ctx, eventTask("while-squatted")); err != nil {
		t.Fatal(err)
	}
	var first conn
	select {
	case first = <-got:
	case <-time.After(15 * time.Second):
		t.Fatal("the leader never dialed the stopped member")
	}
	ln.Close()
	if len(first.first) == 0 || first.first[0] <= 3 {
		t.Errorf("the leader sent the squatter a raft RPC (type %v, %d bytes)", first.first[:min(1, len(first.first))], len(first.first))
	}
	if bytes.Contains(first.first, []byte("while-squatted")) {
		t.Errorf("the leader sent the squatter the new entry")
	}
	if first.rest > 0 {
		t.Errorf("the leader sent the squatter %d more bytes after its handshake", first.rest)
	}
	if err := victim.Start(); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 20*time.Second, func() error {
		return hasAll(ctx, victim.Client(), map[string]bool{"while-squatted": true})
	})
	b, _ := os.ReadFile(leader.LogPath)
	if !strings.Contains(string(b), "did not prove membership") {
		t.Errorf("%s did not log the squatter", leader.ID)
	}
}

// TestRaftAuth_LostKeyFileIsFetched: a member whose key file is gone
// (ACLs bootstrapped, no -token: only its member header vouches for it)
// asks the other members for the key at start, says so, and follows
// again.
func TestRaftAuth_LostKeyFileIsFetched(t *testing.T) {
	c := startCluster(t, 3)
	ctx := ctxT(t, 90*time.Second)
	leader, victim := leaderAndFollower(ctx, t, c)
	settled(ctx, t, leader)
	admin, err := leader.Client().ACLBootstrap(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want, _, err := raftnode.ReadMemberKey(victim.DataDir)
	if err != nil {
		t.Fatal(err)
	}
	victim.Stop()
	if err := os.Remove(filepath.Join(victim.DataDir, "raft", "member-key.json")); err != nil {
		t.Fatal(err)
	}
	if err := victim.Start(); err != nil {
		t.Fatal(err)
	}
	cl := tokenClient(c, admin.Secret)
	if _, err := cl.PutTask(ctx, eventTask("after-lost-key")); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 20*time.Second, func() error {
		return hasAll(ctx, tokenClient(c, admin.Secret, victim.HTTPAddr), map[string]bool{"after-lost-key": true})
	})
	got, required, err := raftnode.ReadMemberKey(victim.DataDir)
	if err != nil || !required || !bytes.Equal(got, want) {
		t.Fatalf("key file after the restart: %x required %v (%v), want %x required", got, required, err, want)
	}
	b, _ := os.ReadFile(victim.LogPath)
	for _, line := range []string{"no member key file", "received the cluster's member key"} {
		if !strings.Contains(string(b), line) {
			t.Errorf("%s did not log %q", victim.ID, line)
		}
	}
}
