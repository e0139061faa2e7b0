package tasks

import (
	"errors"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ax-scheduler/ax/model"
)

// lastSuccessScan bounds how many of a task's newest finished instances
// the state machine reads to find its last success when the table is
// (re)loaded.
const lastSuccessScan = 10_000

// taskHealth keeps, on every node, when each task last succeeded and how
// often each recurring task is expected to fire, for
// ax_task_last_success_timestamp_seconds and
// ax_task_expected_interval_seconds.
//
// Successes come from the state machine's observer (every node applies
// every change, so the value is the same on every node and right on
// whichever node leads). What the observer cannot have seen — successes
// committed before this process started, or brought by a snapshot
// restore — is read once from the state machine (fsm.LastSuccesses, which
// walks each task's finished index backwards: no scan of all instances)
// at the first scrape and after a restore. Tasks that changed are looked
// at again at the next scrape (deleted: dropped; the expected interval
// recomputed). A scrape otherwise costs the number of tasks.
type taskHealth struct {
	state State
	now   func() time.Time

	mu        sync.Mutex
	loaded    bool
	success   map[string]int64   // task -> Unix ms of its last success
	intervals map[string]float64 // unpaused recurring task -> seconds
	changed   map[string]bool    // tasks changed since the last scrape
}

var (
	lastSuccessDesc = prometheus.NewDesc("ax_task_last_success_timestamp_seconds",
		"When the task's newest successful instance finished (Unix seconds); the same on every node. Absent for a task that has not succeeded (within its newest 10,000 finished instances).",
		[]string{"task"}, nil)
	expectedIntervalDesc = prometheus.NewDesc("ax_task_expected_interval_seconds",
		"The longest gap between the next 10 fire times of an unpaused cron or interval task (absent for paused, once and event tasks): alert when time() - ax_task_last_success_timestamp_seconds exceeds a multiple of it.",
		[]string{"task"}, nil)
)

func newTaskHealth(state State, now func() time.Time) *taskHealth {
	return &taskHealth{state: state, now: now, success: map[string]int64{}, intervals: map[string]float64{}, changed: map[string]bool{}}
}

// succeeded records a success observed at (Unix ms).
func (h *taskHealth) succeeded(task string, at int64) {
	h.mu.Lock()
	if at > h.success[task] {
		h.success[task] = at
	}
	h.mu.Unlock()
}

// taskChanged marks a task to be looked at again at the next scrape.
func (h *taskHealth) taskChanged(task string) {
	h.mu.Lock()
	h.changed[task] = true
	h.mu.Unlock()
}

// restored makes the next scrape read everything again.
func (h *taskHealth) restored() {
	h.mu.Lock()
	h.loaded = false
	h.mu.Unlock()
}

// refresh brings the table up to date with the state machine: all of it
// if not loaded, else the changed tasks. The state machine is read
// without h.mu held, so the observer never waits on a scrape.
func (h *taskHealth) refresh() {
	h.mu.Lock()
	loaded, changed := h.loaded, h.changed
	h.changed = map[string]bool{}
	h.mu.Unlock()
	now := h.now()
	if !loaded {
		success, err := h.state.LastSuccesses(lastSuccessScan)
		if err != nil {
			return
		}
		intervals := map[string]float64{}
		filter := model.TaskFilter{Limit: 1000}
		for {
			l, err := h.state.ListTasks(filter)
			if err != nil {
				return
			}
			for i := range l.Tasks {
				if iv, ok := expectedInterval(&l.Tasks[i], now); ok {
					intervals[l.Tasks[i].Name] = iv
				}
			}
			if l.NextCursor == "" {
				break
			}
			filter.Cursor = l.NextCursor
		}
		h.mu.Lock()
		for task, at := range h.success { // observed meanwhile
			if _, ok := success[task]; ok && at > success[task] {
				success[task] = at
			}
		}
		h.success, h.intervals, h.loaded = success, intervals, true
		h.mu.Unlock()
		return
	}
	for task := range changed {
		t, err := h.state.GetTask(task)
		var me *model.Error
		gone := errors.As(err, &me) && me.Code == model.CodeNotFound
		if err != nil && !gone {
			h.taskChanged(task) // try again next time
			continue
		}
		h.mu.Lock()
		delete(h.intervals, task)
		if gone {
			delete(h.success, task)
		} else if iv, ok := expectedInterval(t, now); ok {
			h.intervals[task] = iv
		}
		h.mu.Unlock()
	}
}

// expectedInterval is the longest gap between a recurring, unpaused
// task's next 10 fire times.
func expectedInterval(t *model.Task, now time.Time) (float64, bool) {
	if t.Paused || (t.Trigger.Type != model.TriggerCron && t.Trigger.Type != model.TriggerInterval) {
		return 0, false
	}
	fires := t.NextFires(now, 11)
	var gap time.Duration
	for i := 1; i < len(fires); i++ {
		gap = max(gap, fires[i].Sub(fires[i-1].Time))
	}
	return gap.Seconds(), gap > 0
}

// Describe implements prometheus.Collector.
func (h *taskHealth) Describe(ch chan<- *prometheus.Desc) {
	ch <- lastSuccessDesc
	ch <- expectedIntervalDesc
}

// Collect implements prometheus.Collector.
func (h *taskHealth) Collect(ch chan<- prometheus.Metric) {
	h.refresh()
	h.mu.Lock()
	defer h.mu.Unlock()
	for task, at := range h.success {
		ch <- prometheus.MustNewConstMetric(lastSuccessDesc, prometheus.GaugeValue, float64(at)/1000, task)
	}
	for task, iv := range h.intervals {
		ch <- prometheus.MustNewConstMetric(expectedIntervalDesc, prometheus.GaugeValue, iv, task)
	}
}
