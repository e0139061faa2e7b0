package raftnode

import (
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// AppendFailure says why this node cannot write its Raft log: the error of
// the latest append, when the appends started failing and how many failed
// in a row since.
type AppendFailure struct {
	Err      error
	Since    time.Time
	Failures uint64
}

// appendWatch is the log store Raft appends to, remembering whether its
// appends fail. hashicorp/raft logs a follower's failed append and answers
// the leader unsuccessfully, then goes on as if nothing happened (heartbeats
// still succeed, so the follower keeps its leader and its commit index stops
// where its log stops); a leader whose append fails steps down. Neither is
// visible outside Raft's log, so this store keeps the latest failure until
// an append succeeds.
type appendWatch struct {
	raft.LogStore
	// fault, if set, fails an append before it reaches the store (tests).
	fault func() error

	mu      sync.Mutex
	failing *AppendFailure
	total   uint64 // failed appends since the node started
}

// IsMonotonic passes the wrapped store's promise on (raft.MonotonicLogStore).
func (w *appendWatch) IsMonotonic() bool {
	m, ok := w.LogStore.(raft.MonotonicLogStore)
	return ok && m.IsMonotonic()
}

// StoreLog implements raft.LogStore.
func (w *appendWatch) StoreLog(l *raft.Log) error {
	return w.StoreLogs([]*raft.Log{l})
}

// StoreLogs implements raft.LogStore.
func (w *appendWatch) StoreLogs(logs []*raft.Log) error {
	var err error
	if w.fault != nil {
		err = w.fault()
	}
	if err == nil {
		err = w.LogStore.StoreLogs(logs)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if err == nil {
		w.failing = nil
		return nil
	}
	w.total++
	f := w.failing
	if f == nil {
		f = &AppendFailure{Since: time.Now()}
		w.failing = f
	}
	f.Err, f.Failures = err, f.Failures+1
	return err
}

// state returns a copy of the current failure (nil: the latest append
// succeeded) and the count of failed appends.
func (w *appendWatch) state() (*AppendFailure, uint64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.failing == nil {
		return nil, w.total
	}
	f := *w.failing
	return &f, w.total
}

// AppendFailure returns why this node's latest append to its Raft log
// failed, or nil when it succeeded (or none has failed). A failure stands
// until an append succeeds: the leader retries a follower's failed append
// (backing off to about 10 s between tries), and a node whose own append
// failed as leader has stepped down and is sent the entries it lacks.
func (n *Node) AppendFailure() *AppendFailure {
	f, _ := n.appends.state()
	return f
}

// AppendFailures returns how many appends to this node's Raft log have
// failed since it started.
func (n *Node) AppendFailures() uint64 {
	_, total := n.appends.state()
	return total
}
