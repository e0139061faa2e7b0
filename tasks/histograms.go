package tasks

import (
	"sort"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ax-scheduler/ax/fsm"
	"github.com/ax-scheduler/ax/model"
)

// DefaultMetricsMaxTasks is how many distinct task names get their own
// task label value on the per-task histograms by default
// (Config.MetricsMaxTasks, -metrics-max-tasks).
const DefaultMetricsMaxTasks = 200

// otherTask is the task label value of every task beyond the cap.
const otherTask = "other"

// Attempt outcomes, the outcome label of ax_attempt_duration_seconds.
const (
	outcomeSuccess = iota
	outcomeFailure
	outcomeTerminated
	outcomeCanceled
	numOutcomes
)

var outcomeNames = [numOutcomes]string{"success", "failure", "terminated", "canceled"}

// attemptOutcome maps the state an attempt ended in to its outcome (-1: the
// attempt did not end).
func attemptOutcome(state string) int {
	switch state {
	case model.StateSuccess:
		return outcomeSuccess
	case model.StateFailed, model.StateRetrying:
		return outcomeFailure
	case model.StateTerminated:
		return outcomeTerminated
	case model.StateCanceled:
		return outcomeCanceled
	}
	return -1
}

// Observer slots of a task: fire lateness, dispatch latency, then attempt
// duration by outcome.
const (
	slotLateness = iota
	slotDispatch
	slotDuration // + outcome
	numSlots     = slotDuration + numOutcomes
)

// taskObservers are one task label value's histogram children, each
// resolved on first use (so a task that never ran has no empty series).
type taskObservers struct {
	label string
	obs   [numSlots]prometheus.Observer
	// exemplarAt is when each bucket of a slot last took an exemplar
	// (Unix ns; exemplarEvery).
	exemplarAt [numSlots][]int64
}

// exemplarEvery is how often a histogram bucket takes a new exemplar. An
// exposition shows one per bucket, the latest: replacing it thousands of
// times a second (a trace id derived, and the client library building
// and checking an exemplar, each time) is work no scrape sees.
const exemplarEvery = time.Second

type taskHistograms struct {
	lateness *prometheus.HistogramVec // task
	dispatch *prometheus.HistogramVec // task
	duration *prometheus.HistogramVec // task, outcome

	// traceID is an instance's trace id for an exemplar ("" for none;
	// nil when tracing is off). now is the clock of exemplarEvery.
	traceID func(id, parent uint64) string
	now     func() time.Time

	mu     sync.Mutex
	max    int
	byTask map[string]*taskObservers
	other  taskObservers
}

// latencyBuckets suit fire lateness and dispatch latency: a healthy
// cluster fires within milliseconds; a backlog shows up in the seconds.
var latencyBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}

// durationBuckets suit attempt durations, from a quick http call to an
// hour-long batch job.
var durationBuckets = []float64{0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 900, 3600}

func newTaskHistograms(max int) *taskHistograms {
	if max <= 0 {
		max = DefaultMetricsMaxTasks
	}
	return &taskHistograms{
		lateness: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "ax_fire_lateness_seconds",
			Help:    "How late instances fired (firedAt - scheduledAt, minus the trigger's jitter) for cron, interval, once and delayed fires, observed by the leader that fired them, by task (the first -metrics-max-tasks task names; the rest as task=\"other\").",
			Buckets: latencyBuckets,
		}, []string{"task"}),
		dispatch: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "ax_dispatch_latency_seconds",
			Help:    "How long instances waited READY before an attempt started on an executor (leased), observed by the leader, by task (capped as ax_fire_lateness_seconds).",
			Buckets: latencyBuckets,
		}, []string{"task"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "ax_attempt_duration_seconds",
			Help:    "Duration of attempts that ended while RUNNING (start to the committed end), observed by the leader, by task (capped as ax_fire_lateness_seconds) and outcome (success, failure, terminated, canceled).",
			Buckets: durationBuckets,
		}, []string{"task", "outcome"}),
		max: max, byTask: map[string]*taskObservers{}, other: taskObservers{label: otherTask},
	}
}

