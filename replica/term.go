package replica

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ax-scheduler/ax/client"
	"github.com/ax-scheduler/ax/fsm"
	"github.com/ax-scheduler/ax/fsm/command"
	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/raftnode"
)

// Leadership terms (Nomad's monitorLeadership / establishLeadership /
// revokeLeadership). A term is one stretch of this node leading, and it
// has one owner, the leader loop: on gaining leadership the loop
// establishes a term, which waits for a Raft barrier (so the state machine
// holds every entry committed by earlier leaders) and then starts every
// per-term service together; on losing leadership the loop revokes the
// term, which cancels the services and waits until each has returned,
// before it establishes the next one. So two terms never overlap, and
// nothing of an old term (a deferred clean-up, a late proposal, a command
// queued in its group commit) reaches the next one.
//
// Writes on a leader wait for its term's barrier (terms.ready): a new leader
// checks and proposes a write only against a state holding every
// committed write, whichever node led before.

// Term is one leadership term of this node.
type Term struct {
	r      *Replica
	ctx    context.Context // ends when the term is revoked
	cancel context.CancelFunc
	ready  chan struct{} // closed once the barrier is done and the services are made
	done   chan struct{} // closed once every service has returned

	// Set before ready is closed, read only after it is.
	raftTerm uint64
	batch    *batcher    // the term's group commit
	values   map[any]any // what Establish attached
}

// Attach keeps v with the term under key (a type of the caller's own, as
// for context values): a role keeps there what it leads the term with
// (the dispatcher, the scheduler), made in Establish. Attach may be called
// only from Establish, before the term is ready; Attached may be called
// once it is (every term Current and Observed return is).
func (t *Term) Attach(key, v any) {
	select {
	case <-t.ready:
		panic("replica: Term.Attach after the term is ready")
	default:
	}
	if t.values == nil {
		t.values = map[any]any{}
	}
	t.values[key] = v
}

// Attached returns what Establish attached under key, or nil.
func (t *Term) Attached(key any) any { return t.values[key] }

// Context ends when the term is revoked.
func (t *Term) Context() context.Context { return t.ctx }

// RaftTerm is the Raft term this term leads.
func (t *Term) RaftTerm() uint64 { return t.raftTerm }

// isReady reports whether the term's barrier is done and the term is not
// being revoked.
func (t *Term) isReady() bool {
	select {
	case <-t.ready:
		return t.ctx.Err() == nil
	default:
		return false
	}
}

// Propose commits c on this node while it leads t, and never forwards:
// once t is not the current term it fails with raftnode.ErrNotLeader
// (nothing proposed). The dispatcher proposes so: every lease it answers
// was applied by this node's state machine, whose state its jobs are
// built from, and a dispatcher whose node lost leadership hands out no
// work.
func (t *Term) Propose(ctx context.Context, c *command.Command) (*fsm.Result, error) {
	if c.ReqID == "" {
		c.ReqID = client.NewRequestID()
	}
	if t.r.Current() != t {
		return nil, raftnode.ErrNotLeader
	}
	ctx, cancel := context.WithTimeout(ctx, t.r.cfg.LeaderWait)
	defer cancel()
	return t.r.applyLocal(ctx, t, c)
}

// Service is one leader-only activity of a term. Run must return soon
// after ctx ends; an error is logged (the term goes on without it).
type Service struct {
	Name string
	Run  func(ctx context.Context) error
}

// terms is the leader loop and the term it runs.
type terms struct {
	r   *Replica
	cur atomic.Pointer[Term] // the current leadership term, nil while following
	mu  sync.Mutex
	ch  chan struct{} // closed and replaced when the term changes or becomes ready
	// restores asks the loop to restore a saved state between two terms
	// (restore.go).
	restores chan restoreReq
}

// leaderLoop owns the terms: it establishes one when this node becomes
// leader and revokes it (waiting for its services) when it stops being
// leader or the replica stops.
func (ts *terms) leaderLoop() {
	r := ts.r
	changes := r.node.LeadershipChanges()
	var cur *Term
	for {
		select {
		case <-r.stopCh:
			ts.revoke(cur)
			return
		case <-r.cfg.Stopping:
			ts.revoke(cur)
			return
		case req := <-ts.restores:
			ts.revoke(cur)
			ans := ts.restore(req)
			cur = nil
			if r.node.IsLeader() {
				cur = ts.establish()
			}
			req.done <- ans
		case isLeader := <-changes:
			// A repeated "leader" restarts the term too: the barrier of
			// the running one may belong to an earlier Raft term.
			ts.revoke(cur)
			cur = nil
			if isLeader {
				cur = ts.establish()
			}
		}
	}
}

// establish starts a term: its barrier, then its services, in the
// background.
func (ts *terms) establish() *Term {
	ctx, cancel := context.WithCancel(context.Background())
	t := &Term{r: ts.r, ctx: ctx, cancel: cancel, ready: make(chan struct{}), done: make(chan struct{})}
	ts.set(t)
	go ts.run(t)
	return t
}

