package agent

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/api"
	"github.com/ax-scheduler/ax/fsm"
	"github.com/ax-scheduler/ax/fsm/command"
	"github.com/ax-scheduler/ax/model"
)

func TestWhySentence(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	ms := func(d time.Duration) int64 { return now.Add(d).UnixMilli() }
	exit3 := 3
	eu := map[string]string{"region": "eu"}
	shell := &model.Capabilities{Shell: true, HTTP: true}
	tests := []struct {
		name    string
		f       fsm.WhyFacts
		execs   []model.ExecutorStatus
		execErr error
		want    string
	}{
		{"scheduled", fsm.WhyFacts{State: model.StateScheduled, ScheduledAt: ms(4 * time.Minute)}, nil, nil,
			"due at 2026-11-30T12:04:00.000Z (in 4m0s)"},
		{"scheduled overdue", fsm.WhyFacts{State: model.StateScheduled, ScheduledAt: ms(-3 * time.Second)}, nil, nil,
			"due at 2026-11-30T11:59:57.000Z (3s ago): the leader fires it at its next tick"},
		{"ready, no executors", fsm.WhyFacts{State: model.StateReady, ActionType: model.ActionShell}, nil, nil,
			"waiting for an executor and a free slot: no executor is connected"},
		{"ready, labels match none", fsm.WhyFacts{State: model.StateReady, ActionType: model.ActionShell, Labels: eu},
			[]model.ExecutorStatus{{Name: "e1", Labels: map[string]string{"region": "us"}, Free: 2}}, nil,
			"waiting for an executor with label region=eu and a free slot: no connected executor has these labels"},
		{"ready, all busy", fsm.WhyFacts{State: model.StateReady, ActionType: model.ActionShell, Labels: eu},
			[]model.ExecutorStatus{{Name: "e1", Labels: eu, Capabilities: shell}, {Name: "e2", Labels: eu}}, nil,
			"waiting for an executor with label region=eu and a free slot: 2 executors match, all slots busy"},
		{"ready, free slots", fsm.WhyFacts{State: model.StateReady, ActionType: model.ActionShell},
			[]model.ExecutorStatus{{Name: "e1", Free: 3}}, nil,
			"waiting for an executor and a free slot: 1 executor matches with 3 free slots; it is leased at their next poll"},
		{"ready, sdk handler missing", fsm.WhyFacts{State: model.StateReady, ActionType: model.ActionSDK, Handler: "h"},
			[]model.ExecutorStatus{{Name: "e1", Free: 1, Capabilities: &model.Capabilities{Handlers: []string{"other"}}}}, nil,
			"waiting for an SDK worker that runs handler h and a free slot: 1 connected executor has the labels, none runs handler h"},
		{"ready, executors unknown", fsm.WhyFacts{State: model.StateReady, ActionType: model.ActionShell}, nil, errors.New("no leader"),
			"waiting for an executor and a free slot (the leader's executor list is unavailable: no leader)"},
		{"ready, task gone", fsm.WhyFacts{State: model.StateReady, TaskGone: true}, nil, nil,
			"its task no longer exists: nothing will lease it; cancel it"},
		{"running", fsm.WhyFacts{State: model.StateRunning, Attempts: 2, Executor: "e1", Host: "h1", AttemptStart: ms(-time.Minute), LeaseUntil: ms(30 * time.Second)}, nil, nil,
			"attempt 2 on executor e1 (host h1) since 2026-11-30T11:59:00.000Z, lease until 2026-11-30T12:00:30.000Z"},
		{"retrying", fsm.WhyFacts{State: model.StateRetrying, Attempts: 2, MaxRetries: 3, RetryAt: ms(time.Minute),
			LastAttempt: &model.Attempt{Outcome: model.OutcomeFailed, ExitCode: &exit3}}, nil, nil,
			"attempt 2 of 4 failed (exit status 3); retry at 2026-11-30T12:01:00.000Z"},
		{"retrying after a lost lease", fsm.WhyFacts{State: model.StateRetrying, Attempts: 1, MaxRetries: 1, RetryAt: ms(time.Minute),
			LastAttempt: &model.Attempt{Outcome: model.OutcomeLost, Error: "lost: executor e1 stopped renewing its lease"}}, nil, nil,
			"attempt 1 of 2 lost (lost: executor e1 stopped renewing its lease); retry at 2026-11-30T12:01:00.000Z"},
		{"retrying after interruptions", fsm.WhyFacts{State: model.StateRetrying, Attempts: 4, Free: 2, MaxRetries: 3, RetryAt: ms(time.Minute),
			LastAttempt: &model.Attempt{Outcome: model.OutcomeFailed, ExitCode: &exit3}}, nil, nil,
			"attempt 2 of 4 failed (exit status 3); retry at 2026-11-30T12:01:00.000Z (and 2 interrupted attempts, not counted)"},
		{"blocked on an upstream", fsm.WhyFacts{State: model.StateBlocked, WaitingFor: []string{"extract"}, Date: "2026-11-30"}, nil, nil,
			"waiting for upstream task extract to succeed for 2026-11-30"},
		{"blocked on two upstreams", fsm.WhyFacts{State: model.StateBlocked, WaitingFor: []string{"a", "b"}, Date: "2026-11-30"}, nil, nil,
			"waiting for upstream tasks a, b to succeed for 2026-11-30"},
		{"blocked on slots", fsm.WhyFacts{State: model.StateBlocked, Inflight: 2, Limit: 2}, nil, nil,
			"waiting for a free slot: 2 of the task's 2 slots are busy (policy overlap=queue)"},
		{"approval mid-run", fsm.WhyFacts{State: model.StateWaitingApproval, MidRun: true, Attempts: 1, Executor: "e1",
			Approval: &model.Event{Time: model.UnixMilli(ms(-time.Minute)), Message: "drop table?"}}, nil, nil,
			"waiting for approval requested by attempt 1 on executor e1 at 2026-11-30T11:59:00.000Z: drop table?"},
		{"approval before run", fsm.WhyFacts{State: model.StateWaitingApproval, Approval: &model.Event{Time: model.UnixMilli(ms(-time.Hour))}}, nil, nil,
			"waiting for approval before it runs (policy approval=before_run) since 2026-11-30T11:00:00.000Z"},
		{"finished", fsm.WhyFacts{State: model.StateSuccess}, nil, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := whySentence(&tt.f, tt.execs, tt.execErr, now); got != tt.want {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
}

// TestAgent_ConsoleReads runs the console's reads against a one-node
// agent: the overview counts what was fired and finished, an instance says
// why it waits, summaries, counts, calendar and fires answer.
func TestAgent_ConsoleReads(t *testing.T) {
	a := startAgent(t)
	ctx := context.Background()
	c := api.Caller{Actor: "tester"}
	task := &model.Task{Name: "job", Trigger: model.Trigger{Type: model.TriggerCron, Expression: "30 2 * * *", Timezone: "America/Los_Angeles"},
		Action: model.Action{Type: model.ActionShell, Command: "true"}, Policy: model.Policy{MaxConcurrency: 5, ExecutorLabels: map[string]string{"region": "eu"}}}
	if _, err := a.PutTask(ctx, c, task, api.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for range 3 {
		in, err := a.Trigger(ctx, c, "job", model.TriggerRequest{})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, in.ID)
	}
	if _, err := a.Decide(ctx, c, ids[0], command.DecideCancel, 0, ""); err != nil {
		t.Fatal(err)
	}

	o, err := a.Overview(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if o.Counts.Ready != 2 || o.LastHour.Fired != 3 || o.LastHour.Canceled != 1 || o.Tasks.Total != 1 ||
		o.Cluster == nil || o.Executors == nil || o.ClusterError != "" || o.ExecutorsError != "" || time.Since(o.Time.Time) > time.Minute {
		t.Errorf("overview %+v", o)
	}

	in, err := a.GetInstance(ctx, ids[1])
	if err != nil {
		t.Fatal(err)
	}
	if want := "waiting for an executor with label region=eu and a free slot: no executor is connected"; in.Why != want {
		t.Errorf("why: got %q, want %q", in.Why, want)
	}
	if in, _ := a.GetInstance(ctx, ids[0]); in.Why != "" {
		t.Errorf("a canceled instance says why: %q", in.Why)
	}

	l, err := a.TaskSummaries(ctx, model.TaskFilter{}, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Tasks) != 1 || l.Tasks[0].Summary.NextFire == nil || len(l.Tasks[0].Summary.RecentRuns) != 2 || l.Tasks[0].Summary.LastRun.ID != ids[2] {
		t.Errorf("summaries %+v", l)
	}

	counts, err := a.TaskCounts(ctx, "job", model.CountFilter{Source: model.SourceAPI})
	if err != nil {
		t.Fatal(err)
	}
	if counts.Total != 3 || counts.Counts[model.StateReady] != 2 || counts.Counts[model.StateCanceled] != 1 ||
		counts.Slots == nil || *counts.Slots != (model.SlotUse{Busy: 2, Limit: 5}) {
		t.Errorf("counts %+v (slots %+v)", counts, counts.Slots)
	}
	if counts, _ := a.TaskCounts(ctx, "job", model.CountFilter{Source: model.SourceBackfill}); counts.Total != 0 {
		t.Errorf("backfill counts %+v, want none", counts)
	}

	cal, err := a.TaskCalendar(ctx, "job", 90)
	if err != nil {
		t.Fatal(err)
	}
	today := time.Now().In(mustZone(t, "America/Los_Angeles")).Format("2006-01-02")
	if cal.Timezone != "America/Los_Angeles" || len(cal.Days) != 1 || cal.Days[0].Date != today || cal.Days[0].Counts[model.StateReady] != 2 {
		t.Errorf("calendar %+v, want today %s", cal, today)
	}

	fires, err := a.TaskFires(ctx, "job", 400)
	if err != nil {
		t.Fatal(err)
	}
	changes := 0
	for _, f := range fires.Fires {
		if !strings.HasSuffix(f.Local[:19], "02:30:00") && !strings.HasSuffix(f.Local[:19], "03:30:00") {
			t.Errorf("fire %+v is not at 02:30 local", f)
		}
		if f.DSTChange {
			changes++
		}
	}
	if len(fires.Fires) != 400 || changes < 1 {
		t.Errorf("%d fires, %d offset changes; want 400 fires over a year, with DST changes", len(fires.Fires), changes)
	}
	if _, err := a.TaskFires(ctx, "nope", 1); !errors.Is(err, model.ErrNotFound) {
		t.Errorf("fires of a missing task: %v, want not found", err)
	}
}

func mustZone(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}
