package tasks

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ax-scheduler/ax/fsm"
	"github.com/ax-scheduler/ax/model"
)

// TestTaskHistograms_Exemplars: with tracing on, a firing's lateness and
// an attempt's duration carry their instance's trace id as an exemplar
// (a shard's, its sharded instance's); without a trace id, none. A
// bucket takes a new exemplar at most every exemplarEvery.
func TestTaskHistograms_Exemplars(t *testing.T) {
	h := newTaskHistograms(10)
	clock := time.Unix(1_800_000_000, 0)
	h.now = func() time.Time { return clock }
	h.traceID = func(id, parent uint64) string {
		if id == 3 {
			return "" // not sampled
		}
		return model.FormatID(id) + model.FormatID(parent)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(h.collectors()...)
	h.observeLeader(&fsm.InstanceChange{ID: 1, Task: "j", State: model.StateReady, Source: model.SourceCron, ScheduledAt: 1000, FiredAt: 1020})
	h.observeLeader(&fsm.InstanceChange{ID: 2, Parent: 9, Task: "j", From: model.StateRunning, State: model.StateSuccess, AttemptStart: 1000, At: 1500})
	h.observeLeader(&fsm.InstanceChange{ID: 3, Task: "k", From: model.StateRunning, State: model.StateSuccess, AttemptStart: 1000, At: 1500})
	check(t, reg, map[string]string{
		"ax_fire_lateness_seconds/j":    "trace_id=" + model.FormatID(1) + model.FormatID(0),
		"ax_attempt_duration_seconds/j": "trace_id=" + model.FormatID(2) + model.FormatID(9),
	})
	// Another attempt in the same bucket: within exemplarEvery the bucket
	// keeps its exemplar; after, it takes the newest.
	again := &fsm.InstanceChange{ID: 4, Task: "j", From: model.StateRunning, State: model.StateSuccess, AttemptStart: 1000, At: 1500}
	clock = clock.Add(exemplarEvery / 2)
	h.observeLeader(again)
	check(t, reg, map[string]string{
		"ax_fire_lateness_seconds/j":    "trace_id=" + model.FormatID(1) + model.FormatID(0),
		"ax_attempt_duration_seconds/j": "trace_id=" + model.FormatID(2) + model.FormatID(9),
	})
	clock = clock.Add(exemplarEvery / 2)
	h.observeLeader(again)
	check(t, reg, map[string]string{
		"ax_fire_lateness_seconds/j":    "trace_id=" + model.FormatID(1) + model.FormatID(0),
		"ax_attempt_duration_seconds/j": "trace_id=" + model.FormatID(4) + model.FormatID(0),
	})
}

// check compares the exemplars reg gathers, by metric/task, with want.
func check(t *testing.T, reg *prometheus.Registry, want map[string]string) {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, f := range fams {
		for _, m := range f.GetMetric() {
			task := ""
			for _, l := range m.GetLabel() {
				if l.GetName() == "task" {
					task = l.GetValue()
				}
			}
			for _, b := range m.GetHistogram().GetBucket() {
				if ex := b.GetExemplar(); ex != nil {
					for _, l := range ex.GetLabel() {
						got[f.GetName()+"/"+task] = l.GetName() + "=" + l.GetValue()
					}
				}
			}
		}
	}
	if len(got) != len(want) {
		t.Errorf("exemplars %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: exemplar %q, want %q", k, got[k], v)
		}
	}
}
