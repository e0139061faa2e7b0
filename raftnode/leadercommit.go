package raftnode

import (
	"sync"
	"sync/atomic"

	"github.com/hashicorp/raft"
)

// commitWatch is the transport Raft consumes RPCs from, remembering the
// highest commit index a leader has sent this node, and gating Raft's
// heartbeat fast path (heartbeat.go).
//
// A follower learns the commit index only from the appends it can store:
// hashicorp/raft sets it to min(leader's commit index, own last index), so
// a follower whose log is short (appends failing, or far behind) believes
// itself up to date while it serves stale reads. Every AppendEntries
// request carries the leader's commit index (the leader sends one at
// least every CommitTimeout, 50 ms, even when there is nothing to
// replicate, and retries a failed one), whether or not this node can store
// its entries; heartbeats carry none. Any commit index a leader sent is committed for good, so the
// highest one seen is a lower bound of the cluster's: no extra message,
// and it can only understate the lag.
type commitWatch struct {
	raft.Transport
	leaderCommit atomic.Uint64
	gate         heartbeatGate

	out       chan raft.RPC
	done      chan struct{}
	startOnce sync.Once
	closeOnce sync.Once
}

// commitWatchPreVote is a commitWatch over a transport that supports
// pre-vote: Raft asks the transport it is given whether it does.
type commitWatchPreVote struct {
	*commitWatch
	raft.WithPreVote
}

// watchCommits wraps t; the second result reads what it saw.
func watchCommits(t raft.Transport) (raft.Transport, *commitWatch) {
	w := &commitWatch{Transport: t, out: make(chan raft.RPC), done: make(chan struct{})}
	if pv, ok := t.(raft.WithPreVote); ok {
		return &commitWatchPreVote{commitWatch: w, WithPreVote: pv}, w
	}
	return w, w
}

// Consumer implements raft.Transport: the wrapped transport's RPCs, each
// looked at before Raft gets it.
func (w *commitWatch) Consumer() <-chan raft.RPC {
	w.startOnce.Do(func() { go w.forward(w.Transport.Consumer()) })
	return w.out
}

func (w *commitWatch) forward(in <-chan raft.RPC) {
	for {
		select {
		case rpc := <-in:
			if req, ok := rpc.Command.(*raft.AppendEntriesRequest); ok {
				w.sawCommit(req.LeaderCommitIndex)
			}
			select {
			case w.out <- rpc:
			case <-w.done:
				return
			}
		case <-w.done:
			return
		}
	}
}

func (w *commitWatch) sawCommit(idx uint64) {
	for {
		cur := w.leaderCommit.Load()
		if idx <= cur || w.leaderCommit.CompareAndSwap(cur, idx) {
			return
		}
	}
}

// Close implements raft.WithClose: it stops the forwarding and closes the
// wrapped transport if it can be closed.
func (w *commitWatch) Close() error {
	w.stop()
	if c, ok := w.Transport.(raft.WithClose); ok {
		return c.Close()
	}
	return nil
}

// stop stops the forwarding.
func (w *commitWatch) stop() { w.closeOnce.Do(func() { close(w.done) }) }

// KnownCommitIndex returns the highest commit index this node knows: its
// own Raft's, or the highest a leader has sent it, whichever is higher. On
// a follower whose log cannot keep up the two differ, and the difference
// is what its reads miss.
func (n *Node) KnownCommitIndex() uint64 {
	return max(n.raft.CommitIndex(), n.commits.leaderCommit.Load())
}
