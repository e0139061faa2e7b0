package tasks

import (
	"context"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/ax-scheduler/ax/api"
	"github.com/ax-scheduler/ax/fsm"
	"github.com/ax-scheduler/ax/fsm/command"
	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/replica"
	"github.com/ax-scheduler/ax/sched"
	"github.com/ax-scheduler/ax/tracing"
	"github.com/ax-scheduler/ax/wheel"
)

// Config configures the tasks and instances role.
type Config struct {
	Logger hclog.Logger
	// Clock is the node's time base: the leader's scheduler fires by it,
	// and the next fire times shown are computed from it.
	Clock wheel.Clock
	// Horizon: delayed instances due within it are held in the leader's
	// timing wheel.
	Horizon time.Duration
	// Retention is how long finished instances are kept when their task
	// sets no policy.retention (0: forever); RetentionInterval how often
	// the leader looks for them (default 1m).
	Retention         time.Duration
	RetentionInterval time.Duration
	// MetricsMaxTasks caps the task label values of the per-task
	// histograms (default DefaultMetricsMaxTasks).
	MetricsMaxTasks int
	// Executors lists the executors the leader hears from (why a READY
	// instance waits); OwnAttempt refuses an executor's approval request
	// on an attempt not leased to it; Live is the leader's live output of
	// a running attempt (InstanceLog).
	Executors  func(ctx context.Context) (*model.ExecutorList, error)
	OwnAttempt func(ctx context.Context, field string, id uint64) error
	Live       func(t *replica.Term, id uint64, offset int64) (attempt int, start int64, out string, ok bool)
	// StopHold is how long an attempt an operator stopped may still run
	// (executors.Executors.StopHold): a re-run of its instance waits for
	// it.
	StopHold time.Duration
	// Tracer traces instances (nil: off): new instances link to the
	// caller's traceparent, and the fire lateness and attempt duration
	// histograms carry their instance's trace id as an exemplar.
	Tracer *tracing.Tracer
}

// Replica is what the tasks role needs of the replica (*replica.Replica).
type Replica interface {
	replica.Leader
	replica.Proposer
	ProposeAsync(c *command.Command) replica.Future
	IsLeader() bool
	ReadBarrier(ctx context.Context) error
	Current() *replica.Term
}

// State is what the tasks role reads of the state machine (*fsm.FSM).
type State interface {
	sched.Store
	GetTask(name string) (*model.Task, error)
	ListTasks(f model.TaskFilter) (*model.TaskList, error)
	TaskHistory(name string) (*model.TaskHistory, error)
	AuditRefs(task string) ([]fsm.AuditRef, error)
	TaskVersionAt(name string, v uint64) (*model.Task, error)
	TaskEvents(name string) (*model.TaskEvents, error)
	Rollout(name string) (*model.Rollout, error)
	PlanPutTask(c *command.Command) (*model.TaskPlan, error)
	GetInstance(id uint64) (*model.Instance, error)
	Shards(id uint64) ([]model.Instance, error)
	ListInstances(f model.InstanceFilter) (*model.InstanceList, error)
	InstanceWhy(id uint64) (*fsm.WhyFacts, error)
	InstanceLineage(id uint64) (*model.Lineage, error)
	Log(id uint64) (*model.InstanceLog, error)
	AttemptLog(id uint64, n int) (*model.InstanceLog, error)
	InstanceResult(id uint64) (*model.InstanceResult, error)
	Expired(now time.Time, def time.Duration, limit int) ([]uint64, error)
	FinishedIn(task string, from, to int64, states []string, limit int) ([]uint64, error)
	LastSuccesses(maxScan int) (map[string]int64, error)
	CountTasks() int
	Pending() int
	ActiveCount() int
	AppliedIndex() uint64
}

