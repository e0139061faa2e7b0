package tasks

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ax-scheduler/ax/fsm"
	"github.com/ax-scheduler/ax/model"
)

// metrics are the role's Prometheus metrics: instance transitions and
// attempts (every node), fires and misfires (the leader), the per-task
// histograms and health.
type metrics struct {
	transitions *prometheus.CounterVec
	shards      *prometheus.CounterVec // shard transitions, by new state
	fired       prometheus.Counter
	misfires    prometheus.Counter
	attempts    *prometheus.CounterVec // attempts ended, by outcome
	rateLimited *prometheus.CounterVec // instances a rate limit held back, by state

	tasks  *taskHistograms // fire lateness, dispatch latency, attempt duration by task
	health *taskHealth     // last success and expected interval by task
}

func newMetrics(maxTasks int, state State, now func() time.Time) *metrics {
	return &metrics{
		transitions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ax_instance_transitions_total",
			Help: "Instance state transitions applied by this node's state machine, by new state.",
		}, []string{"state"}),
		shards: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ax_shard_transitions_total",
			Help: "State transitions of the shards of sharded instances (policy.shards, broadcast) applied by this node's state machine, by new state; not counted in ax_instance_transitions_total.",
		}, []string{"state"}),
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ax_attempts_ended_total",
			Help: "Attempts ended, applied by this node's state machine, by outcome (success, failed, timeout, lost, canceled, terminated, interrupted).",
		}, []string{"outcome"}),
		rateLimited: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ax_rate_limited_total",
			Help: "Instances a rate limit made wait (state BLOCKED) or skipped (SKIPPED), applied by this node's state machine.",
		}, []string{"state"}),
		fired: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ax_fired_total", Help: "Instances fired by this node while it led (task fire times and due delayed instances).",
		}),
		misfires: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ax_misfires_total", Help: "Fire times recorded as missed (beyond the catch-up window or skipped by policy) while this node led.",
		}),
		tasks:  newTaskHistograms(maxTasks),
		health: newTaskHealth(state, now),
	}
}

// collectors are the metrics, with the gauges of ts's state and wheel.
func (m *metrics) collectors(ts *Tasks) []prometheus.Collector {
	gauge := func(name, help string, f func() float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, f)
	}
	return append(m.tasks.collectors(), m.health, m.transitions, m.shards, m.attempts, m.rateLimited, m.fired, m.misfires,
		gauge("ax_tasks", "Tasks defined.", func() float64 { return float64(ts.state.CountTasks()) }),
		gauge("ax_pending_instances", "SCHEDULED (delayed) instances.", func() float64 { return float64(ts.state.Pending()) }),
		gauge("ax_active_instances", "READY, RUNNING, RETRYING, BLOCKED and WAITING_APPROVAL instances.", func() float64 { return float64(ts.state.ActiveCount()) }),
		gauge("ax_wheel_timers", "Timers in this node's timing wheel (leader only).", func() float64 {
			size, _, _ := ts.Wheel()
			return float64(size)
		}),
		gauge("ax_wheel_load_seconds", "How long this node took to load its wheel when it last gained leadership (0 on followers and until loaded).", func() float64 {
			_, load, _ := ts.Wheel()
			return load.Seconds()
		}),
	)
}

// observe counts a committed change on every node; leader says this node
// leads the term the change belongs to, which alone observes the
// per-task histograms (so they are not counted once per node).
func (m *metrics) observe(c *fsm.InstanceChange, leader bool) {
	if c.Renewed {
		return
	}
	if c.Ended != nil {
		m.attempts.WithLabelValues(c.Ended.Outcome).Inc()
	}
	if c.Parent != 0 {
		// A shard: counted apart; its instance is the task's success.
		m.shards.WithLabelValues(c.State).Inc()
		if leader {
			m.tasks.observeLeader(c)
		}
		return
	}
	m.transitions.WithLabelValues(c.State).Inc()
	if c.Reason == fsm.ReasonRateLimited {
		m.rateLimited.WithLabelValues(c.State).Inc()
	}
	if c.State == model.StateSuccess {
		m.health.succeeded(c.Task, c.At)
	}
	if leader {
		m.tasks.observeLeader(c)
	}
}

// started observes a dispatch latency (the dispatcher's Started hook).
func (m *metrics) started(task string, waited time.Duration) {
	m.tasks.observe(task, slotDispatch, waited.Seconds())
}

func (m *metrics) onFired(r *fsm.FireResult) {
	m.fired.Add(float64(r.Fired))
	m.misfires.Add(float64(r.Misfires))
}
