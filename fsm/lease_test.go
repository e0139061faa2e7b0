package fsm

import (
	"strings"
	"testing"

	"github.com/ax-scheduler/ax/model"
)

// TestFSM_LeaseHandOff: from protocol 6 only attempts that started are
// charged to maxRetries. A lease that lapses before a heartbeat confirmed
// it, one the leader marks interrupted (last renewed under an earlier
// leader) and an attempt its executor reports interrupted put the
// instance back to READY without using a retry, however often; the next
// lease is a new, higher attempt. A confirmed lease that lapses is lost
// and charged, and so is an unconfirmed one whose executor restarted
// since (the attempt may have crashed it).
func TestFSM_LeaseHandOff(t *testing.T) {
	type step func(fx *execFixture, id uint64)
	lease := func(fx *execFixture, id uint64) { fx.lease(id) }
	beat := func(fx *execFixture, id uint64) { fx.beat(id) }
	lapse := func(fx *execFixture, id uint64) { fx.expire(id, false) }
	lapseInterrupted := func(fx *execFixture, id uint64) { fx.expire(id, true) }
	report := func(interrupted bool) step {
		return func(fx *execFixture, id uint64) {
			writeResult(fx.t, fx.do(CmdComplete, Complete{ID: id, Attempt: fx.inst(id).Attempts, Report: model.CompleteRequest{
				Executor: "e1", Canceled: true, Retryable: true, Interrupted: interrupted, ExitCode: -1, Error: "stopped: executor shutting down"}}))
		}
	}
	tests := []struct {
		name       string
		maxRetries int
		steps      []step
		state      string
		attempts   int
		outcomes   []string
	}{
		{"unconfirmed lapse is given back", 0, []step{lease, lapse}, model.StateReady, 1,
			[]string{model.OutcomeInterrupted}},
		{"given back, then leased as attempt 2 and it succeeds", 0, []step{lease, lapse, lease, beat, func(fx *execFixture, id uint64) { fx.complete(id, true, false) }},
			model.StateSuccess, 2, []string{model.OutcomeInterrupted, model.OutcomeSuccess}},
		{"a renewal before the start does not confirm", 0, []step{lease, func(fx *execFixture, id uint64) {
			writeResult(fx.t, fx.do(CmdHeartbeat, Heartbeat{Executor: "e1", Items: []AttemptRef{{ID: id, Attempt: 1, Unstarted: true}}, LeaseMs: 10_000}))
		}, lapse}, model.StateReady, 1, []string{model.OutcomeInterrupted}},
		{"confirmed lapse is lost and charged", 0, []step{lease, beat, lapse}, model.StateFailed, 1,
			[]string{model.OutcomeLost}},
		{"confirmed lapse across a leader change is interrupted", 0, []step{lease, beat, lapseInterrupted}, model.StateReady, 1,
			[]string{model.OutcomeInterrupted}},
		{"reported interrupted runs again", 0, []step{lease, beat, report(true)}, model.StateReady, 1,
			[]string{model.OutcomeInterrupted}},
		{"reported canceled without interrupted is charged", 0, []step{lease, beat, report(false)}, model.StateFailed, 1,
			[]string{model.OutcomeCanceled}},
		{"interruptions do not use retries", 1, []step{lease, beat, report(true), lease, lapse, lease, beat,
			func(fx *execFixture, id uint64) { fx.complete(id, false, true) }},
			model.StateRetrying, 3, []string{model.OutcomeInterrupted, model.OutcomeInterrupted, model.OutcomeFailed}},
		{"a silent mid-run approval is lost", 0, []step{lease, beat, func(fx *execFixture, id uint64) {
			writeResult(fx.t, fx.do(CmdDecide, Decide{ID: id, Action: DecideRequestApproval, Attempt: 1}))
		}, lapse}, model.StateFailed, 1, []string{model.OutcomeLost}},
		{"lapses before a confirmation are never charged", 0, []step{lease, lapse, lease, lapse, lease, lapse, lease, lapse, lease, lapse, lease, lapse, lease, lapse},
			model.StateReady, 7, []string{"interrupted", "interrupted", "interrupted", "interrupted", "interrupted", "interrupted", "interrupted"}},
		{"a restarted executor's unconfirmed attempt is charged", 0, []step{lease, func(fx *execFixture, id uint64) {
			fx.now += 3_600_000
			writeResult(fx.t, fx.do(CmdExpire, Expire{Items: []ExpireItem{{ID: id, Attempt: 1, Restarted: true}}}))
		}}, model.StateFailed, 1, []string{model.OutcomeLost}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fx := newExecFixture(t, model.Policy{MaxRetries: tc.maxRetries})
			id := fx.trigger()
			for _, s := range tc.steps {
				s(fx, id)
			}
			in := fx.inst(id)
			var outcomes []string
			for _, a := range in.AttemptList {
				outcomes = append(outcomes, a.Outcome)
			}
			if in.State != tc.state || in.Attempts != tc.attempts || strings.Join(outcomes, ",") != strings.Join(tc.outcomes, ",") {
				t.Fatalf("got %s, %d attempts %v; want %s, %d attempts %v", in.State, in.Attempts, outcomes, tc.state, tc.attempts, tc.outcomes)
			}
		})
	}
}

