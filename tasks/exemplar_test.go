package tasks

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ax-scheduler/ax/fsm"
	"github.com/ax-scheduler/ax/model"
)

// TestTaskHistograms_Exemplars: with tracing on, a firing's lateness and
// an attempt's duration carry their instance's trace id as an exemplar
// (a shard's, its sharded instance's); without a trace id, none.
func TestTaskHistograms_Exemplars(t *testing.T) {
	h := newTaskHistograms(10)
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
	want := map[string]string{
		"ax_fire_lateness_seconds/j":    "trace_id=" + model.FormatID(1) + model.FormatID(0),
		"ax_attempt_duration_seconds/j": "trace_id=" + model.FormatID(2) + model.FormatID(9),
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
