package fsm

import (
	"strings"
	"testing"

	"github.com/ax-scheduler/ax/model"
)

// TestFSM_OverlapReplace: with every slot busy, a fire ends the oldest
// slot holder as TERMINATED (its running attempt recorded terminated,
// "replaced by" the new one) and takes its slot; a delayed submission
// and a re-run queue instead; a later report of the replaced attempt
// changes nothing.
func TestFSM_OverlapReplace(t *testing.T) {
	fx := newExecFixture(t, model.Policy{MaxConcurrency: 2, Overlap: model.OverlapReplace})
	a, b := fx.trigger(), fx.trigger()
	fx.lease(a)
	fx.beat(a)
	if got := fx.states(a, b); got != "RUNNING READY" {
		t.Fatalf("before: %s", got)
	}
	c := fx.trigger()
	if got := fx.states(a, b, c); got != "TERMINATED READY READY" {
		t.Fatalf("after the third fire: %s, want the oldest (running) replaced", got)
	}
	in := fx.inst(a)
	want := "replaced by " + model.FormatID(c) + " (overlap=replace)"
	if last := in.AttemptList[len(in.AttemptList)-1]; last.Outcome != model.OutcomeTerminated || last.Error != want {
		t.Fatalf("replaced attempt %+v, want terminated %q", last, want)
	}
	if !hasEvent(fx.inst(a).Events, "replaced", want) || !hasEvent(fx.inst(c).Events, "replacing", model.FormatID(a)) {
		t.Fatalf("events: a %+v, c %+v", fx.inst(a).Events, fx.inst(c).Events)
	}
	// The replaced attempt's report, once its process stopped, ends
	// nothing: it only adds its output.
	fx.do(CmdComplete, Complete{ID: a, Attempt: 1, Report: model.CompleteRequest{Executor: "e1", Output: "bye"}})
	if got := fx.states(a, b, c); got != "TERMINATED READY READY" {
		t.Fatalf("after the replaced attempt's report: %s", got)
	}
	// A not-yet-started holder (READY) is replaced the same way.
	d := fx.trigger()
	if got := fx.states(b, c, d); got != "TERMINATED READY READY" {
		t.Fatalf("after the fourth fire: %s", got)
	}
	// A re-run of a replaced (finished) instance queues: work asked for
	// by name does not end another.
	var s model.Submitted
	if err := fx.do(CmdRerun, Rerun{IDs: []uint64{a}}).Decode(&s); err != nil {
		t.Fatal(err)
	}
	if got := fx.states(a, c, d); got != "BLOCKED READY READY" {
		t.Fatalf("after a re-run: %s, want the re-run queued", got)
	}
	// Slots are exact: two busy, one queued.
	busy, err := fx.f.SlotsBusy("job")
	if err != nil || busy != 2 {
		t.Fatalf("slots busy %d %v, want 2", busy, err)
	}
}

// TestFSM_OverlapReplaceNeedsProto8: put_task refuses overlap replace
// and Quartz's cron extensions below protocol 8, naming the field;
// maxQueued does not go with replace.
func TestFSM_OverlapReplaceNeedsProto8(t *testing.T) {
	fx := newPolicyFixture(t, 7)
	task := eventTask("job", model.Policy{Overlap: model.OverlapReplace})
	r := fx.put(task)
	if r.Err == nil || r.Err.Field != "policy.overlap" || !strings.Contains(r.Err.Message, "needs protocol 8") {
		t.Fatalf("put at protocol 7: %v", r.Err)
	}
	quartz := cronTask("month-end", "0 18 LW * ?")
	if r := fx.put(quartz); r.Err == nil || r.Err.Field != "trigger.expression" || !strings.Contains(r.Err.Message, "needs protocol 8") {
		t.Fatalf("a Quartz expression at protocol 7: %v", r.Err)
	}
	if r := newPolicyFixture(t, ProtoVersion).put(quartz); r.Err != nil {
		t.Fatalf("a Quartz expression at protocol 8: %v", r.Err)
	}
	task.Policy.MaxQueued = 5
	if err := task.Validate(); err == nil || !strings.Contains(err.Error(), "policy.maxQueued") {
		t.Fatalf("maxQueued with replace: %v", err)
	}
}

func hasEvent(evs []model.Event, typ, sub string) bool {
	for _, e := range evs {
		if e.Type == typ && strings.Contains(e.Message, sub) {
			return true
		}
	}
	return false
}
