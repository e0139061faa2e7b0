package tasks

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ax-scheduler/ax/fsm"
	"github.com/ax-scheduler/ax/model"
)

func TestCompleted(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	mt := func(d time.Duration) *model.Time { return &model.Time{Time: now.Add(d)} }
	cron := func(tr model.Trigger) model.Trigger {
		tr.Type, tr.Expression = model.TriggerCron, "0 * * * *"
		return tr
	}
	tests := []struct {
		name string
		tr   model.Trigger
		runs uint64
		want string
	}{
		{"no limits", cron(model.Trigger{}), 7, ""},
		{"runs left", cron(model.Trigger{MaxRuns: 3}), 2, ""},
		{"maxRuns reached", cron(model.Trigger{MaxRuns: 3}), 3, "maxRuns 3 reached (3 runs)"},
		{"one run", cron(model.Trigger{MaxRuns: 1}), 1, "maxRuns 1 reached (1 run)"},
		{"endAt passed", cron(model.Trigger{EndAt: mt(-time.Minute)}), 0, "endAt 2026-11-30T11:59:00.000Z passed"},
		{"no fire before endAt", cron(model.Trigger{EndAt: mt(30 * time.Minute)}), 0, "no fire time left before endAt 2026-11-30T12:30:00.000Z"},
		{"fires before endAt", cron(model.Trigger{EndAt: mt(90 * time.Minute)}), 0, ""},
		// The last fire, at endAt 11:59, may be moved to as late as 12:29.
		{"a fire within its jitter may be due", model.Trigger{Type: model.TriggerCron, Expression: "59 * * * *", EndAt: mt(-time.Minute),
			Jitter: model.Duration(30 * time.Minute)}, 0, ""},
		{"past the jitter too", model.Trigger{Type: model.TriggerCron, Expression: "59 * * * *", EndAt: mt(-time.Minute),
			Jitter: model.Duration(20 * time.Second)}, 0, "endAt 2026-11-30T11:59:00.000Z passed"},
		{"not started yet", cron(model.Trigger{StartAt: mt(48 * time.Hour)}), 0, ""},
		{"once passed", model.Trigger{Type: model.TriggerOnce, At: mt(-time.Hour)}, 0, "its once time 2026-11-30T11:00:00.000Z passed"},
		{"once to come", model.Trigger{Type: model.TriggerOnce, At: mt(time.Hour)}, 0, ""},
		{"event", model.Trigger{Type: model.TriggerEvent}, 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			task := &model.Task{Name: "a", Trigger: tt.tr, Runs: tt.runs}
			if got := completed(task, now); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// TestTaskHistograms_LatenessAfterJitter: a jittered fire's lateness is
// measured from its moved time.
func TestTaskHistograms_LatenessAfterJitter(t *testing.T) {
	h := newTaskHistograms(10)
	reg := prometheus.NewRegistry()
	reg.MustRegister(h.collectors()...)
	at := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC).UnixMilli()
	h.observeLeader(&fsm.InstanceChange{Task: "j", State: model.StateReady, Source: model.SourceCron,
		ScheduledAt: at, Jitter: 37_000, FiredAt: at + 37_250})
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() == "ax_fire_lateness_seconds" {
			if hg := f.GetMetric()[0].GetHistogram(); hg.GetSampleCount() != 1 || hg.GetSampleSum() != 0.25 {
				t.Errorf("lateness count %d sum %.3fs, want one of 0.250s (after the 37s jitter)", hg.GetSampleCount(), hg.GetSampleSum())
			}
			return
		}
	}
	t.Fatal("no ax_fire_lateness_seconds")
}
