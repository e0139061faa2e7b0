package agent

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/ax-scheduler/ax/dispatch"
	"github.com/ax-scheduler/ax/fsm"
	"github.com/ax-scheduler/ax/fsm/command"
	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/raftnode"
	"github.com/ax-scheduler/ax/sched"
)

// Leadership terms (Nomad's monitorLeadership / establishLeadership /
// revokeLeadership). A term is one stretch of this node leading, and it
// has one owner, the leader loop: on gaining leadership the loop
// establishes a term, which waits for a Raft barrier (so the state machine
// holds every entry committed by earlier leaders) and then starts every
// per-term service together; on losing leadership the loop revokes the
// term, which cancels the services and waits until each has returned,
// before it establishes the next one. So two terms never overlap, and
// nothing of an old term (a deferred clean-up, a late proposal) reaches
// the next one.
//
// Writes on a leader wait for its term's barrier (readyTerm): a new leader
// checks and proposes a write only against a state holding every
// committed write, whichever node led before.

// term is one leadership term of this node.
type term struct {
	ctx    context.Context // ends when the term is revoked
	cancel context.CancelFunc
	ready  chan struct{} // closed once the barrier is done and the services are made
	done   chan struct{} // closed once every service has returned

	// Set before ready is closed, read only after it is.
	raftTerm uint64
	disp     *dispatch.Dispatcher
	sched    *sched.Scheduler
	guard    *clockGuard
}

// isReady reports whether the term's barrier is done and the term is not
// being revoked.
func (t *term) isReady() bool {
	select {
	case <-t.ready:
		return t.ctx.Err() == nil
	default:
		return false
	}
}

// service is one leader-only activity of a term. Run must return soon
// after ctx ends; an error is logged (the term goes on without it).
type service struct {
	name string
	run  func(ctx context.Context) error
}

// termServices lists everything a term runs, started together once its
// barrier is done and stopped and waited for together when it ends.
// Register a new per-term service here.
func (a *Agent) termServices(t *term) []service {
	return append([]service{
		{"record-self", a.recordSelf},
		{"dispatcher", t.disp.Run},
		{"scheduler", t.sched.Run},
		{"alerts", func(ctx context.Context) error { a.runAlerts(ctx); return nil }},
		{"watchdog", a.runWatchdog},
		{"alert-notify", a.runNotify},
		{"retention", func(ctx context.Context) error { a.runRetention(ctx); return nil }},
		{"cluster-state", func(ctx context.Context) error { a.ensureClusterState(ctx); return nil }},
		{"seal-channels", a.runSealChannels},
		{"clock-guard", t.guard.Run},
	}, a.cfg.testServices...)
}

// leaderLoop owns the terms: it establishes one when this node becomes
// leader and revokes it (waiting for its services) when it stops being
// leader or the agent stops.
func (a *Agent) leaderLoop() {
	defer a.wg.Done()
	changes := a.node.LeadershipChanges()
	var cur *term
	for {
		select {
		case <-a.stopCh:
			a.revoke(cur)
			return
		case isLeader := <-changes:
			// A repeated "leader" restarts the term too: the barrier of
			// the running one may belong to an earlier Raft term.
			a.revoke(cur)
			cur = nil
			if isLeader {
				cur = a.establish()
			}
		}
	}
}

// establish starts a term: its barrier, then its services, in the
// background.
func (a *Agent) establish() *term {
	ctx, cancel := context.WithCancel(context.Background())
	t := &term{ctx: ctx, cancel: cancel, ready: make(chan struct{}), done: make(chan struct{})}
	a.setTerm(t)
	go a.runTerm(t)
	return t
}

// revoke ends a term and returns once every one of its services has
// returned.
func (a *Agent) revoke(t *term) {
	if t == nil {
		return
	}
	start := time.Now()
	t.cancel()
	<-t.done
	a.setTerm(nil)
	a.log.Info("leader services stopped", "term", t.raftTerm, "took", time.Since(start).Round(time.Millisecond))
}

// runTerm waits for the barrier, then runs the term's services until they
// have all returned.
func (a *Agent) runTerm(t *term) {
	defer close(t.done)
	raftTerm, err := a.barrier(t.ctx)
	if err != nil {
		return
	}
	t.raftTerm = raftTerm
	// A leader whose clock is off hands leadership over before any
	// service starts.
	if t.guard = a.guardClock(t.ctx); t.ctx.Err() != nil {
		return
	}
	t.disp = dispatch.New(dispatch.Config{Lease: a.cfg.Lease, Now: a.cfg.Clock.Now, Mono: time.Now, Logger: a.log, Prepare: a.prepareJob,
		Started: a.metrics.started, MaxSkew: a.cfg.MaxClockSkew, Overlapped: a.metrics.overlapped}, a.fsm, a.termProposer(t))
	t.sched = sched.New(sched.Config{Clock: a.cfg.Clock, Horizon: a.cfg.Horizon, Logger: a.log, OnFired: a.metrics.onFired}, a.fsm, a.proposeAsync)
	close(t.ready)
	a.wakeTerm()
	a.log.Info("leader services started", "term", raftTerm, "applied", a.fsm.AppliedIndex())
	var wg sync.WaitGroup
	for _, s := range a.termServices(t) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := s.run(t.ctx); err != nil && t.ctx.Err() == nil {
				a.log.Error("leader service stopped", "service", s.name, "error", err)
			}
		}()
	}
	wg.Wait()
}

