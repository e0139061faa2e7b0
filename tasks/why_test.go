package tasks

import (
	"errors"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/fsm"
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
		{"ready, moved by jitter", fsm.WhyFacts{State: model.StateReady, ActionType: model.ActionShell, ScheduledAt: ms(-time.Minute), Jitter: 37_000},
			[]model.ExecutorStatus{{Name: "e1", Free: 3}}, nil,
			"waiting for an executor and a free slot: 1 executor matches with 3 free slots; it is leased at their next poll (fire at 2026-11-30T11:59:00.000Z moved +37s by jitter)"},
		{"running, deadline ahead", fsm.WhyFacts{State: model.StateRunning, Attempts: 1, Executor: "e1", AttemptStart: ms(-time.Minute), LeaseUntil: ms(30 * time.Second),
			ScheduledAt: ms(-time.Hour), Deadline: &model.Deadline{Within: model.Duration(2 * time.Hour)}}, nil, nil,
			"attempt 1 on executor e1 since 2026-11-30T11:59:00.000Z, lease until 2026-11-30T12:00:30.000Z; deadline 2026-11-30T13:00:00.000Z (in 1h0m0s)"},
		{"blocked, past its deadline", fsm.WhyFacts{State: model.StateBlocked, Inflight: 1, Limit: 1,
			ScheduledAt: ms(-3 * time.Hour), Deadline: &model.Deadline{By: "10:30"}, Timezone: "Europe/Berlin"}, nil, nil,
			"waiting for a free slot: 1 of the task's 1 slot is busy (policy overlap=queue); past its deadline 2026-11-30T10:30:00.000+01:00 by 2h30m0s (deadline_missed)"},
		{"blocked for its turn under a rate limit", fsm.WhyFacts{State: model.StateBlocked, Inflight: 3, Limit: 5,
			Rate: &fsm.RateWait{What: "task sync", Limit: model.RateLimit{Count: 10, Per: model.Duration(time.Minute)}, At: ms(12 * time.Second), Waiting: 2}}, nil, nil,
			"waiting for its turn under the rate limit of task sync (10 per 1m0s): it starts at 2026-11-30T12:00:12.000Z, 2 waiting (rateLimit)"},
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
