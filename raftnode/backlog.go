package raftnode

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
)

// A follower's log must not run far ahead of its state machine.
// hashicorp/raft's follower stores the entries the leader sends, commits
// them at the leader's commit index and queues them to the state machine
// without waiting for it (up to 128 batches of MaxAppendEntries entries
// each), then answers the leader, who sends the next entries at once. A
// node catching up from the log (a fresh node joining: 8,358 entries of
// ~1,000 submissions each at 10M pending) thus received the log far
// faster than its state machine applied it, and every entry between the
// two sat decoded on the heap. backlogStore holds an append back while
// the entries committed but not yet applied exceed maxBacklogBytes, so
// the state machine sets the pace of a catch-up (which it did anyway: it
// is the slower side) and the entries in memory stay bounded. Only
// committed entries count: the state machine applies them without the
// Raft goroutine that the hold blocks, so a hold always ends.
const (
	// maxBacklogBytes bounds the command bytes a follower holds committed
	// but not applied before it takes more (one append may bring up to
	// MaxAppendEntries entries past it).
	maxBacklogBytes = 16 << 20
	// maxBacklogWait bounds how long one append is held back (the
	// leader's request waits meanwhile, with a 10 s timeout, and this
	// node's Raft goroutine answers nothing else; heartbeats take their
	// own path): if the state machine is slower still, the append goes
	// ahead.
	maxBacklogWait = time.Second
	// backlogPoll is how often a held append looks at the applied index.
	backlogPoll = 2 * time.Millisecond
)

// backlogStore is the Raft log store with a follower's appends held back
// while its state machine lags (see maxBacklogBytes). A leader's appends
// are its own proposals, gated by their commit; they are never held.
type backlogStore struct {
	raft.LogStore
	applied func() uint64 // the state machine's applied index
	max     int64
	wait    time.Duration

	raft atomic.Pointer[raft.Raft] // set once Raft runs
	stop chan struct{}             // closed when the node closes
	once sync.Once

	mu      sync.Mutex
	pending []storedSize // stored entries with data, in the order stored
	head    int          // pending[:head] are applied
}

type storedSize struct {
	index uint64
	size  int64
}

func newBacklogStore(logs raft.LogStore, applied func() uint64) *backlogStore {
	return &backlogStore{LogStore: logs, applied: applied, max: maxBacklogBytes, wait: maxBacklogWait, stop: make(chan struct{})}
}

// IsMonotonic passes the wrapped store's promise on (raft.MonotonicLogStore).
func (b *backlogStore) IsMonotonic() bool {
	m, ok := b.LogStore.(raft.MonotonicLogStore)
	return ok && m.IsMonotonic()
}

// StoreLog implements raft.LogStore.
func (b *backlogStore) StoreLog(l *raft.Log) error {
	return b.StoreLogs([]*raft.Log{l})
}

// StoreLogs implements raft.LogStore: while this node follows and its
// state machine lags by more than max committed bytes, it waits (at most
// wait), then stores logs.
func (b *backlogStore) StoreLogs(logs []*raft.Log) error {
	if r := b.raft.Load(); r != nil && r.State() != raft.Leader {
		b.holdBack(r.CommitIndex)
	}
	if err := b.LogStore.StoreLogs(logs); err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, l := range logs {
		if n := int64(len(l.Data)); n > 0 {
			b.pending = append(b.pending, storedSize{l.Index, n})
		}
	}
	return nil
}

// holdBack returns once the backlog is at most max bytes, after wait, or
// when the node closes.
func (b *backlogStore) holdBack(committed func() uint64) {
	if b.lag(committed()) <= b.max {
		return
	}
	deadline := time.NewTimer(b.wait)
	defer deadline.Stop()
	tick := time.NewTicker(backlogPoll)
	defer tick.Stop()
	for b.lag(committed()) > b.max {
		select {
		case <-tick.C:
		case <-deadline.C:
			return
		case <-b.stop:
			return
		}
	}
}

// lag drops the applied entries and returns the bytes of those committed
// (at or below committed) but not applied.
func (b *backlogStore) lag(committed uint64) int64 {
	applied := b.applied()
	b.mu.Lock()
	defer b.mu.Unlock()
	for b.head < len(b.pending) && b.pending[b.head].index <= applied {
		b.head++
	}
	if b.head == len(b.pending) || b.head > 4096 && b.head > len(b.pending)/2 {
		b.pending = append(b.pending[:0], b.pending[b.head:]...)
		b.head = 0
	}
	var n int64
	for _, e := range b.pending[b.head:] {
		if e.index > applied && e.index <= committed {
			n += e.size
		}
	}
	return n
}

// close releases a held append (the node is closing).
func (b *backlogStore) close() { b.once.Do(func() { close(b.stop) }) }