// revoke ends a term and returns once every one of its services has
// returned.
func (ts *terms) revoke(t *Term) {
	if t == nil {
		return
	}
	start := time.Now()
	t.cancel()
	<-t.done
	ts.set(nil)
	ts.r.log.Info("leader services stopped", "term", t.raftTerm, "took", time.Since(start).Round(time.Millisecond))
}

// run waits for the barrier, then runs the term's services until they
// have all returned.
func (ts *terms) run(t *Term) {
	defer close(t.done)
	r := ts.r
	raftTerm, err := ts.barrier(t.ctx)
	if err != nil {
		return
	}
	t.raftTerm = raftTerm
	r.dropUnfinishedRestore()
	t.batch = newBatcher(r, r.node.ApplyAsync)
	services := []Service{{"group-commit", t.batch.run}}
	if r.cfg.Establish != nil {
		services = append(services, r.cfg.Establish(t)...)
	}
	if t.ctx.Err() != nil {
		return
	}
	close(t.ready)
	ts.wake()
	r.log.Info("leader services started", "term", raftTerm, "applied", r.fsm.AppliedIndex())
	var wg sync.WaitGroup
	for _, s := range services {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := s.Run(t.ctx); err != nil && t.ctx.Err() == nil {
				r.log.Error("leader service stopped", "service", s.Name, "error", err)
			}
		}()
	}
	wg.Wait()
}

// barrier waits until the state machine holds every entry committed
// before this term, retrying until it succeeds, this node stops leading
// or ctx ends. It returns the Raft term it leads.
func (ts *terms) barrier(ctx context.Context) (uint64, error) {
	r := ts.r
	for {
		raftTerm := r.node.Term()
		bctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := r.node.Barrier(bctx)
		cancel()
		switch {
		case ctx.Err() != nil:
			return 0, ctx.Err()
		case err == nil:
			return raftTerm, nil
		case errors.Is(err, raftnode.ErrShutdown), errors.Is(err, raftnode.ErrLeadershipLost):
			return 0, err
		case errors.Is(err, raftnode.ErrNotLeader) && !r.node.IsLeader():
			return 0, err
		}
		// Still leading: a timeout, or a leadership transfer in progress
		// (which may fail and leave this node leading).
		if errors.Is(err, raftnode.ErrNotLeader) {
			r.log.Debug("leader barrier refused during a leadership transfer; retrying", "error", err)
		} else {
			r.log.Warn("leader barrier failed; retrying", "error", err)
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// set makes t the current term (nil: none) and wakes ready.
func (ts *terms) set(t *Term) {
	ts.cur.Store(t)
	ts.wake()
}

// wake wakes everything waiting in ready.
func (ts *terms) wake() {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.ch != nil {
		close(ts.ch)
	}
	ts.ch = make(chan struct{})
}

func (ts *terms) wakeCh() <-chan struct{} {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.ch == nil {
		ts.ch = make(chan struct{})
	}
	return ts.ch
}

// Current returns the term this node leads now with its barrier done, or
// nil: ready, not being revoked, and of the Raft term Raft reports, so a
// stale term is never used between a leadership change and its
// notification.
func (r *Replica) Current() *Term {
	if !r.node.IsLeader() {
		return nil
	}
	if t := r.terms.cur.Load(); t != nil && t.isReady() && t.raftTerm == r.node.Term() {
		return t
	}
	return nil
}

// Observed returns the term the state machine's changes feed: the
// current one once its services exist, whether or not Raft still says
// this node leads (a term ends when the leader loop revokes it).
func (r *Replica) Observed() *Term {
	if t := r.terms.cur.Load(); t != nil && t.isReady() {
		return t
	}
	return nil
}

// ready waits until this node leads a term whose barrier is done and
// returns it. It fails with raftnode.ErrNotLeader as soon as this node
// does not lead, and with an unavailable error if the barrier is not done
// by deadline.
func (ts *terms) ready(ctx context.Context, deadline time.Time) (*Term, error) {
	r := ts.r
	for {
		wake, changed := ts.wakeCh(), r.node.LeaderChanged()
		if !r.node.IsLeader() {
			return nil, raftnode.ErrNotLeader
		}
		if t := r.Current(); t != nil {
			return t, nil
		}
		wait := time.Until(deadline)
		if wait <= 0 {
			return nil, &model.Error{Code: model.CodeUnavailable,
				Message: fmt.Sprintf("this node became leader but has not applied the earlier leaders' writes (its barrier) within %s; retry shortly", r.cfg.LeaderWait)}
		}
		timer := time.NewTimer(wait)
		select {
		case <-wake:
		case <-changed:
		case <-timer.C:
		case <-ctx.Done():
			timer.Stop()
			return nil, fmt.Errorf("%w: %v", raftnode.ErrTimeout, ctx.Err())
		}
		timer.Stop()
	}
}