// barrier waits until the state machine holds every entry committed
// before this term, retrying until it succeeds, this node stops leading
// or ctx ends. It returns the Raft term it leads.
func (a *Agent) barrier(ctx context.Context) (uint64, error) {
	for {
		raftTerm := a.node.Term()
		bctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := a.node.Barrier(bctx)
		cancel()
		switch {
		case ctx.Err() != nil:
			return 0, ctx.Err()
		case err == nil:
			return raftTerm, nil
		case errors.Is(err, raftnode.ErrShutdown), errors.Is(err, raftnode.ErrLeadershipLost):
			return 0, err
		case errors.Is(err, raftnode.ErrNotLeader) && !a.node.IsLeader():
			return 0, err
		}
		// Still leading: a timeout, or a leadership transfer in progress
		// (which may fail and leave this node leading).
		if errors.Is(err, raftnode.ErrNotLeader) {
			a.log.Debug("leader barrier refused during a leadership transfer; retrying", "error", err)
		} else {
			a.log.Warn("leader barrier failed; retrying", "error", err)
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// setTerm makes t the current term (nil: none) and wakes readyTerm.
func (a *Agent) setTerm(t *term) {
	a.term.Store(t)
	a.wakeTerm()
}

// wakeTerm wakes everything waiting in readyTerm.
func (a *Agent) wakeTerm() {
	a.termMu.Lock()
	defer a.termMu.Unlock()
	if a.termCh != nil {
		close(a.termCh)
	}
	a.termCh = make(chan struct{})
}

func (a *Agent) termWake() <-chan struct{} {
	a.termMu.Lock()
	defer a.termMu.Unlock()
	if a.termCh == nil {
		a.termCh = make(chan struct{})
	}
	return a.termCh
}

// currentTerm returns the term this node leads with its barrier done, or
// nil.
func (a *Agent) currentTerm() *term {
	if !a.node.IsLeader() {
		return nil
	}
	if t := a.term.Load(); t != nil && t.isReady() && t.raftTerm == a.node.Term() {
		return t
	}
	return nil
}

// readyTerm waits until this node leads a term whose barrier is done and
// returns it. It fails with raftnode.ErrNotLeader as soon as this node
// does not lead, and with an unavailable error if the barrier is not done
// by deadline.
func (a *Agent) readyTerm(ctx context.Context, deadline time.Time) (*term, error) {
	for {
		wake, changed := a.termWake(), a.node.LeaderChanged()
		if !a.node.IsLeader() {
			return nil, raftnode.ErrNotLeader
		}
		if t := a.currentTerm(); t != nil {
			return t, nil
		}
		wait := time.Until(deadline)
		if wait <= 0 {
			return nil, &model.Error{Code: model.CodeUnavailable,
				Message: fmt.Sprintf("this node became leader but has not applied the earlier leaders' writes (its barrier) within %s; retry shortly", a.cfg.LeaderWait)}
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

// dispatcher returns this term's dispatcher, or nil unless this node leads
// a term whose barrier is done.
func (a *Agent) dispatcher() *dispatch.Dispatcher {
	if t := a.currentTerm(); t != nil {
		return t.disp
	}
	return nil
}

// scheduler returns this term's scheduler, or nil.
func (a *Agent) scheduler() *sched.Scheduler {
	if t := a.currentTerm(); t != nil {
		return t.sched
	}
	return nil
}

// observed returns the term the state machine's changes feed: the current
// one once its services exist, whether or not Raft still says this node
// leads (a term ends when the leader loop revokes it).
func (a *Agent) observed() *term {
	if t := a.term.Load(); t != nil && t.isReady() {
		return t
	}
	return nil
}

// TaskChanged implements fsm.Observer.
func (a *Agent) TaskChanged(name string) {
	a.liveTask(name)
	if a.metrics != nil {
		a.metrics.health.taskChanged(name)
	}
	if t := a.observed(); t != nil {
		t.sched.TaskChanged(name)
		t.disp.TaskChanged(name)
	}
}

// Restored implements fsm.RestoreObserver: a snapshot replaced the state,
// so the metrics derived from earlier changes are read again.
func (a *Agent) Restored() {
	if a.metrics != nil {
		a.metrics.health.restored()
	}
}

var _ fsm.RestoreObserver = (*Agent)(nil)

// Scheduled implements fsm.Observer.
func (a *Agent) Scheduled(id uint64, dueMs int64) {
	if t := a.observed(); t != nil {
		t.sched.Scheduled(id, dueMs)
	}
}

// maxNodeID bounds a node id (a joining node's id is a valid name, at most
// 128 bytes).
const maxNodeID = 128

// selfInfo is this node's record: its addresses and the protocol its
// binary speaks.
func (a *Agent) selfInfo() command.NodeInfo {
	return command.NodeInfo{ID: a.cfg.NodeID, RaftAddr: a.node.Addr(), HTTPAddr: a.advertisedHTTP(), Proto: command.ProtoVersion}
}

// recordSelf stores this node's record in the state machine if it is
// missing or stale (other addresses, or an older protocol: the node was
// upgraded).
func (a *Agent) recordSelf(ctx context.Context) error {
	nodes, err := a.fsm.Nodes()
	if err != nil {
		return err
	}
	if nodes[a.cfg.NodeID] == a.selfInfo() {
		return nil
	}
	if err := a.proposeSelf(ctx); err != nil {
		a.log.Warn("recording own address failed", "error", err)
	}
	return nil
}
