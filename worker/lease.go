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
//   - The leader stamps a lease's deadline, its clock at commit plus the
//     lease L, when it leases an attempt and on every heartbeat that
//     renews it, and expires the attempt only once that deadline plus an
//     expiry grace (L/2) has passed.
//   - The executor counts each lease on its monotonic clock from a moment
//     no later than the leader's stamp: when it sent the heartbeat that
//     renewed it (or the poll that leased it, plus the time the leader
//     says it held the poll).
//   - An attempt not renewed within L of that moment is stopped by the
//     executor itself: SIGTERM to its process group, SIGKILL after
//     min(KillGrace, L/4). It is gone by L + L/4 after a moment before
//     the leader's stamp, while the leader may hand the instance out
//     again only L + L/2 after its stamp: a margin of L/4 (2.5s with the
//     default 10s lease) for the kill to take effect and for the rates of
//     the two clocks to differ (1% of 1.5 L is 0.15s).
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
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.ended || a.reason != "" {
		return
	}
	a.reason = reason
	a.cancel(&action.StopError{Reason: reason, Grace: grace})
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

// expired reports whether the lease has run out on the executor's clock,
// and whether the attempt still runs.
func (a *attempt) expired(now time.Time) (expired, running bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return now.Sub(a.renewed) >= a.lease, !a.ended && a.reason == ""
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
// lease of length lease: short enough to end within the leader's expiry
// grace.
func (e *Worker) fenceGrace(lease time.Duration) time.Duration {
	return min(e.cfg.KillGrace, lease/4)
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
			if expired, running := a.expired(now); expired && running {
				e.log.Warn("stopping attempt: its lease was not renewed in time; the cluster may run it elsewhere",
					"execution", a.job.ExecutionID, "lease", a.lease)
				a.stop(leaseLostReason+": not renewed within "+a.lease.String(), e.fenceGrace(a.lease))
			}
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
