package replica

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ax-scheduler/ax/api"
	"github.com/ax-scheduler/ax/client"
	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/raftnode"
)

// Linearizable reads (the default of every read endpoint; ?stale=true
// skips them). A read waits for a read index, then for this node to apply
// up to it:
//
//   - the leader confirms with a quorum that it still leads (VerifyLeader)
//     and takes its commit index as of before the confirmation (readIndex);
//   - a follower asks the leader for that index over
//     /v1/internal/readindex.
//
// Both are batched the way etcd's linearizable read loop is: the reads
// that arrive while a round is out join the next round, which starts as
// soon as the current one ends, so under load each node makes one
// leadership confirmation (or one request to the leader) per round trip,
// not one per read. A read never joins a round already out: the index it
// gets was taken after it arrived, so it reflects every write
// acknowledged before that.

// ReadLeaderWait bounds how long a linearizable read waits to learn a
// leader: about an election on the default Raft timing (raftnode), after
// which a node that knows none answers 503 at once rather than hold the
// reader for the whole leader wait.
const ReadLeaderWait = time.Second

// readRounds are the replica's two batched read-index fetches.
type readRounds struct {
	r           *Replica
	leaderReads rounds // the leader's confirmations (readIndex)
	reads       rounds // this node's read barriers (ReadBarrier)
	// sendCommit's state: one is out, the read index the last was for,
	// how many there were.
	sendingCommit atomic.Bool
	commitSentFor atomic.Uint64
	commitSends   atomic.Uint64
}

// rounds shares one fetch of a read index among the callers that ask
// while it runs: one round at a time, each serving every caller that
// asked before it started. The zero value is ready to use.
type rounds struct {
	mu      sync.Mutex
	next    *readRound // the round callers join; nil until one asks
	running bool       // a goroutine is running rounds

	asked, made atomic.Uint64 // callers, and rounds run (metrics)
}

// readRound is one fetch and its answer, valid once done is closed.
type readRound struct {
	done    chan struct{}
	idx     uint64
	err     error
	waiters int // callers that joined it
}

// get joins the next round and returns its answer, or the end of ctx.
// The round runs fetch, which is the same function for every caller of
// these rounds (the first caller's starts the loop).
func (rs *rounds) get(ctx context.Context, fetch func() (uint64, error)) (uint64, error) {
	rs.asked.Add(1)
	rs.mu.Lock()
	if rs.next == nil {
		rs.next = &readRound{done: make(chan struct{})}
	}
	r := rs.next
	r.waiters++
	if !rs.running {
		rs.running = true
		go rs.loop(fetch)
	}
	rs.mu.Unlock()
	select {
	case <-r.done:
		return r.idx, r.err
	case <-ctx.Done():
		return 0, fmt.Errorf("%w: %v", raftnode.ErrTimeout, ctx.Err())
	}
}

// waiting returns how many callers wait for the next round (not the one
// out).
func (rs *rounds) waiting() int {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.next == nil {
		return 0
	}
	return rs.next.waiters
}

// loop runs rounds until no caller waits for the next one.
func (rs *rounds) loop(fetch func() (uint64, error)) {
	for {
		rs.mu.Lock()
		r := rs.next
		rs.next = nil
		if r == nil {
			rs.running = false
			rs.mu.Unlock()
			return
		}
		rs.mu.Unlock()
		rs.made.Add(1)
		r.idx, r.err = fetch()
		close(r.done)
	}
}

// readCollectors are the read metrics: reads per round is the batching.
func (rr *readRounds) collectors() []prometheus.Collector {
	counter := func(name, help string, v *atomic.Uint64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, func() float64 { return float64(v.Load()) })
	}
	return []prometheus.Collector{
		counter("ax_read_barriers_total", "Linearizable reads this node served (each waited for a read index).", &rr.reads.asked),
		counter("ax_read_barrier_rounds_total", "Read indexes those reads fetched, batched (from this node when it led, else from the leader).", &rr.reads.made),
		counter("ax_read_index_requests_total", "Read indexes asked of this node as leader: its own reads' rounds, its followers' and its write prechecks.", &rr.leaderReads.asked),
		counter("ax_read_index_rounds_total", "Leadership confirmations (a quorum round trip each) that answered them, batched.", &rr.leaderReads.made),
		counter("ax_read_commit_sends_total", "Commit indexes this node as leader sent its followers at once (a Raft barrier entry), for a follower's read that had not learned its read index as committed.", &rr.commitSends),
	}
}

