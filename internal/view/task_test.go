package view

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/model/live"
)

// TestDescribeTrigger: the window, maxRuns and jitter follow the schedule.
func TestDescribeTrigger(t *testing.T) {
	start := model.Time{Time: time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC)}
	end := model.Time{Time: time.Date(2026, 6, 30, 0, 0, 0, 0, time.UTC)}
	tests := []struct {
		tr   model.Trigger
		want string
	}{
		{model.Trigger{Type: model.TriggerCron, Expression: "0 9 * * *", Timezone: "UTC"}, `cron "0 9 * * *" UTC`},
		{model.Trigger{Type: model.TriggerCron, Expression: "0 9 * * *", Timezone: "Europe/Berlin", StartAt: &start, EndAt: &end,
			MaxRuns: 40, Jitter: model.Duration(10 * time.Minute)},
			`cron "0 9 * * *" Europe/Berlin, from 2026-04-01T00:00:00.000Z, until 2026-06-30T00:00:00.000Z, at most 40 runs, jitter 10m0s`},
		{model.Trigger{Type: model.TriggerInterval, Every: model.Duration(time.Minute), MaxRuns: 3}, "every 1m0s, at most 3 runs"},
		{model.Trigger{Type: model.TriggerEvent}, "event"},
	}
	for _, tt := range tests {
		if got := describeTrigger(tt.tr); got != tt.want {
			t.Errorf("got %q, want %q", got, tt.want)
		}
	}
}

// TestWriteTaskTable_Completed: a completed task shows "completed" where
// its next fire would be.
func TestWriteTaskTable_Completed(t *testing.T) {
	done := live.SummarizedTask{Task: model.Task{Name: "done", Trigger: model.Trigger{Type: model.TriggerCron, Expression: "* * * * *", MaxRuns: 3},
		Runs: 3, Completed: "maxRuns 3 reached (3 runs)"}}
	var b bytes.Buffer
	if err := writeTaskTable(&b, []live.SummarizedTask{done}, time.Now()); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[1], "completed") {
		t.Errorf("table:\n%s\nwant the row to say completed", b.String())
	}
}

// TestWritePolicy: task get shows the policy one field per line, in the
// API's spelling, with lists and objects inline; raw JSON is for -o json.
func TestWritePolicy(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		p    model.Policy
		want string
	}{
		{"empty", model.Policy{}, ""},
		{"fields", model.Policy{MaxRetries: 3, RetryInterval: model.Duration(90 * time.Second), RetryableExitCodes: []int{1, 75},
			Overlap: "queue", ExecutorLabels: map[string]string{"pool": "gpu", "zone": "a"},
			OnSuccess: []model.Chain{{Task: "load", Params: map[string]string{"day": "today"}}, {Task: "mail"}},
			RateLimit: &model.RateLimit{Count: 10, Per: model.Duration(time.Minute)}},
			`Policy:
  maxRetries:          3
  retryInterval:       1m30s
  retryableExitCodes:  1, 75
  overlap:             queue
  executorLabels:      pool=gpu, zone=a
  onSuccess:           {task=load, params={day=today}}, {task=mail}
  rateLimit:           count=10, per=1m0s
`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			tw := newTable(&b)
			writePolicy(tw, tc.p)
			if err := tw.Flush(); err != nil {
				t.Fatal(err)
			}
			if got := b.String(); got != tc.want {
				t.Errorf("got\n%s\nwant\n%s", got, tc.want)
			}
			if strings.Contains(b.String(), "{\"") {
				t.Errorf("raw JSON in %q", b.String())
			}
		})
	}
}
