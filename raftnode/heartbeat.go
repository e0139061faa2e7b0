package raftnode

import (
	"sync/atomic"

	"github.com/hashicorp/raft"
)

// Heartbeats that change a node's term or role go through Raft's main
// goroutine.
//
// hashicorp/raft (v1.7.2, and main as of 2026-12) answers heartbeats on
// the transport's connection goroutine (its "fast path", so that a
// follower busy writing its log still answers them), and the handler is
// the full AppendEntries handler: a heartbeat of a newer term sets the
// node's term and makes it a follower from that goroutine, concurrently
// with the main goroutine. A deposed leader that wakes up (a pause, a
// partition healed) with proposals queued can thus read the new term in
// dispatchLogs before its leader loop notices it follows: it writes its
// own entries labelled with the new leader's term, at the indexes where
// the new leader writes different ones. Raft's log matching compares only
// index and term, so when the node then follows, it keeps its entries as
// "duplicates" and applies them: its state machine diverges, and a write
// the new leader acknowledged is missing on it (and on the whole cluster
// once it leads). This is hashicorp/raft#695 (open); ax's chaos suite
// failed with exactly its signature under leader churn on a starved
// machine (starved-churn, 2026-12-04: an acknowledged trigger lost, a node
// holding an instance its peers never had), and
// TestHeartbeatGate_DeposedLeader replays it step by step.
//
// The gate closes it from outside Raft: a heartbeat takes the fast path
// only when it changes nothing but the leader's last contact, that is,
// when this node is a follower of the heartbeat's term; any other (a
// newer term, or a node that is a candidate or leader) is handed to the
// main goroutine like every other RPC, which handles the term change in
// order with its own work. Between the check and the handler the term can
// only grow, and a heartbeat of an older term is refused without a
// change, so the check needs no lock. The fast path keeps its purpose: a
// follower whose disk stalls still answers its leader's heartbeats.

// termView is what the gate reads of Raft (*raft.Raft).
type termView interface {
	State() raft.RaftState
	CurrentTerm() uint64
}

// heartbeatGate holds the Raft the gate reads, once it runs.
type heartbeatGate struct {
	view atomic.Pointer[termView]
	// ungated lets every heartbeat take the fast path, as hashicorp/raft
	// does on its own (tests: TestHeartbeatGate_DeposedLeader).
	ungated bool
}

// setRaft gives the gate the Raft whose term and role it checks; until
// then every heartbeat goes to the main goroutine.
func (g *heartbeatGate) setRaft(v termView) { g.view.Store(&v) }

// fast reports whether rpc may be answered on the fast path: an
// AppendEntries heartbeat of this follower's current term.
func (g *heartbeatGate) fast(rpc raft.RPC) bool {
	req, ok := rpc.Command.(*raft.AppendEntriesRequest)
	if g.ungated {
		return true
	}
	v := g.view.Load()
	if !ok || v == nil {
		return false
	}
	return (*v).State() == raft.Follower && req.Term == (*v).CurrentTerm()
}

// SetHeartbeatHandler implements raft.Transport: Raft's fast-path handler
// is called only for heartbeats the gate lets through; the others reach
// Raft through Consumer, as if the transport had no fast path.
func (w *commitWatch) SetHeartbeatHandler(cb func(rpc raft.RPC)) {
	if cb == nil {
		w.Transport.SetHeartbeatHandler(nil)
		return
	}
	w.Transport.SetHeartbeatHandler(func(rpc raft.RPC) {
		if w.gate.fast(rpc) {
			cb(rpc)
			return
		}
		select {
		case w.out <- rpc:
		case <-w.done:
			rpc.Respond(nil, raft.ErrTransportShutdown)
		}
	})
}
