package fsm

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/ax-scheduler/ax/model"
)

// succeed leases id and reports its attempt successful with result res
// (none if "").
func (fx *execFixture) succeed(id uint64, res string) {
	fx.t.Helper()
	fx.lease(id)
	rep := model.CompleteRequest{Executor: "e1", Success: true}
	if res != "" {
		rep.Result = json.RawMessage(res)
	}
	fx.mustDo(CmdComplete, Complete{ID: id, Attempt: fx.inst(id).Attempts, Report: rep})
}

// jobOf leases id and returns its job.
func (fx *execFixture) jobOf(id uint64) model.Job {
	fx.t.Helper()
	var lr LeaseResult
	if err := fx.do(CmdLease, Lease{Executor: "e1", IDs: []uint64{id}, LeaseMs: 10_000}).Decode(&lr); err != nil {
		fx.t.Fatal(err)
	}
	jobs, err := fx.f.Jobs(lr.Refs())
	if err != nil || len(jobs) != 1 {
		fx.t.Fatalf("jobs %+v, %v; want one", jobs, err)
	}
	return jobs[0]
}

// TestFSM_Result: a successful attempt's result is kept with the instance
// (GET .../result reads it), replaced by a re-run's success or removed
// when that published none, and pruned with the instance; an instance
// without one says why.
func TestFSM_Result(t *testing.T) {
	fx := newExecFixture(t, model.Policy{MaxRetries: 1})
	id := fx.trigger()
	if _, err := fx.f.InstanceResult(id); err == nil || !strings.Contains(err.Error(), "has no result: it is READY; only a successful attempt publishes one") {
		t.Fatalf("result of a READY instance: %v", err)
	}
	fx.succeed(id, `{"rows":42}`)
	got, err := fx.f.InstanceResult(id)
	if err != nil || string(got.Result) != `{"rows":42}` || got.Attempt != 1 || got.Task != "job" || got.InstanceID != model.FormatID(id) {
		t.Fatalf("result: %+v, %v", got, err)
	}
	// A re-run that publishes another result replaces it; one that
	// publishes none removes it.
	fx.mustDo(CmdRerun, Rerun{IDs: []uint64{id}})
	fx.succeed(id, `"second"`)
	if got, err := fx.f.InstanceResult(id); err != nil || string(got.Result) != `"second"` || got.Attempt != 2 {
		t.Fatalf("result after a re-run: %+v, %v", got, err)
	}
	fx.mustDo(CmdRerun, Rerun{IDs: []uint64{id}})
	fx.succeed(id, "")
	if _, err := fx.f.InstanceResult(id); err == nil || !strings.Contains(err.Error(), "it is SUCCESS, and its successful attempt published none") {
		t.Fatalf("result after a re-run without one: %v", err)
	}
	fx.mustDo(CmdRerun, Rerun{IDs: []uint64{id}})
	fx.succeed(id, `[1]`)
	fx.mustDo(CmdPrune, Prune{IDs: []uint64{id}})
	if _, err := fx.f.InstanceResult(id); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Fatalf("result of a pruned instance: %v", err)
	}
	var dump strings.Builder
	if err := fx.f.Dump(&dump); err != nil {
		t.Fatal(err)
	}
	if _, after, _ := strings.Cut(dump.String(), "[results]\n"); after != "" && !strings.HasPrefix(after, "[") {
		t.Errorf("results left after the prune: %.200s", after)
	}
}

// TestFSM_ResultRefused: the state machine refuses a report whose result
// is not JSON, too big, or comes with a failure, as the API does.
func TestFSM_ResultRefused(t *testing.T) {
	fx := newExecFixture(t, model.Policy{})
	id := fx.trigger()
	fx.lease(id)
	for _, tt := range []struct {
		rep  model.CompleteRequest
		want string
	}{
		{model.CompleteRequest{Executor: "e1", Success: true, Result: json.RawMessage(`{x}`)}, "report.result: not JSON"},
		{model.CompleteRequest{Executor: "e1", Success: true, Result: json.RawMessage(`"` + strings.Repeat("x", model.MaxResult) + `"`)}, "over the limit"},
		{model.CompleteRequest{Executor: "e1", ExitCode: 1, Result: json.RawMessage(`1`)}, "only a successful attempt publishes a result"},
	} {
		fx.now += 10
		c := &Command{Type: CmdCompleteBatch, Actor: "executor:e1", Now: fx.now, Node: "n1",
			Body: EncodeCompleteBatch([]Complete{{ID: id, Attempt: 1, Report: tt.rep}})}
		r := fx.a.apply(c)
		if r.Err == nil || !strings.Contains(r.Err.Field+": "+r.Err.Message, tt.want) {
			t.Errorf("got %v, want refused with %q", r.Err, tt.want)
		}
	}
	if st := fx.inst(id).State; st != model.StateRunning {
		t.Errorf("state %s after refused reports, want RUNNING", st)
	}
}

