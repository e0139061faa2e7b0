package worker

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/ax-scheduler/ax/action"
	"github.com/ax-scheduler/ax/model"
)

// Leases, as the executor keeps them (Chubby's and etcd's rule: the
// holder's deadline comes strictly before the granter's, given clocks
// whose rates differ by little):
//
//   - The leader stamps a lease's deadline, its clock when it proposes
//     plus the lease L, when it leases an attempt and on every heartbeat
//     that renews it, and expires the attempt only once that deadline
//     plus an expiry grace (L/2) has passed (plus the allowed clock skew
//     when an earlier leader stamped it).
//   - The executor counts each lease on its monotonic clock from a moment
//     no later than the leader's stamp: when it sent the heartbeat that
//     renewed it (or the poll that leased it, plus the time the leader
//     says it held the poll).
//   - An attempt not renewed within 3L/4 of that moment is stopped by the
//     executor itself: SIGTERM to its process group, SIGKILL after
//     min(KillGrace, L/4), so it is gone by L after a moment before the
//     leader's stamp. A fence that notices late (the executor was
//     starved or frozen) SIGKILLs at once. The leader may hand the
//     instance out again only L + L/2 after its stamp: the stall bound,
//     how long the executor may not be scheduled (or a kill take) without
//     two attempts running at once, is L/2 (5s with the default lease),
//     less the difference of the two clocks' rates (1% of 1.5 L is
//     0.15s). docs/execution.md states it.
//   - A job whose lease has less than L/2 left when it arrives (its poll
//     waited long on the way, or the executor was frozen) is not started
//     until a heartbeat renewed it; one that cannot be renewed is not
//     started at all (the cluster gives it back without charging a
//     retry: it never confirmed it).
//   - The executor confirms an attempt with its first heartbeat for it
//     (or its report): an attempt whose lease lapses unconfirmed is given
//     back without using a retry.
//
// Heartbeats go every L/4; each try waits at most L/4 for an answer and
// the next server is tried, so an executor that lists a node cut off
// from the others still renews through another one.

// leaseLostReason starts the reason of an attempt stopped by its fence.
const leaseLostReason = "lease lost"

// attempt is one running attempt and what the worker knows of its lease.
type attempt struct {
	job    model.Job
	ctx    context.Context
	cancel context.CancelCauseFunc
	lease  time.Duration

	mu      sync.Mutex
	renewed time.Time // monotonic: no later than the leader's last stamp
	reason  string    // why the worker stopped it, if it did
	ended   bool      // the action has returned; its report is pending
	settle  bool      // its stop waits for a rejected approval to sink in (stopOver)

	outMu   sync.Mutex
	pending []byte // output not yet sent with a heartbeat
}

func (a *attempt) Write(p []byte) (int, error) {
	a.outMu.Lock()
	defer a.outMu.Unlock()
	a.pending = append(a.pending, p...)
	if over := len(a.pending) - 64<<10; over > 0 {
		a.pending = a.pending[over:]
	}
	return len(p), nil
}

func (a *attempt) takeOutput() string {
	a.outMu.Lock()
	defer a.outMu.Unlock()
	s := string(a.pending)
	a.pending = a.pending[:0]
	return s
}

// stop stops the attempt (if its action still runs) for reason, with
// grace between SIGTERM and SIGKILL. The first reason given is kept.
func (a *attempt) stop(reason string, grace time.Duration) {
	a.stopNow(reason, max(grace, time.Millisecond))
}

// stopNow is stop with no grace at all (SIGKILL at once) when grace is
// not positive.
func (a *attempt) stopNow(reason string, grace time.Duration) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.ended || a.reason != "" {
		return
	}
	a.reason = reason
	a.cancel(&action.StopError{Reason: reason, Grace: grace, Kill: grace <= 0})
}

// end marks the action as returned and says why the worker stopped it.
func (a *attempt) end() (reason string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.ended = true
	a.cancel(nil)
	return a.reason
}

// renew records a heartbeat sent at sent that renewed the lease.
func (a *attempt) renew(sent time.Time) {
	a.mu.Lock()
	if sent.After(a.renewed) {
		a.renewed = sent
	}
	a.mu.Unlock()
}

// fenceAt is how long after its last renewal an attempt with lease
// lease is stopped by its executor.
func fenceAt(lease time.Duration) time.Duration { return lease * 3 / 4 }