func (h *taskHistograms) collectors() []prometheus.Collector {
	return []prometheus.Collector{h.lateness, h.dispatch, h.duration}
}

// obs returns a task's observers; h.mu is held.
func (h *taskHistograms) obs(task string) *taskObservers {
	if o := h.byTask[task]; o != nil {
		return o
	}
	if len(h.byTask) >= h.max {
		return &h.other
	}
	o := &taskObservers{label: task}
	h.byTask[task] = o
	return o
}

// observe records sec in a task's slot.
func (h *taskHistograms) observe(task string, slot int, sec float64) {
	h.observeTrace(task, slot, sec, nil)
}

// observeTrace is observe with the trace of c's instance as its
// exemplar, when c is given and traced and the bucket's exemplar is
// older than exemplarEvery.
func (h *taskHistograms) observeTrace(task string, slot int, sec float64, c *fsm.InstanceChange) {
	h.mu.Lock()
	o := h.obs(task)
	ob := o.obs[slot]
	if ob == nil {
		switch {
		case slot == slotLateness:
			ob = h.lateness.WithLabelValues(o.label)
		case slot == slotDispatch:
			ob = h.dispatch.WithLabelValues(o.label)
		default:
			ob = h.duration.WithLabelValues(o.label, outcomeNames[slot-slotDuration])
		}
		o.obs[slot] = ob
	}
	var at *int64 // the bucket's exemplar time, when it is due a new one
	var now int64
	if c != nil && h.traceID != nil {
		bounds := latencyBuckets
		if slot >= slotDuration {
			bounds = durationBuckets
		}
		if o.exemplarAt[slot] == nil {
			o.exemplarAt[slot] = make([]int64, len(bounds)+1) // and +Inf
		}
		clock := time.Now
		if h.now != nil {
			clock = h.now
		}
		now = clock().UnixNano()
		if b := &o.exemplarAt[slot][sort.SearchFloat64s(bounds, sec)]; now-*b >= int64(exemplarEvery) {
			at = b
		}
	}
	h.mu.Unlock()
	if at != nil {
		if eo, ok := ob.(prometheus.ExemplarObserver); ok {
			if trace := h.traceID(c.ID, c.Parent); trace != "" {
				h.mu.Lock()
				*at = now
				h.mu.Unlock()
				eo.ObserveWithExemplar(sec, prometheus.Labels{"trace_id": trace})
				return
			}
		}
	}
	ob.Observe(sec)
}

// timedSource reports whether an instance of this source has a fire time
// of its own to be late for (not a manual trigger, a retry or a
// backfill, whose scheduled time is now or in the past on purpose).
func timedSource(s string) bool {
	switch s {
	case model.SourceCron, model.SourceInterval, model.SourceOnce, model.SourceDelay:
		return true
	}
	return false
}

// firedState reports whether a state is one an instance enters when it
// fires.
func firedState(s string) bool {
	switch s {
	case model.StateReady, model.StateBlocked, model.StateWaitingApproval, model.StateSkipped:
		return true
	}
	return false
}

// observeLeader records what the leader observes of a committed change:
// a firing's lateness and an attempt's duration. (Dispatch latency comes
// from the dispatcher, which knows when an instance became READY.)
func (h *taskHistograms) observeLeader(c *fsm.InstanceChange) {
	if c.Renewed {
		return
	}
	if c.Parent == 0 && (c.From == "" || c.From == model.StateScheduled) && firedState(c.State) && timedSource(c.Source) && c.ScheduledAt > 0 && c.FiredAt > 0 {
		h.observeTrace(c.Task, slotLateness, float64(max(c.FiredAt-c.ScheduledAt-c.Jitter, 0))/1000, c)
		return
	}
	if c.From == model.StateRunning && c.AttemptStart > 0 && c.At >= c.AttemptStart {
		if o := attemptOutcome(c.State); o >= 0 {
			h.observeTrace(c.Task, slotDuration+o, float64(c.At-c.AttemptStart)/1000, c)
		}
	}
}