// roundContext bounds one round: the leader wait, and the replica's stop.
func (rr *readRounds) roundContext() (context.Context, context.CancelFunc) {
	r := rr.r
	ctx, cancel := context.WithTimeout(context.Background(), r.cfg.LeaderWait)
	go func() {
		select {
		case <-r.stopCh:
			cancel()
		case <-r.cfg.Stopping:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

// readIndex confirms that this node leads a term whose barrier is done
// and returns the index a reader must see applied: the last state-machine
// entry at or below the commit index as of the confirmation; errors are
// raftnode's. Concurrent callers share one confirmation (a round).
func (rr *readRounds) readIndex(ctx context.Context) (uint64, error) {
	return rr.leaderReads.get(ctx, rr.confirmReadIndex)
}

// confirmReadIndex is one round of readIndex.
func (rr *readRounds) confirmReadIndex() (uint64, error) {
	r := rr.r
	ctx, cancel := rr.roundContext()
	defer cancel()
	if _, err := r.terms.ready(ctx, time.Now().Add(r.cfg.LeaderWait)); err != nil {
		return 0, err
	}
	idx := r.node.CommitIndex()
	if err := r.node.VerifyLeader(ctx); err != nil {
		return 0, err
	}
	// The commit index is often an entry the state machine never applies
	// (this term's no-op, the leader-services barrier); a reader waiting
	// for it would wait for the next write.
	return r.node.StateIndex(idx), nil
}

// ReadIndex implements api.InternalBackend: a follower's read barrier
// asks it of the leader. When the follower has not learned that idx is
// committed (known < idx), the leader sends the commit index at once
// (sendCommit): else the follower would wait for Raft's next append, up
// to twice its commit timeout (100 ms) on an idle cluster, which every
// read right after a write through another node would pay.
func (r *Replica) ReadIndex(ctx context.Context, known uint64) (uint64, error) {
	if !r.node.IsLeader() {
		return 0, errNotLeader()
	}
	idx, err := r.reads.readIndex(ctx)
	if err != nil {
		return 0, Unavailable(err)
	}
	if known < idx {
		r.reads.sendCommit(idx)
	}
	return idx, nil
}

// sendCommit has Raft send the followers the commit index, which is at
// least idx, now: at most once per read index (so the barrier entries it
// costs never outnumber the state entries), one at a time, and only when
// nothing is waiting to commit (entries in flight are followed by an
// append that carries the commit index anyway, as writes go on).
func (rr *readRounds) sendCommit(idx uint64) {
	r := rr.r
	if idx <= rr.commitSentFor.Load() || r.node.LastIndex() != r.node.CommitIndex() ||
		!rr.sendingCommit.CompareAndSwap(false, true) {
		return
	}
	rr.commitSentFor.Store(idx)
	rr.commitSends.Add(1)
	done := r.node.SendCommitIndex()
	go func() {
		<-done
		rr.sendingCommit.Store(false)
	}()
}

// ReadBarrier implements api.BarrierBackend: once it returns, local reads
// reflect every write acknowledged before it was called. A node that
// knows no leader for ReadLeaderWait answers unavailable, naming
// ?stale=true.
func (r *Replica) ReadBarrier(ctx context.Context) error {
	idx, err := r.reads.reads.get(ctx, r.reads.fetchReadIndex)
	if err != nil {
		return Unavailable(err)
	}
	return r.reads.waitApplied(ctx, idx)
}

// fetchReadIndex is one round of ReadBarrier: the read index, from this
// node when it leads, else from the leader.
func (rr *readRounds) fetchReadIndex() (uint64, error) {
	r := rr.r
	ctx, cancel := rr.roundContext()
	defer cancel()
	return Ask(ctx, r, Call{
		FindWithin: ReadLeaderWait,
		NoLeader:   r.NoLeaderRead("it cannot answer a linearizable read; add ?stale=true to read this node's own state, which may be out of date"),
	},
		func(ctx context.Context, _ *Term) (uint64, error) { return rr.readIndex(ctx) },
		func(ctx context.Context, cl *client.Client) (uint64, error) {
			var out struct {
				Index uint64 `json:"index"`
			}
			// The commit index this node knows, taken after the round
			// began: the leader sends it the commit index at once if
			// it lags the read index.
			q := url.Values{"commit": {strconv.FormatUint(r.node.CommitIndex(), 10)}}
			err := cl.Do(ctx, client.Request{Method: http.MethodGet, Path: api.InternalPrefix + "readindex", Query: q, NoRetry: true}, &out)
			return out.Index, err
		})
}

// NoLeaderRead is the answer of a read that needs a leader when this node
// has known none for ReadLeaderWait; why says what it cannot do.
func (r *Replica) NoLeaderRead(why string) error {
	return &model.Error{Code: model.CodeUnavailable, Message: fmt.Sprintf(
		"no leader: node %s knows no cluster leader (it waited %s for one), so %s", r.cfg.NodeID, ReadLeaderWait, why)}
}

// waitApplied waits until this node's state machine has applied idx.
func (rr *readRounds) waitApplied(ctx context.Context, idx uint64) error {
	r := rr.r
	for {
		ch := r.fsm.Changed()
		if r.fsm.AppliedIndex() >= idx {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return Unavailable(fmt.Errorf("waiting for index %d to apply: %w", idx, ctx.Err()))
		}
	}
}

// LeaderIndex is the index a read must see applied to reflect every
// write acknowledged before the call: the leader's read index, in a
// round shared with concurrent reads.
func (r *Replica) LeaderIndex(ctx context.Context) (uint64, error) {
	return r.reads.reads.get(ctx, r.reads.fetchReadIndex)
}

// maxAppliedWait bounds how long GET /v1/internal/applied waits.
const maxAppliedWait = 5 * time.Second

// WaitApplied implements api.InternalBackend: it returns once this node
// has applied index, or unavailable after the request's context or
// maxAppliedWait.
func (r *Replica) WaitApplied(ctx context.Context, index uint64) error {
	ctx, cancel := context.WithTimeout(ctx, maxAppliedWait)
	defer cancel()
	return r.reads.waitApplied(ctx, index)
}