// TestFSM_ResultBeforeProto8: below protocol 8 a result is not kept (the
// leader drops it from reports; a replayed one changes nothing).
func TestFSM_ResultBeforeProto8(t *testing.T) {
	fx := &execFixture{t: t, f: newTestFSM(t), now: t0}
	fx.a = &applier{t: t, f: fx.f}
	fx.mustDo(CmdSetProto, SetProto{Proto: 7})
	fx.putTask("job", model.Policy{})
	id := fx.trigger()
	fx.succeed(id, `{"rows":42}`)
	if _, err := fx.f.InstanceResult(id); err == nil {
		t.Fatal("a result was kept at protocol 7")
	}
	task := model.Task{Name: "hook", Trigger: model.Trigger{Type: model.TriggerEvent},
		Action: model.Action{Type: model.ActionHTTP, URL: "https://example.com/", ResultFrom: "/data"}}
	if r := fx.do(CmdPutTask, PutTask{Task: task}); r.Err == nil || r.Err.Field != "action.resultFrom" || r.Err.Code != model.CodePrecondition {
		t.Errorf("resultFrom at protocol 7: %v, want refused", r.Err)
	}
}

// TestFSM_JobsUpstream: the job of an onSuccess instance carries its
// parent's result, the job of a dependsOn instance each upstream task's
// result for its date; an upstream without a result is left out.
func TestFSM_JobsUpstream(t *testing.T) {
	fx := newExecFixture(t, model.Policy{OnSuccess: []model.Chain{{Task: "load"}}})
	fx.putTask("load", model.Policy{})
	parent := fx.trigger()
	fx.succeed(parent, `{"rows":42}`)
	var child uint64
	list, err := fx.f.ListInstances(model.InstanceFilter{Task: "load"})
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range list.Instances {
		child, _ = model.ParseID(in.ID)
	}
	if child == 0 {
		t.Fatal("onSuccess created no instance of load")
	}
	if got := string(fx.jobOf(child).Upstream["job"]); got != `{"rows":42}` {
		t.Errorf("onSuccess job's upstream result: %q, want the parent's", got)
	}

	// dependsOn: scheduled instances of cron tasks with a date.
	cron := model.Trigger{Type: model.TriggerCron, Expression: "0 2 * * *"}
	shell := model.Action{Type: model.ActionShell, Command: "true"}
	for _, tk := range []model.Task{
		{Name: "a", Trigger: cron, Action: shell},
		{Name: "b", Trigger: cron, Action: shell},
		{Name: "c", Trigger: cron, Action: shell, Policy: model.Policy{DependsOn: []string{"a", "b"}}},
	} {
		fx.mustDo(CmdPutTask, PutTask{Task: tk})
	}
	fire := func(task, date string) uint64 {
		var fr FireResult
		if err := fx.mustDo(CmdFire, Fire{Tasks: []TaskFire{{Task: task, Version: 1, At: fx.now + 1000, Key: task + date, Date: date}}}).Decode(&fr); err != nil {
			t.Fatal(err)
		}
		if len(fr.Created) != 1 {
			t.Fatalf("fire %s %s: %+v", task, date, fr)
		}
		id, _ := model.ParseID(fr.Created[0])
		return id
	}
	c := fire("c", "2026-12-01")
	fx.succeed(fire("a", "2026-12-01"), `{"file":"a.csv"}`)
	fx.succeed(fire("a", "2026-11-30"), `{"file":"old.csv"}`) // another date
	fx.succeed(fire("b", "2026-12-01"), "")
	up := fx.jobOf(c).Upstream
	if len(up) != 1 || string(up["a"]) != `{"file":"a.csv"}` {
		t.Errorf("dependsOn job's upstream: %s, want a's result for 2026-12-01 only", up)
	}
}