// expired reports how long ago the attempt's fence passed on the
// executor's clock (negative: not yet), and whether the attempt still
// runs.
func (a *attempt) expired(now time.Time) (past time.Duration, running bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return now.Sub(a.renewed) - fenceAt(a.lease), !a.ended && a.reason == ""
}

// track registers a leased job whose lease started no earlier than start.
func (e *Worker) track(job model.Job, lease time.Duration, start time.Time) *attempt {
	ctx, cancel := context.WithCancelCause(context.Background())
	a := &attempt{job: job, ctx: ctx, cancel: cancel, lease: lease, renewed: start}
	e.mu.Lock()
	e.running[job.ExecutionID] = a
	e.mu.Unlock()
	return a
}

// attempts returns the running attempts (their reports may be pending).
func (e *Worker) attempts() []*attempt {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make([]*attempt, 0, len(e.running))
	for _, a := range e.running {
		out = append(out, a)
	}
	return out
}

func (e *Worker) currentLease() time.Duration {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.lease
}

// due reports whether one of the attempts was last renewed every or more
// ago.
func (e *Worker) due(running []*attempt, every time.Duration) bool {
	now := time.Now()
	for _, a := range running {
		a.mu.Lock()
		old := now.Sub(a.renewed) >= every
		a.mu.Unlock()
		if old {
			return true
		}
	}
	return false
}

// fenceGrace is the SIGTERM-to-SIGKILL grace of an attempt stopped for a
// lease of length lease: the attempt is gone by the lease's end.
func (e *Worker) fenceGrace(lease time.Duration) time.Duration {
	return min(e.cfg.KillGrace, lease-fenceAt(lease))
}

// fence stops every attempt whose lease has run out on this executor's
// clock, until ctx ends.
func (e *Worker) fence(ctx context.Context) {
	for {
		every := min(max(e.currentLease()/40, 25*time.Millisecond), 250*time.Millisecond)
		select {
		case <-ctx.Done():
			return
		case <-time.After(every):
		}
		now := time.Now()
		for _, a := range e.attempts() {
			past, running := a.expired(now)
			if past < 0 || !running {
				continue
			}
			// Its processes must be gone by the lease's end: what is left
			// of the grace, or SIGKILL at once if the fence is late.
			grace := e.fenceGrace(a.lease) - past
			e.log.Warn("stopping attempt: its lease was not renewed in time; the cluster may run it elsewhere",
				"execution", a.job.ExecutionID, "lease", a.lease, "late", past, "grace", max(grace, 0))
			a.stopNow(leaseLostReason+": not renewed within "+fenceAt(a.lease).String(), grace)
		}
	}
}

// heartbeats renews the leases of running attempts, all in one request,
// whenever one of them was last renewed a quarter lease ago, and stops
// the ones the cluster says to stop (terminated, canceled, fenced), until
// ctx ends.
func (e *Worker) heartbeats(ctx context.Context) {
	pause := time.Duration(0)
	for {
		lease := e.currentLease()
		select {
		case <-ctx.Done():
			return
		case <-time.After(max(pause, min(max(lease/40, 10*time.Millisecond), 250*time.Millisecond))):
		}
		pause = 0
		running := e.attempts()
		if !e.due(running, lease/4) {
			continue
		}
		req := model.HeartbeatRequest{Executor: e.cfg.Name}
		for _, a := range running {
			req.Running = append(req.Running, model.RunningAttempt{InstanceID: a.job.InstanceID, Attempt: a.job.Attempt, Output: a.takeOutput()})
		}
		sent := time.Now()
		hctx, cancel := context.WithTimeout(ctx, lease/2)
		resp, err := e.beat.heartbeat(hctx, req, lease/4)
		cancel()
		if err != nil {
			if ctx.Err() == nil {
				e.log.Warn("heartbeat failed", "error", err)
			}
			pause = lease / 8
			continue
		}
		stop := make(map[string]string, len(resp.Stop))
		for _, s := range resp.Stop {
			stop[s.InstanceID+"-"+strconv.Itoa(s.Attempt)] = s.Reason
		}
		for _, a := range running {
			reason, ok := stop[a.job.ExecutionID]
			if !ok {
				a.renew(sent)
				continue
			}
			e.stopOver(a, reason)
		}
	}
}
