package fsm

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/ax-scheduler/ax/model"
)

// policyFixture is a state machine at a given protocol with helpers to
// fire, run and inspect instances of several tasks.
type policyFixture struct {
	t   *testing.T
	f   *FSM
	a   *applier
	now int64
}

func newPolicyFixture(t *testing.T, proto int) *policyFixture {
	t.Helper()
	fx := &policyFixture{t: t, f: newTestFSM(t), now: t0}
	fx.a = &applier{t: t, f: fx.f}
	if proto > 1 {
		writeResult(t, fx.a.apply(cmd(t, CmdSetProto, "", t0, SetProto{Proto: proto})))
	}
	return fx
}

func (fx *policyFixture) do(typ CommandType, reqID string, body any) *Result {
	fx.t.Helper()
	fx.now += 10
	c := cmd(fx.t, typ, reqID, fx.now, body)
	c.Node = "n1"
	return fx.a.apply(c)
}

func (fx *policyFixture) put(task model.Task) *Result {
	fx.t.Helper()
	return fx.do(CmdPutTask, "", PutTask{Task: task})
}

func (fx *policyFixture) mustPut(task model.Task) {
	fx.t.Helper()
	if r := fx.put(task); r.Err != nil {
		fx.t.Fatalf("put %s: %v", task.Name, r.Err)
	}
}

func (fx *policyFixture) fire(task, date string) uint64 {
	fx.t.Helper()
	tk, err := fx.f.GetTask(task)
	if err != nil {
		fx.t.Fatal(err)
	}
	at := fx.now + 1000
	var fr FireResult
	if err := fx.do(CmdFire, "", Fire{Tasks: []TaskFire{{Task: task, Version: tk.Version, At: at, Key: fmt.Sprint(task, "@", at), Date: date}}}).Decode(&fr); err != nil || len(fr.Created) != 1 {
		fx.t.Fatalf("fire %s: %+v %v", task, fr, err)
	}
	id, _ := model.ParseID(fr.Created[0])
	return id
}

func (fx *policyFixture) trigger(task string) uint64 {
	fx.t.Helper()
	var s model.Submitted
	if err := fx.do(CmdTrigger, "", Trigger{Task: task}).Decode(&s); err != nil {
		fx.t.Fatal(err)
	}
	id, _ := model.ParseID(s.ID)
	return id
}

func (fx *policyFixture) inst(id uint64) *model.Instance {
	fx.t.Helper()
	in, err := fx.f.GetInstance(id)
	if err != nil {
		fx.t.Fatal(err)
	}
	return in
}

// run leases id and completes its attempt; reqID names the complete.
func (fx *policyFixture) run(id uint64, ok bool, reqID string) *Result {
	fx.t.Helper()
	fx.do(CmdLease, "", Lease{Executor: "e1", IDs: []uint64{id}, LeaseMs: 10_000})
	return fx.complete(id, ok, reqID)
}

func (fx *policyFixture) complete(id uint64, ok bool, reqID string) *Result {
	fx.t.Helper()
	return fx.do(CmdComplete, reqID, Complete{ID: id, Attempt: fx.inst(id).Attempts,
		Report: model.CompleteRequest{Executor: "e1", Success: ok, ExitCode: map[bool]int{true: 0, false: 3}[ok], Error: "exit 3"}})
}

func (fx *policyFixture) event(id uint64, typ string) (model.Event, bool) {
	for _, e := range fx.inst(id).Events {
		if e.Type == typ {
			return e, true
		}
	}
	return model.Event{}, false
}