// TestFSM_LeaseHandOffBeforeProtocol6: until the cluster reaches protocol
// 6 a lapsed lease is lost and charged, and an interrupted report is a
// canceled attempt, whatever the commands say, as on a member that does
// not know them.
func TestFSM_LeaseHandOffBeforeProtocol6(t *testing.T) {
	fx := &execFixture{t: t, f: newTestFSM(t), now: t0}
	fx.a = &applier{t: t, f: fx.f}
	writeResult(t, fx.a.apply(cmd(t, CmdSetProto, "", t0, SetProto{Proto: 5})))
	writeResult(t, fx.a.apply(cmd(t, CmdPutTask, "", t0, PutTask{Task: model.Task{Name: "job", Trigger: model.Trigger{Type: model.TriggerEvent},
		Action: model.Action{Type: model.ActionShell, Command: "true"}, Policy: model.Policy{MaxRetries: 1}}})))
	id := fx.trigger()
	fx.lease(id)
	fx.expire(id, true)
	if in := fx.inst(id); in.State != model.StateRetrying || in.AttemptList[0].Outcome != model.OutcomeLost {
		t.Fatalf("lapse at protocol 5: %s %+v, want RETRYING after a lost attempt", in.State, in.AttemptList)
	}
	fx.now += 3_600_000
	fx.do(CmdFire, Fire{Instances: []uint64{id}})
	fx.lease(id)
	writeResult(t, fx.do(CmdComplete, Complete{ID: id, Attempt: 2, Report: model.CompleteRequest{
		Executor: "e1", Canceled: true, Retryable: true, Interrupted: true, Error: "stopped"}}))
	if in := fx.inst(id); in.State != model.StateFailed || in.AttemptList[1].Outcome != model.OutcomeCanceled {
		t.Fatalf("interrupted report at protocol 5: %s %+v, want FAILED after a canceled attempt", in.State, in.AttemptList)
	}
	r := fx.do(CmdNote, Note{IDs: []uint64{id}, Type: NoteOverlap, Message: "m"})
	if r.Err == nil || !strings.Contains(r.Err.Message, "unknown note type") {
		t.Fatalf("overlap note at protocol 5: %v, want refused as an unknown type", r.Err)
	}
}

// TestFSM_JobsAreTheLeasedAttempts: a job is built for the attempt the
// lease committed, and for no other: an attempt that ended, or an
// instance leased again since, gets no job.
func TestFSM_JobsAreTheLeasedAttempts(t *testing.T) {
	fx := newExecFixture(t, model.Policy{MaxRetries: 2})
	id := fx.trigger()
	var lr LeaseResult
	if err := fx.do(CmdLease, Lease{Executor: "e1", IDs: []uint64{id}, LeaseMs: 10_000}).Decode(&lr); err != nil {
		t.Fatal(err)
	}
	jobs, err := fx.f.Jobs(lr.Refs())
	if err != nil || len(jobs) != 1 || jobs[0].Attempt != 1 || jobs[0].ExecutionID != model.FormatID(id)+"-1" {
		t.Fatalf("jobs %+v, %v; want attempt 1", jobs, err)
	}
	fx.expire(id, false) // given back
	fx.lease(id)         // attempt 2
	if jobs, err := fx.f.Jobs(lr.Refs()); err != nil || len(jobs) != 0 {
		t.Fatalf("jobs of attempt 1 after attempt 2 was leased: %+v, %v; want none", jobs, err)
	}
	if jobs, err := fx.f.Jobs([]AttemptRef{{ID: id, Attempt: 0}}); err != nil || len(jobs) != 0 {
		t.Fatalf("jobs of attempt 0: %+v, %v; want none", jobs, err)
	}
}

// TestFSM_Overlap: a fenced attempt that reports it ran past the start of
// the next attempt is an overlap naming both; one that ended before is
// not; the overlap note records it on the instance once.
func TestFSM_Overlap(t *testing.T) {
	fx := newExecFixture(t, model.Policy{MaxRetries: 2})
	id := fx.trigger()
	fx.lease(id)
	fx.beat(id)
	start1 := fx.inst(id).AttemptList[0].StartedAt
	fx.expire(id, false) // lost: now > start1 + 1h
	fx.now += 3_600_000
	fx.do(CmdFire, Fire{Instances: []uint64{id}})
	fx.lease(id)
	start2 := fx.inst(id).AttemptList[1].StartedAt
	ran := start2.Sub(start1.Time).Milliseconds()
	if task, d := fx.f.Overlap(id, 1, ran); d != "" || task != "job" {
		t.Fatalf("attempt 1 alive until attempt 2 started: %q, %q; want no overlap", task, d)
	}
	task, d := fx.f.Overlap(id, 1, ran+250)
	if task != "job" || !strings.Contains(d, "attempt 1 on e1") || !strings.Contains(d, "attempt 2 on e1") || !strings.Contains(d, "at least 250ms") {
		t.Fatalf("overlap %q, %q; want one of at least 250ms naming both attempts", task, d)
	}
	for range 2 {
		writeResult(t, fx.do(CmdNote, Note{IDs: []uint64{id}, Type: NoteOverlap, Message: d}))
	}
	n := 0
	for _, e := range fx.inst(id).Events {
		if e.Type == NoteOverlap {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d overlap events, want 1", n)
	}
}