// Tasks defines tasks (api.TaskBackend) and creates, reads and decides
// instances (api.InstanceBackend); as leader it fires them (the term's
// scheduler) and prunes those past retention.
type Tasks struct {
	cfg     Config
	log     hclog.Logger
	rep     Replica
	state   State
	metrics *metrics
}

var (
	_ api.TaskBackend     = (*Tasks)(nil)
	_ api.InstanceBackend = (*Tasks)(nil)
)

// New returns the tasks role.
func New(cfg Config, rep Replica, state State) *Tasks {
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	t := &Tasks{cfg: cfg, log: cfg.Logger, rep: rep, state: state}
	t.metrics = newMetrics(cfg.MetricsMaxTasks, state, cfg.Clock.Now)
	if cfg.Tracer != nil {
		t.metrics.tasks.traceID = cfg.Tracer.TraceID
	}
	return t
}

type schedulerKey struct{}

// StartTerm makes term t's scheduler (firing through the replica) and
// returns the term's services: the scheduler and retention.
func (ts *Tasks) StartTerm(t *replica.Term) []replica.Service {
	s := sched.New(sched.Config{Clock: ts.cfg.Clock, Horizon: ts.cfg.Horizon, Logger: ts.log, OnFired: ts.metrics.onFired}, ts.state,
		func(c *command.Command) sched.Future { return ts.rep.ProposeAsync(c) })
	t.Attach(schedulerKey{}, s)
	return []replica.Service{{Name: "scheduler", Run: s.Run}}
}

// RetentionService is the leader's retention (a per-term service).
func (ts *Tasks) RetentionService() replica.Service {
	return replica.Service{Name: "retention", Run: func(ctx context.Context) error { ts.runRetention(ctx); return nil }}
}

// schedulerOf is term t's scheduler, nil if t is nil.
func schedulerOf(t *replica.Term) *sched.Scheduler {
	if t == nil {
		return nil
	}
	s, _ := t.Attached(schedulerKey{}).(*sched.Scheduler)
	return s
}

// Wheel is the leader's timing wheel for /healthz: its size and how long
// it took to load; ok false unless this node leads.
func (ts *Tasks) Wheel() (size int, load time.Duration, ok bool) {
	if s := schedulerOf(ts.rep.Current()); s != nil {
		st := s.Stats()
		return st.WheelSize, st.Loaded, true
	}
	return 0, 0, false
}

// ClockStepped wakes the leader's scheduler: the time base moved for a
// step of the wall clock.
func (ts *Tasks) ClockStepped() {
	if s := schedulerOf(ts.rep.Current()); s != nil {
		s.ClockStepped()
	}
}

// TaskChanged takes a task change the state machine applied; t is the
// term its changes feed (replica.Replica.Observed), nil while following.
func (ts *Tasks) TaskChanged(name string, t *replica.Term) {
	ts.metrics.health.taskChanged(name)
	if s := schedulerOf(t); s != nil {
		s.TaskChanged(name)
	}
}

// Scheduled takes a delayed instance's due time (t as for TaskChanged).
func (ts *Tasks) Scheduled(id uint64, dueMs int64, t *replica.Term) {
	if s := schedulerOf(t); s != nil {
		s.Scheduled(id, dueMs)
	}
}

// InstanceChanged counts an instance change the state machine applied;
// the per-task histograms only while this node leads the term it belongs
// to (t non-nil), so they are not counted once per node.
func (ts *Tasks) InstanceChanged(c *fsm.InstanceChange, t *replica.Term) {
	ts.metrics.observe(c, t != nil)
}

// Restored: a snapshot replaced the state, so the metrics derived from
// earlier changes are read again.
func (ts *Tasks) Restored() { ts.metrics.health.restored() }

// Started observes a dispatch latency (the dispatcher's Started hook).
func (ts *Tasks) Started(task string, waited time.Duration) { ts.metrics.started(task, waited) }

// Collectors are the role's metrics.
func (ts *Tasks) Collectors() []prometheus.Collector { return ts.metrics.collectors(ts) }