// instancesOf returns the task's instances, oldest first.
func (fx *policyFixture) instancesOf(task string) []model.Instance {
	fx.t.Helper()
	l, err := fx.f.ListInstances(model.InstanceFilter{Task: task, Limit: 1000})
	if err != nil {
		fx.t.Fatal(err)
	}
	out := l.Instances
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

func eventTask(name string, p model.Policy) model.Task {
	return model.Task{Name: name, Trigger: model.Trigger{Type: model.TriggerEvent},
		Action: model.Action{Type: model.ActionShell, Command: "true"}, Policy: p}
}

func depTask(name string, deps ...string) model.Task {
	t := cronTask(name, "0 2 * * *")
	t.Policy.DependsOn = deps
	return t
}

func chainTask(name string, next ...string) model.Task {
	var p model.Policy
	for _, n := range next {
		p.OnSuccess = append(p.OnSuccess, model.Chain{Task: n})
	}
	return eventTask(name, p)
}

// TestFSM_PolicyCycles: a put_task that would close a dependsOn or an
// onSuccess cycle through the stored tasks is refused, naming the cycle,
// in apply and in Precheck, and writes nothing.
func TestFSM_PolicyCycles(t *testing.T) {
	tests := []struct {
		name   string
		stored []model.Task
		put    model.Task
		field  string
		msg    string
	}{
		{"self dependency", nil, depTask("a", "a"), "policy.dependsOn", "dependsOn cycle: a -> a"},
		{"a <-> b", []model.Task{depTask("b", "a")}, depTask("a", "b"), "policy.dependsOn", "dependsOn cycle: a -> b -> a"},
		{"a -> b -> c -> a", []model.Task{depTask("b", "c"), depTask("c", "x", "a")}, depTask("a", "b"),
			"policy.dependsOn", "dependsOn cycle: a -> b -> c -> a"},
		{"update closes it", []model.Task{depTask("a"), depTask("b", "a")}, depTask("a", "z", "b"), "policy.dependsOn", "dependsOn cycle: a -> b -> a"},
		{"diamond is fine", []model.Task{depTask("b", "d"), depTask("c", "d"), depTask("d")}, depTask("a", "b", "c"), "", ""},
		{"missing upstream is fine", nil, depTask("a", "nope"), "", ""},
		{"onSuccess self", nil, chainTask("a", "a"), "policy.onSuccess", "onSuccess cycle: a -> a"},
		{"onSuccess a -> b -> a", []model.Task{chainTask("b", "a")}, chainTask("a", "c", "b"), "policy.onSuccess", "onSuccess cycle: a -> b -> a"},
		{"onSuccess chain is fine", []model.Task{chainTask("b", "c"), chainTask("c")}, chainTask("a", "b"), "", ""},
		{"onSuccess and dependsOn are apart", []model.Task{depTask("b", "a")}, chainTask("a", "b"), "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fx := newPolicyFixture(t, ProtoVersion)
			for _, s := range tt.stored {
				fx.mustPut(s)
			}
			before := dump(t, fx.f)
			c := cmd(t, CmdPutTask, "", fx.now+10, PutTask{Task: tt.put})
			pre := fx.f.Precheck(c)
			res := fx.put(tt.put)
			if tt.field == "" {
				if pre != nil || res.Err != nil {
					t.Fatalf("refused: precheck %+v, apply %v", pre, res.Err)
				}
				return
			}
			for what, r := range map[string]*Result{"precheck": pre, "apply": res} {
				if r == nil || r.Err == nil || r.Err.Code != model.CodeInvalid || r.Err.Field != tt.field || r.Err.Message != tt.msg {
					t.Errorf("%s: got %+v, want invalid_argument %s %q", what, r, tt.field, tt.msg)
				}
			}
			after := dump(t, fx.f)
			// Only the applied index and the time mark move.
			if strip(before) != strip(after) {
				t.Errorf("a refused put wrote something")
			}
		})
	}
}

