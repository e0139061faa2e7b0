package agent

import (
	"context"
	"time"

	"github.com/ax-scheduler/ax/alerts"
	"github.com/ax-scheduler/ax/clock"
	"github.com/ax-scheduler/ax/dispatch"
	"github.com/ax-scheduler/ax/fsm"
	"github.com/ax-scheduler/ax/fsm/command"
	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/replica"
	"github.com/ax-scheduler/ax/sched"
)

// engines are what a term of this node leads with: its dispatcher,
// scheduler and clock guard, made when the term's barrier is done and
// attached to the term.
type engines struct {
	disp  *dispatch.Dispatcher
	sched *sched.Scheduler
	guard *clock.Guard
}

type enginesKey struct{}

// establish makes a term's engines and lists its services (see
// replica.Config.Establish). A leader whose clock is off hands
// leadership over before any service starts.
func (a *Agent) establish(t *replica.Term) []replica.Service {
	guard := a.cl.Guard(t.Context())
	if t.Context().Err() != nil {
		return nil
	}
	e := &engines{guard: guard}
	e.disp = dispatch.New(dispatch.Config{Lease: a.cfg.Lease, Now: a.cfg.Clock.Now, Mono: time.Now, Logger: a.log, Prepare: a.prepareJob,
		Started: a.metrics.started, MaxSkew: a.cfg.MaxClockSkew, Overlapped: a.metrics.overlapped}, a.fsm, t.Propose)
	e.sched = sched.New(sched.Config{Clock: a.cfg.Clock, Horizon: a.cfg.Horizon, Logger: a.log, OnFired: a.metrics.onFired}, a.fsm,
		func(c *command.Command) sched.Future { return a.rep.ProposeAsync(c) })
	t.Attach(enginesKey{}, e)
	return append([]replica.Service{
		{Name: "record-self", Run: a.cl.RecordSelf},
		{Name: "dispatcher", Run: e.disp.Run},
		{Name: "scheduler", Run: e.sched.Run},
		{Name: "alerts", Run: a.al.RunFailures},
		{Name: "watchdog", Run: a.al.RunWatchdog},
		{Name: "alert-notify", Run: a.al.RunNotify},
		{Name: "retention", Run: func(ctx context.Context) error { a.runRetention(ctx); return nil }},
		{Name: "cluster-state", Run: a.cl.EnsureClusterState},
		{Name: "seal-channels", Run: a.chans.RunSealing},
		{Name: "clock-guard", Run: guard.Run},
	}, a.cfg.testServices...)
}

// enginesOf returns the engines of term t, nil if t is nil.
func (a *Agent) enginesOf(t *replica.Term) *engines {
	if t == nil {
		return nil
	}
	e, _ := t.Attached(enginesKey{}).(*engines)
	return e
}

// dispatcher returns this term's dispatcher, or nil unless this node leads
// a term whose barrier is done.
func (a *Agent) dispatcher() *dispatch.Dispatcher {
	if e := a.enginesOf(a.rep.Current()); e != nil {
		return e.disp
	}
	return nil
}

// scheduler returns this term's scheduler, or nil.
func (a *Agent) scheduler() *sched.Scheduler {
	if e := a.enginesOf(a.rep.Current()); e != nil {
		return e.sched
	}
	return nil
}

// observed returns the engines the state machine's changes feed: the
// observed term's (see replica.Replica.Observed).
func (a *Agent) observed() *engines {
	if a.rep == nil {
		return nil
	}
	return a.enginesOf(a.rep.Observed())
}

// TaskChanged implements fsm.Observer.
func (a *Agent) TaskChanged(name string) {
	a.liveTask(name)
	if a.metrics != nil {
		a.metrics.health.taskChanged(name)
	}
	if e := a.observed(); e != nil {
		e.sched.TaskChanged(name)
		e.disp.TaskChanged(name)
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
	if e := a.observed(); e != nil {
		e.sched.Scheduled(id, dueMs)
	}
}

// maxNodeID bounds a node id (a joining node's id is a valid name, at most
// 128 bytes).
const maxNodeID = 128

// clockStepped wakes this term's scheduler: the time base moved for a
// step of the wall clock.
func (a *Agent) clockStepped() {
	if s := a.scheduler(); s != nil {
		s.ClockStepped()
	}
}

// wheelStats is the leader's timing wheel for /healthz.
func (a *Agent) wheelStats() (int, time.Duration, bool) {
	if s := a.scheduler(); s != nil {
		st := s.Stats()
		return st.WheelSize, st.Loaded, true
	}
	return 0, 0, false
}

// executorCount is how many executors the leader hears from, for /healthz.
func (a *Agent) executorCount() (int, bool) {
	if d := a.dispatcher(); d != nil {
		return len(d.Executors()), true
	}
	return 0, false
}

// ReadBarrier implements api.BarrierBackend (replica.Replica.ReadBarrier).
func (a *Agent) ReadBarrier(ctx context.Context) error { return a.rep.ReadBarrier(ctx) }

// Health is this node's /healthz answer (cluster.Cluster.Health).
func (a *Agent) Health(ctx context.Context) *model.Health { return a.cl.Health(ctx) }

// leaderExecutors is what this term's dispatcher knows of the executors,
// for the watchdog's executor_lost; nil when this node does not lead.
func (a *Agent) leaderExecutors() alerts.Executors {
	if d := a.dispatcher(); d != nil {
		return d
	}
	return nil
}
