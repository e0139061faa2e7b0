package executors

import (
	"context"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/ax-scheduler/ax/api"
	"github.com/ax-scheduler/ax/dispatch"
	"github.com/ax-scheduler/ax/fsm"
	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/replica"
	"github.com/ax-scheduler/ax/tracing"
)

// Config configures the executor role.
type Config struct {
	Logger hclog.Logger
	// Now is the node's time base.
	Now func() time.Time
	// Lease is how long an attempt survives without a heartbeat (default
	// 10s); MaxClockSkew how far two leaders' clocks may differ.
	Lease        time.Duration
	MaxClockSkew time.Duration
	// LeaderWait bounds waiting for a leader.
	LeaderWait time.Duration
	// DefaultTimeout is the timeout of attempts whose task sets none.
	DefaultTimeout time.Duration
	// Started, when set, is told each dispatch latency (see
	// dispatch.Config.Started).
	Started func(task string, waited time.Duration)
	// Tracer traces instances (nil: off); leased jobs carry their
	// attempt's traceparent.
	Tracer *tracing.Tracer
}

// Replica is what the executor role needs of the replica
// (*replica.Replica).
type Replica interface {
	replica.Leader
	IsLeader() bool
	ReadBarrier(ctx context.Context) error
	Current() *replica.Term
	NoLeaderRead(why string) error
}

// Access is what the executor role needs of access control
// (*access.Access).
type Access interface {
	// OwnAttempt refuses (403) an executor-bound principal's report on
	// an attempt not leased to it.
	OwnAttempt(ctx context.Context, field string, id uint64) error
	// SecretValue is a secret's plaintext, for a lease.
	SecretValue(name string) (string, error)
}

// Executors is the executor protocol's leader side (api.ExecutorBackend):
// each leadership term's dispatcher (READY queue, leases, heartbeats,
// reports), reached through the replica on whichever node leads.
type Executors struct {
	cfg      Config
	log      hclog.Logger
	rep      Replica
	store    dispatch.Store
	acc      Access
	overlaps prometheus.Counter // fenced attempts found to outlive their successor's start
}

var _ api.ExecutorBackend = (*Executors)(nil)

// New returns the executor role; the dispatcher of each term is made by
// StartTerm.
func New(cfg Config, rep Replica, store dispatch.Store, acc Access) *Executors {
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	return &Executors{cfg: cfg, log: cfg.Logger, rep: rep, store: store, acc: acc,
		overlaps: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ax_attempt_overlaps_total",
			Help: "Fenced attempts this node, as leader, found to have run on after the next attempt of their instance started (should stay 0; each is an instance event).",
		})}
}

type dispatcherKey struct{}

// StopHold is how long an attempt an operator stopped (terminate, or a
// mid-run approval rejected or canceled) may still run on its executor:
// until it learns of the stop, or its own fence stops it within the
// lease, plus the expiry grace (L/2) the leader allows any lease, plus
// the clock skew between the leaders that stamp the stop and a re-run.
// A re-run of its instance does not start another attempt before.
func (e *Executors) StopHold() time.Duration {
	l := e.cfg.Lease
	if l <= 0 {
		l = dispatch.DefaultLease
	}
	return l + l/2 + e.cfg.MaxClockSkew
}

// StartTerm makes term t's dispatcher (proposing through t) and returns
// its service.
func (e *Executors) StartTerm(t *replica.Term) replica.Service {
	d := dispatch.New(dispatch.Config{Lease: e.cfg.Lease, Now: e.cfg.Now, Mono: time.Now, Logger: e.log, Prepare: e.prepareJob,
		Started: e.cfg.Started, MaxSkew: e.cfg.MaxClockSkew, Overlapped: func(string) { e.overlaps.Inc() }}, e.store, t.Propose)
	t.Attach(dispatcherKey{}, d)
	return replica.Service{Name: "dispatcher", Run: d.Run}
}

// dispatcherOf is term t's dispatcher, nil if t is nil.
func dispatcherOf(t *replica.Term) *dispatch.Dispatcher {
	if t == nil {
		return nil
	}
	d, _ := t.Attached(dispatcherKey{}).(*dispatch.Dispatcher)
	return d
}

// Dispatcher is the dispatcher of the term this node leads now, nil
// unless it leads one whose barrier is done.
func (e *Executors) Dispatcher() *dispatch.Dispatcher { return dispatcherOf(e.rep.Current()) }

// TaskChanged takes a task change the state machine applied; t is the
// term its changes feed (replica.Replica.Observed), nil while following.
func (e *Executors) TaskChanged(name string, t *replica.Term) {
	if d := dispatcherOf(t); d != nil {
		d.TaskChanged(name)
	}
}

// InstanceChanged takes an instance change the state machine applied; t
// as for TaskChanged. The leader logs each attempt that finished.
func (e *Executors) InstanceChanged(c *fsm.InstanceChange, t *replica.Term) {
	d := dispatcherOf(t)
	if d == nil {
		return
	}
	if c.Ended != nil {
		e.logAttempt(c)
	}
	d.InstanceChanged(*c)
}

// logAttempt writes the leader's one line about a finished attempt.
func (e *Executors) logAttempt(c *fsm.InstanceChange) {
	end := c.Ended
	args := []any{"task", c.Task, "instance", model.FormatID(c.ID), "attempt", end.Number, "executor", end.Executor,
		"duration", end.EndedAt.Sub(end.StartedAt.Time).String(), "outcome", end.Outcome, "state", c.State}
	switch {
	case end.HTTPStatus != 0:
		args = append(args, "http_status", end.HTTPStatus)
	case end.ExitCode != nil:
		args = append(args, "exit_code", *end.ExitCode)
	}
	if end.Error != "" {
		args = append(args, "error", end.Error)
	}
	e.log.Info("attempt finished", args...)
}

// Live returns a running attempt's output from offset on, as the leader
// of term t streams it (see dispatch.Dispatcher.Live).
func (e *Executors) Live(t *replica.Term, id uint64, offset int64) (attempt int, start int64, out string, ok bool) {
	d := dispatcherOf(t)
	if d == nil {
		return 0, 0, "", false
	}
	return d.Live(id, offset)
}

// Collectors are the executor role's metrics: READY depth and executor
// slots on the leader, overlaps found.
func (e *Executors) Collectors() []prometheus.Collector {
	return []prometheus.Collector{e.overlaps, leaderState{e}}
}
