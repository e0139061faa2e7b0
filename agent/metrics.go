package agent

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/ax-scheduler/ax/fsm"
	"github.com/ax-scheduler/ax/model"
)

// metrics are the agent's Prometheus metrics, on a registry of its own
// (no global state).
type metrics struct {
	reg         *prometheus.Registry
	transitions *prometheus.CounterVec
	fired       prometheus.Counter
	misfires    prometheus.Counter
	attempts    *prometheus.CounterVec // attempts ended, by outcome
	overlaps    prometheus.Counter     // fenced attempts found to outlive their successor's start

	tasks  *taskHistograms // fire lateness, dispatch latency, attempt duration by task
	health *taskHealth     // last success and expected interval by task
}

func newMetrics(a *Agent) *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		transitions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ax_instance_transitions_total",
			Help: "Instance state transitions applied by this node's state machine, by new state.",
		}, []string{"state"}),
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ax_attempts_ended_total",
			Help: "Attempts ended, applied by this node's state machine, by outcome (success, failed, timeout, lost, canceled, terminated, interrupted).",
		}, []string{"outcome"}),
		overlaps: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ax_attempt_overlaps_total",
			Help: "Fenced attempts this node, as leader, found to have run on after the next attempt of their instance started (should stay 0; each is an instance event).",
		}),
		fired: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ax_fired_total", Help: "Instances fired by this node while it led (task fire times and due delayed instances).",
		}),
		misfires: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ax_misfires_total", Help: "Fire times recorded as missed (beyond the catch-up window or skipped by policy) while this node led.",
		}),
		tasks:  newTaskHistograms(a.cfg.MetricsMaxTasks),
		health: newTaskHealth(a),
	}
	m.reg.MustRegister(m.tasks.collectors()...)
	m.reg.MustRegister(m.health, &leaderState{a: a})
	gauge := func(name, help string, f func() float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, f)
	}
	m.reg.MustRegister(
		m.transitions, m.attempts, m.overlaps, m.fired, m.misfires,
		prometheus.NewGoCollector(),
		gauge("ax_http_connections", "Open connections of the API listener.", func() float64 { return float64(a.conns.open()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "ax_http_connections_evicted_total",
			Help: "Idle API connections closed to admit new ones at the connection cap."}, func() float64 { return float64(a.conns.evicted.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "ax_http_connections_refused_total",
			Help: "API connections closed at once because every connection at the cap was busy."}, func() float64 { return float64(a.conns.refused.Load()) }),
		gauge("ax_tasks", "Tasks defined.", func() float64 { return float64(a.fsm.CountTasks()) }),
		gauge("ax_pending_instances", "SCHEDULED (delayed) instances.", func() float64 { return float64(a.fsm.Pending()) }),
		gauge("ax_active_instances", "READY, RUNNING, RETRYING, BLOCKED and WAITING_APPROVAL instances.", func() float64 { return float64(a.fsm.ActiveCount()) }),
		gauge("ax_wheel_timers", "Timers in this node's timing wheel (leader only).", func() float64 {
			if s := a.scheduler(); s != nil {
				return float64(s.Stats().WheelSize)
			}
			return 0
		}),
		gauge("ax_wheel_load_seconds", "How long this node took to load its wheel when it last gained leadership (0 on followers and until loaded).", func() float64 {
			if s := a.scheduler(); s != nil {
				return s.Stats().Loaded.Seconds()
			}
			return 0
		}),
	)
	return m
}

func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// observe counts a committed change on every node; leader says this node
// leads the term the change belongs to, which alone observes the
// per-task histograms (so they are not counted once per node).
func (m *metrics) observe(c *fsm.InstanceChange, leader bool) {
	if c.Renewed {
		return
	}
	m.transitions.WithLabelValues(c.State).Inc()
	if c.Ended != nil {
		m.attempts.WithLabelValues(c.Ended.Outcome).Inc()
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

// overlapped counts an overlap the dispatcher found (its Overlapped hook).
func (m *metrics) overlapped(string) { m.overlaps.Inc() }

func (m *metrics) onFired(r *fsm.FireResult) {
	m.fired.Add(float64(r.Fired))
	m.misfires.Add(float64(r.Misfires))
}