// strip drops the meta lines that move with every entry.
func strip(d string) string {
	var out []string
	for _, l := range strings.Split(d, "\n") {
		if !strings.HasPrefix(l, fmt.Sprintf("%x=", keyTimeHWM)) && !strings.HasPrefix(l, fmt.Sprintf("%x=", keyReqClock)) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestFSM_Proto4Gate: before the cluster reaches protocol 4, a task using
// a protocol-4 field is refused (failed_precondition naming it) by
// Precheck and by apply, and a dependsOn cycle is refused by Precheck
// only (apply decides as protocol 3 replicas did).
func TestFSM_Proto4Gate(t *testing.T) {
	fields := map[string]model.Policy{
		"policy.onUpstreamFailure": {DependsOn: []string{"x"}, OnUpstreamFailure: "skip"},
		"policy.onSuccess":         {OnSuccess: []model.Chain{{Task: "x"}}},
		"policy.maxQueued":         {MaxQueued: 5},
		"policy.timeout":           {Timeout: model.NoTimeout},
	}
	for field, p := range fields {
		t.Run(field, func(t *testing.T) {
			fx := newPolicyFixture(t, 3)
			task := eventTask("a", p)
			pre := fx.f.Precheck(cmd(t, CmdPutTask, "", fx.now, PutTask{Task: task}))
			res := fx.put(task)
			for what, r := range map[string]*Result{"precheck": pre, "apply": res} {
				if r == nil || r.Err == nil || r.Err.Code != model.CodePrecondition || r.Err.Field != field ||
					!strings.Contains(r.Err.Message, "upgrade every member") {
					t.Errorf("%s at protocol 3: got %+v, want failed_precondition on %s", what, r, field)
				}
			}
			writeResult(t, fx.do(CmdSetProto, "", SetProto{Proto: 4}))
			fx.mustPut(task)
		})
	}
	fx := newPolicyFixture(t, 3)
	self := depTask("a", "a")
	if r := fx.f.Precheck(cmd(t, CmdPutTask, "", fx.now, PutTask{Task: self})); r == nil || r.Err == nil {
		t.Errorf("Precheck at protocol 3 let a cycle through")
	}
	fx.mustPut(self) // a protocol 3 replica applied it
}

// TestFSM_OnUpstreamFailure: what a scheduled instance waiting for its
// dependsOn does when the upstream instance of its date ends FAILED or
// TERMINATED, whether it was waiting already or is created afterwards.
func TestFSM_OnUpstreamFailure(t *testing.T) {
	tests := []struct {
		policy    string
		wantState string
	}{
		{"", model.StateBlocked},
		{"wait", model.StateBlocked},
		{"skip", model.StateSkipped},
		{"fail", model.StateFailed},
	}
	for _, tt := range tests {
		for _, later := range []bool{false, true} {
			for _, terminate := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/later=%v/terminate=%v", tt.policy, later, terminate), func(t *testing.T) {
					fx := newPolicyFixture(t, ProtoVersion)
					fx.mustPut(cronTask("sync", "0 1 * * *"))
					down := depTask("report", "sync")
					down.Policy.OnUpstreamFailure = tt.policy
					down.Policy.MaxConcurrency = 5
					fx.mustPut(down)
					other := fx.fire("report", "2026-11-29") // another date: unaffected
					var rep uint64
					if !later {
						rep = fx.fire("report", "2026-11-30")
					}
					up := fx.fire("sync", "2026-11-30")
					if terminate {
						fx.do(CmdLease, "", Lease{Executor: "e1", IDs: []uint64{up}, LeaseMs: 10_000})
						writeResult(t, fx.do(CmdDecide, "", Decide{ID: up, Action: DecideTerminate}))
					} else {
						fx.run(up, false, "")
					}
					if later {
						rep = fx.fire("report", "2026-11-30")
					}
					in := fx.inst(rep)
					if in.State != tt.wantState {
						t.Fatalf("report is %s, want %s (events %+v)", in.State, tt.wantState, in.Events)
					}
					if got := fx.inst(other).State; got != model.StateBlocked {
						t.Errorf("the other date's report is %s, want BLOCKED", got)
					}
					upState := model.StateFailed
					if terminate {
						upState = model.StateTerminated
					}
					want := fmt.Sprintf("upstream sync instance %s ended %s for 2026-11-30", model.FormatID(up), upState)
					switch tt.wantState {
					case model.StateSkipped:
						if e, ok := fx.event(rep, "upstream_failed"); !ok || !strings.Contains(e.Message, want) {
							t.Errorf("event %+v, want one saying %q", e, want)
						}
					case model.StateFailed:
						if !strings.Contains(in.LastError, want) {
							t.Errorf("lastError %q, want it to say %q", in.LastError, want)
						}
					case model.StateBlocked:
						// A later success of the upstream still releases it.
						fx.run(fx.fire("sync", "2026-11-30"), true, "")
						if got := fx.inst(rep).State; got != model.StateReady {
							t.Errorf("after a success: %s, want READY", got)
						}
					}
				})
			}
		}
	}
}

