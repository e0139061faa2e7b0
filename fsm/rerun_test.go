package fsm

import (
	"fmt"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/ax-scheduler/ax/model"
)

// rerun applies a lone re-run of id and returns its answer (the instance
// as a model.Submitted) or its refusal.
func (fx *policyFixture) rerun(id uint64, reqID string) (model.Submitted, *model.Error) {
	fx.t.Helper()
	r := fx.do(CmdRerun, reqID, Rerun{IDs: []uint64{id}})
	var s model.Submitted
	if r.Err != nil {
		return s, r.Err
	}
	if err := r.Decode(&s); err != nil {
		fx.t.Fatal(err)
	}
	return s, nil
}

func (fx *policyFixture) mustRerun(id uint64) model.Submitted {
	fx.t.Helper()
	s, e := fx.rerun(id, "")
	if e != nil {
		fx.t.Fatalf("rerun %s: %v", model.FormatID(id), e)
	}
	return s
}

func (fx *policyFixture) events(id uint64, typ string) []model.Event {
	var out []model.Event
	for _, e := range fx.inst(id).Events {
		if e.Type == typ {
			out = append(out, e)
		}
	}
	return out
}

func alertPending(t *testing.T, f *FSM, id uint64) bool {
	t.Helper()
	pending := false
	if err := f.view(func(tx *bolt.Tx) error {
		pending = tx.Bucket(bktAlerts).Get(u64key(id)) != nil
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return pending
}

// TestFSM_RerunNewAttemptChain: a FAILED instance re-run is the same
// instance, READY again with a slot; its attempts go on from the last
// one, kept with their output; the attempts before the re-run do not
// count against maxRetries; a rerun event names the actor and the
// outcome it had; the first firing stays in its history; failing again
// waits for its alerts again.
func TestFSM_RerunNewAttemptChain(t *testing.T) {
	fx := newPolicyFixture(t, ProtoVersion)
	fx.mustPut(eventTask("job", model.Policy{MaxRetries: 1, RetryInterval: model.Duration(time.Second)}))
	id := fx.trigger("job")
	firstFired := fx.inst(id).FiredAt
	fail := func(wantState string) {
		t.Helper()
		fx.do(CmdLease, "", Lease{Executor: "e1", IDs: []uint64{id}, LeaseMs: 10_000})
		r := fx.do(CmdComplete, "", Complete{ID: id, Attempt: fx.inst(id).Attempts,
			Report: model.CompleteRequest{Executor: "e1", ExitCode: 3, Error: "exit 3", Retryable: true, Output: fmt.Sprint("out ", fx.inst(id).Attempts)}})
		if r.Err != nil {
			t.Fatal(r.Err)
		}
		if got := fx.inst(id).State; got != wantState {
			t.Fatalf("after attempt %d: %s, want %s", fx.inst(id).Attempts, got, wantState)
		}
		if wantState == model.StateRetrying {
			fx.now += 2000
			fx.do(CmdFire, "", Fire{Instances: []uint64{id}})
		}
	}
	fail(model.StateRetrying)
	fail(model.StateFailed)
	if !alertPending(t, fx.f, id) {
		t.Fatal("the failure is not waiting for its alerts")
	}
	fx.do(CmdAlerted, "", Alerted{ID: id, Message: "notified"})

	s := fx.mustRerun(id)
	if s.ID != model.FormatID(id) || s.State != model.StateReady {
		t.Fatalf("rerun answered %+v, want %s READY", s, model.FormatID(id))
	}
	in := fx.inst(id)
	if in.Attempts != 2 || len(in.AttemptList) != 2 || in.LastError != "" || !in.FinishedAt.IsZero() || !in.StartedAt.IsZero() {
		t.Fatalf("after the re-run: %+v", in)
	}
	if busy, _ := fx.f.SlotsBusy("job"); busy != 1 {
		t.Errorf("%d slots busy, want 1: a re-run takes a slot", busy)
	}
	ev := fx.events(id, "rerun")
	if len(ev) != 1 || ev[0].Actor != "tester" || !strings.Contains(ev[0].Message, "re-run by tester; it had ended FAILED") ||
		!strings.Contains(ev[0].Message, "after 2 attempts: exit 3") {
		t.Fatalf("rerun events %+v", ev)
	}
	fired := fx.events(id, "fired")
	if len(fired) != 2 || !fired[0].Time.Equal(firstFired.Time) || !strings.HasPrefix(fired[0].Message, "late by") || fired[1].Message != "re-run" {
		t.Errorf("fired events %+v, want the first firing kept and the re-run's", fired)
	}

	fail(model.StateRetrying) // attempt 3: the first of the new chain, so one retry is left
	fail(model.StateFailed)   // attempt 4
	in = fx.inst(id)
	if in.Attempts != 4 || len(in.AttemptList) != 4 {
		t.Fatalf("attempts %d (%d listed), want 4", in.Attempts, len(in.AttemptList))
	}
	for i, a := range in.AttemptList {
		if a.Number != i+1 || a.Output != fmt.Sprint("out ", i+1) {
			t.Errorf("attempt %d: number %d output %q", i+1, a.Number, a.Output)
		}
	}
	if !alertPending(t, fx.f, id) {
		t.Error("failing again does not wait for its alerts again")
	}
	if busy, _ := fx.f.SlotsBusy("job"); busy != 0 {
		t.Errorf("%d slots busy after it failed again, want 0", busy)
	}
	checkFinishedIndex(t, fx.f)
}

// TestFSM_RerunRefusals: a lone re-run of an unknown instance, of one
// that has not finished or whose task is gone is refused, by Precheck as
// by apply, naming why, and nothing is written.
func TestFSM_RerunRefusals(t *testing.T) {
	fx := newPolicyFixture(t, ProtoVersion)
	fx.mustPut(eventTask("job", model.Policy{MaxConcurrency: 5}))
	fx.mustPut(eventTask("gone", model.Policy{}))
	ready := fx.trigger("job")
	running := fx.trigger("job")
	fx.do(CmdLease, "", Lease{Executor: "e1", IDs: []uint64{running}, LeaseMs: 10_000})
	orphan := fx.trigger("gone")
	fx.run(orphan, true, "")
	writeResult(t, fx.do(CmdDeleteTask, "", TaskRef{Name: "gone"}))
	sr, err := DecodeSubmitResult(fx.a.apply(&Command{Type: CmdSubmit, Now: fx.now, Node: "n1",
		Body: EncodeSubmit(&Submit{Task: "job", Items: []SubmitItem{{DelayMs: 3_600_000}}})}))
	if err != nil {
		t.Fatal(err)
	}
	pending, _ := model.ParseID(sr.Instances[0].ID)

	tests := []struct {
		name      string
		body      Rerun
		code      string
		field     string
		inMessage string
	}{
		{"unknown instance", Rerun{IDs: []uint64{1 << 40}}, model.CodeNotFound, "id", "not found"},
		{"READY", Rerun{IDs: []uint64{ready}}, model.CodePrecondition, "state", "is READY: only a finished instance"},
		{"RUNNING", Rerun{IDs: []uint64{running}}, model.CodePrecondition, "state", "is RUNNING"},
		{"SCHEDULED", Rerun{IDs: []uint64{pending}}, model.CodePrecondition, "state", "is SCHEDULED"},
		{"task gone", Rerun{IDs: []uint64{orphan}}, model.CodePrecondition, "task", "task gone no longer exists"},
		{"two ids", Rerun{IDs: []uint64{ready, running}}, model.CodeInvalid, "ids", "one instance"},
		{"states without a task", Rerun{IDs: []uint64{ready}, States: []string{model.StateFailed}}, model.CodeInvalid, "states", ""},
		{"a task's re-run of an unfinished state", Rerun{Task: "job", IDs: []uint64{ready}, States: []string{model.StateReady}}, model.CodeInvalid, "states[0]", "not a finished state"},
		{"a task's re-run without states", Rerun{Task: "job", IDs: []uint64{ready}}, model.CodeInvalid, "states", ""},
		{"ids out of order", Rerun{Task: "job", IDs: []uint64{running, ready}, States: []string{model.StateFailed}}, model.CodeInvalid, "ids[1]", "increasing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := cmd(t, CmdRerun, "", fx.now+10, tt.body)
			pre := fx.f.Precheck(c)
			before := stateDigest(t, fx.f)
			r := fx.do(CmdRerun, "", tt.body)
			for what, got := range map[string]*Result{"precheck": pre, "apply": r} {
				if got == nil || got.Err == nil || got.Err.Code != tt.code || got.Err.Field != tt.field || !strings.Contains(got.Err.Message, tt.inMessage) {
					t.Errorf("%s answered %+v, want %s naming %q saying %q", what, got, tt.code, tt.field, tt.inMessage)
				}
			}
			if stateDigest(t, fx.f) != before {
				t.Error("a refused re-run changed the state")
			}
		})
	}
}

// TestFSM_RerunAdmission: a re-run is admitted as a fresh fire of it
// is: a free slot (READY), the overlap queue (BLOCKED, started when a
// slot frees, never dropped by maxQueued), overlap skip (SKIPPED, in the
// finished index), approval before_run (asked again); the slots and the
// finished index stay exact.
func TestFSM_RerunAdmission(t *testing.T) {
	tests := []struct {
		name   string
		policy model.Policy
		busy   bool // another instance holds the only slot
		want   string
	}{
		{"free slot", model.Policy{MaxConcurrency: 1}, false, model.StateReady},
		{"queue", model.Policy{MaxConcurrency: 1, Overlap: "queue", MaxQueued: 1}, true, model.StateBlocked},
		{"skip", model.Policy{MaxConcurrency: 1, Overlap: "skip"}, true, model.StateSkipped},
		{"approval", model.Policy{Approval: "before_run"}, false, model.StateWaitingApproval},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fx := newPolicyFixture(t, ProtoVersion)
			fx.mustPut(eventTask("job", tt.policy))
			id := fx.trigger("job")
			if tt.policy.Approval != "" {
				fx.do(CmdDecide, "", Decide{ID: id, Action: DecideApprove})
			}
			fx.run(id, false, "")
			var other uint64
			if tt.busy {
				other = fx.trigger("job")
				fx.trigger("job") // fills the queue (maxQueued 1)
			}
			if s := fx.mustRerun(id); s.State != tt.want {
				t.Fatalf("re-run: %s, want %s (events %+v)", s.State, tt.want, fx.inst(id).Events)
			}
			if err := auditSlots(fx.f); err != nil {
				t.Fatal(err)
			}
			if got := indexed(checkFinishedIndex(t, fx.f), id); got != (tt.want == model.StateSkipped) {
				t.Errorf("in the finished index: %v", got)
			}
			if tt.want == model.StateBlocked {
				fx.run(other, true, "") // frees the slot: the oldest queued runs
				if got := fx.inst(id).State; got != model.StateReady {
					t.Errorf("after the slot freed: %s, want READY", got)
				}
			}
			if err := auditSlots(fx.f); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestFSM_RerunReleasesDependsOn: a scheduled instance waiting for its
// upstream's success for a date that failed runs once the upstream's
// instance of that date is re-run and succeeds; with onUpstreamFailure
// skip, the re-run withdraws the date's failure, so a downstream fired
// afterwards waits for the re-run rather than being skipped.
func TestFSM_RerunReleasesDependsOn(t *testing.T) {
	for _, onFail := range []string{"wait", "skip"} {
		t.Run(onFail, func(t *testing.T) {
			fx := newPolicyFixture(t, ProtoVersion)
			fx.mustPut(cronTask("sync", "0 1 * * *"))
			down := depTask("report", "sync")
			down.Policy.OnUpstreamFailure = onFail
			fx.mustPut(down)
			var rep uint64
			if onFail == "wait" {
				rep = fx.fire("report", "2026-11-30")
			}
			up := fx.fire("sync", "2026-11-30")
			fx.run(up, false, "")
			fx.now += 2000 // past the fire time the fixture gives
			if onFail == "skip" {
				fx.mustRerun(up)
				rep = fx.fire("report", "2026-11-30")
			} else {
				if got := fx.inst(rep).State; got != model.StateBlocked {
					t.Fatalf("report is %s after its upstream failed, want BLOCKED", got)
				}
				fx.mustRerun(up)
			}
			if got := fx.inst(rep).State; got != model.StateBlocked {
				t.Fatalf("report is %s while the re-run runs, want BLOCKED", got)
			}
			fx.run(up, true, "")
			if got := fx.inst(rep).State; got != model.StateReady {
				t.Fatalf("report is %s after the re-run succeeded, want READY (events %+v)", got, fx.inst(rep).Events)
			}
			// A re-run of the downstream itself checks its dependsOn again:
			// met now.
			fx.run(rep, false, "")
			fx.now += 2000
			if s := fx.mustRerun(rep); s.State != model.StateReady {
				t.Errorf("the downstream's re-run: %s, want READY", s.State)
			}
		})
	}
}

// TestFSM_RerunTask: a task's re-run re-runs the planned instances still
// of the task and in a selected state, passes over the others, and a
// retry of its request answers the first result without re-running
// anything again; a plan nothing of which qualifies any more is answered
// by Precheck with nothing re-run.
func TestFSM_RerunTask(t *testing.T) {
	fx := newPolicyFixture(t, ProtoVersion)
	fx.mustPut(eventTask("job", model.Policy{MaxConcurrency: 10}))
	fx.mustPut(eventTask("other", model.Policy{}))
	failed1, failed2, ok, running := fx.trigger("job"), fx.trigger("job"), fx.trigger("job"), fx.trigger("job")
	fx.run(failed1, false, "")
	fx.run(failed2, false, "")
	fx.run(ok, true, "")
	fx.do(CmdLease, "", Lease{Executor: "e1", IDs: []uint64{running}, LeaseMs: 10_000})
	foreign := fx.trigger("other")
	fx.run(foreign, false, "")
	body := Rerun{Task: "job", IDs: []uint64{failed1, failed2, ok, running, foreign}, States: []string{model.StateFailed}}

	var res model.RerunResult
	if err := fx.do(CmdRerun, "req-1", body).Decode(&res); err != nil {
		t.Fatal(err)
	}
	if res.Rerun != 2 || len(res.Instances) != 2 || res.Instances[0].ID != model.FormatID(failed1) || res.Instances[1].ID != model.FormatID(failed2) ||
		res.Instances[0].State != model.StateReady {
		t.Fatalf("answer %+v, want %s and %s READY", res, model.FormatID(failed1), model.FormatID(failed2))
	}
	for id, want := range map[uint64]string{ok: model.StateSuccess, running: model.StateRunning, foreign: model.StateFailed} {
		if got := fx.inst(id).State; got != want {
			t.Errorf("%s: %s, want %s (passed over)", model.FormatID(id), got, want)
		}
	}
	// The same request again: the first answer, nothing re-run again.
	fx.run(failed1, false, "")
	before := stateDigest(t, fx.f)
	var again model.RerunResult
	if err := fx.do(CmdRerun, "req-1", body).Decode(&again); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(again) != fmt.Sprint(res) || stateDigest(t, fx.f) != before {
		t.Errorf("the retried request answered %+v and changed the state: want %+v, nothing changed", again, res)
	}
	if n := len(fx.events(failed1, "rerun")); n != 1 {
		t.Errorf("%d rerun events, want 1", n)
	}
	// Nothing qualifies any more: answered before a log entry is spent.
	stale := Rerun{Task: "job", IDs: []uint64{ok, running}, States: []string{model.StateFailed}}
	pre := fx.f.Precheck(cmd(t, CmdRerun, "", fx.now, stale))
	if pre == nil || pre.Err != nil || pre.Decode(&again) != nil || again.Rerun != 0 || again.Instances == nil {
		t.Errorf("Precheck answered %+v, want nothing re-run", pre)
	}
}

// TestFSM_RerunNotDueYet: a delayed instance canceled before its time
// and re-run waits for its time again (SCHEDULED, due, counted pending)
// and fires then.
func TestFSM_RerunNotDueYet(t *testing.T) {
	fx := newPolicyFixture(t, ProtoVersion)
	fx.mustPut(eventTask("job", model.Policy{}))
	sr, err := DecodeSubmitResult(fx.a.apply(&Command{Type: CmdSubmit, Now: fx.now, Node: "n1",
		Body: EncodeSubmit(&Submit{Task: "job", Items: []SubmitItem{{DelayMs: 3_600_000}}})}))
	if err != nil {
		t.Fatal(err)
	}
	id, _ := model.ParseID(sr.Instances[0].ID)
	writeResult(t, fx.do(CmdDecide, "", Decide{ID: id, Action: DecideCancel}))
	if s := fx.mustRerun(id); s.State != model.StateScheduled {
		t.Fatalf("re-run: %s, want SCHEDULED", s.State)
	}
	if n := fx.f.Pending(); n != 1 {
		t.Errorf("%d pending, want 1", n)
	}
	var due []uint64
	if err := fx.f.ScanDue(0, fx.now+3_700_000, func(id uint64, _ int64) { due = append(due, id) }); err != nil || len(due) != 1 || due[0] != id {
		t.Fatalf("due %v %v, want the instance", due, err)
	}
	fx.now += 3_600_000
	fx.do(CmdFire, "", Fire{Instances: []uint64{id}})
	if got := fx.inst(id).State; got != model.StateReady {
		t.Errorf("at its time: %s, want READY", got)
	}
}

// TestFSM_RerunAfterStop: an instance whose attempt an operator stopped
// is not re-run while the stopped process may still run (HoldMs after
// the stop, unless its executor reported its end since): a lone re-run
// is refused saying until when, a task's re-run passes it over; later it
// is re-run.
func TestFSM_RerunAfterStop(t *testing.T) {
	fx := newPolicyFixture(t, ProtoVersion)
	fx.mustPut(eventTask("job", model.Policy{MaxConcurrency: 5}))
	stop := func(report bool) uint64 {
		t.Helper()
		id := fx.trigger("job")
		fx.do(CmdLease, "", Lease{Executor: "e1", IDs: []uint64{id}, LeaseMs: 10_000})
		writeResult(t, fx.do(CmdDecide, "", Decide{ID: id, Action: DecideTerminate}))
		if report { // the executor's report after the stop: the process is gone
			fx.do(CmdComplete, "", Complete{ID: id, Attempt: 1, Report: model.CompleteRequest{Executor: "e1", ExitCode: -1, Output: "killed"}})
		}
		return id
	}
	held, reported := stop(false), stop(true)
	stoppedAt := fx.inst(held).AttemptList[0].EndedAt.Millis()
	const hold = 16_000
	r := fx.do(CmdRerun, "", Rerun{IDs: []uint64{held}, HoldMs: hold})
	if r.Err == nil || r.Err.Code != model.CodePrecondition || !strings.Contains(r.Err.Message, "may run until "+model.UnixMilli(stoppedAt+hold).Format(model.TimeLayout)) {
		t.Fatalf("re-run within the hold: %+v, want refused saying until when", r.Err)
	}
	var res model.RerunResult
	if err := fx.do(CmdRerun, "", Rerun{Task: "job", IDs: []uint64{held, reported}, States: []string{model.StateTerminated}, HoldMs: hold}).Decode(&res); err != nil {
		t.Fatal(err)
	}
	if res.Rerun != 1 || res.Instances[0].ID != model.FormatID(reported) {
		t.Fatalf("a task's re-run within the hold: %+v, want only the reported one re-run", res)
	}
	if got := fx.inst(held).State; got != model.StateTerminated {
		t.Fatalf("the held instance is %s", got)
	}
	fx.now = stoppedAt + hold
	if s := fx.mustRerun(held); s.State != model.StateReady {
		t.Fatalf("re-run after the hold: %s", s.State)
	}
}

// TestFSM_RerunOnSuccess: a re-run that succeeds creates its task's
// onSuccess instances, as any success does.
func TestFSM_RerunOnSuccess(t *testing.T) {
	fx := newPolicyFixture(t, ProtoVersion)
	fx.mustPut(eventTask("load", model.Policy{}))
	fx.mustPut(eventTask("extract", model.Policy{OnSuccess: []model.Chain{{Task: "load"}}}))
	id := fx.trigger("extract")
	fx.run(id, false, "")
	if n := len(fx.instancesOf("load")); n != 0 {
		t.Fatalf("%d load instances after a failure", n)
	}
	fx.mustRerun(id)
	fx.run(id, true, "")
	loads := fx.instancesOf("load")
	if len(loads) != 1 || loads[0].Params[model.ParamParentInstance] != model.FormatID(id) {
		t.Fatalf("load instances %+v, want one chained from the re-run", loads)
	}
}