// TestFSM_OnSuccess: a success creates one instance of each onSuccess
// task, with the params and the parent, exactly once (a retried complete
// is deduplicated); a failure creates none; a missing task is an event.
func TestFSM_OnSuccess(t *testing.T) {
	fx := newPolicyFixture(t, ProtoVersion)
	fx.mustPut(eventTask("load", model.Policy{}))
	fx.mustPut(eventTask("gone", model.Policy{}))
	fx.mustPut(eventTask("extract", model.Policy{OnSuccess: []model.Chain{
		{Task: "load", Params: map[string]string{"table": "orders"}}, {Task: "gone"}}}))
	writeResult(t, fx.do(CmdDeleteTask, "", TaskRef{Name: "gone"}))

	failed := fx.trigger("extract")
	fx.run(failed, false, "")
	if n := len(fx.instancesOf("load")); n != 0 {
		t.Fatalf("a failure created %d load instances", n)
	}
	ok := fx.trigger("extract")
	fx.run(ok, true, "req-1")
	fx.complete(ok, true, "req-1") // the retried report
	loads := fx.instancesOf("load")
	if len(loads) != 1 {
		t.Fatalf("%d load instances, want 1", len(loads))
	}
	l := loads[0]
	wantParams := map[string]string{"table": "orders", "parent_task": "extract", "parent_instance": model.FormatID(ok)}
	if l.Source != model.SourceDependency || l.State != model.StateReady || fmt.Sprint(l.Params) != fmt.Sprint(wantParams) {
		t.Errorf("load instance %+v, want READY source dependency with %v", l, wantParams)
	}
	lid, _ := model.ParseID(l.ID)
	if e, found := fx.event(lid, "chained"); !found || !strings.Contains(e.Message, model.FormatID(ok)) {
		t.Errorf("load's chained event %+v, want it to name %s", e, model.FormatID(ok))
	}
	if e, found := fx.event(ok, "on_success"); !found || !strings.Contains(e.Message, "created load instance "+l.ID) {
		t.Errorf("parent's on_success event %+v", e)
	}
	var missing bool
	for _, e := range fx.inst(ok).Events {
		missing = missing || (e.Type == "on_success" && strings.Contains(e.Message, "task gone does not exist"))
	}
	if !missing {
		t.Errorf("no event about the missing task: %+v", fx.inst(ok).Events)
	}
}

// TestFSM_MaxQueued: an instance that would queue beyond maxQueued is
// SKIPPED with a queue_full event; delayed submissions always queue.
func TestFSM_MaxQueued(t *testing.T) {
	fx := newPolicyFixture(t, ProtoVersion)
	fx.mustPut(eventTask("job", model.Policy{MaxQueued: 2}))
	var ids []uint64
	for range 4 {
		ids = append(ids, fx.trigger("job"))
	}
	want := []string{model.StateReady, model.StateBlocked, model.StateBlocked, model.StateSkipped}
	for i, id := range ids {
		if got := fx.inst(id).State; got != want[i] {
			t.Errorf("instance %d: %s, want %s", i, got, want[i])
		}
	}
	if e, ok := fx.event(ids[3], "queue_full"); !ok || e.Message != "2 instances already queued (maxQueued 2)" {
		t.Errorf("queue_full event %+v", e)
	}
	c := submitCmd(t, "job", fx.now+10, SubmitItem{DelayMs: 0})
	c.Node = "n1"
	out := fx.a.apply(c)
	if out.Err != nil {
		t.Fatal(out.Err)
	}
	l := fx.instancesOf("job")
	if got := l[len(l)-1].State; got != model.StateBlocked {
		t.Errorf("a delayed submission due now: %s, want BLOCKED (never dropped)", got)
	}
	// Unset: the default bound.
	fx.mustPut(eventTask("dflt", model.Policy{}))
	for range model.DefaultMaxQueued + 2 {
		fx.trigger("dflt")
	}
	l = fx.instancesOf("dflt")
	if got := l[len(l)-1].State; got != model.StateSkipped {
		t.Errorf("instance %d of a default queue: %s, want SKIPPED", len(l), got)
	}
}
