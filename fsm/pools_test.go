package fsm

import (
	"strings"
	"testing"

	"github.com/ax-scheduler/ax/model"
)

func (fx *policyFixture) pool(name string) *model.Pool {
	fx.t.Helper()
	p, err := fx.f.Pool(name)
	if err != nil {
		fx.t.Fatal(err)
	}
	return p
}

func (fx *policyFixture) states(ids ...uint64) string {
	fx.t.Helper()
	var out []string
	for _, id := range ids {
		out = append(out, fx.inst(id).State)
	}
	return strings.Join(out, " ")
}

// TestFSM_Pools: the instances of two tasks share a pool's slots on top
// of their own maxConcurrency; the ones that find it full wait BLOCKED
// (their why names the pool) and start oldest first as slots free, by
// an end or by more slots; a canceled waiter leaves the wait; overlap
// skip skips; a pool in use cannot be deleted; a task naming a missing
// pool is refused, and below protocol 8 any pool is.
func TestFSM_Pools(t *testing.T) {
	fx := newPolicyFixture(t, 8)
	if r := fx.put(eventTask("a", model.Policy{Pool: "db"})); r.Err == nil || r.Err.Field != "policy.pool" {
		t.Fatalf("a task naming a missing pool: %v", r.Err)
	}
	if r := fx.do(CmdPutPool, "", PutPool{Pool: model.Pool{Name: "db", Slots: 2}}); r.Err != nil {
		t.Fatal(r.Err)
	}
	fx.mustPut(eventTask("a", model.Policy{Pool: "db", MaxConcurrency: 5}))
	fx.mustPut(eventTask("b", model.Policy{Pool: "db", MaxConcurrency: 5}))
	fx.mustPut(eventTask("c", model.Policy{Pool: "db", Overlap: "skip"}))

	a1, a2, b1, a3 := fx.trigger("a"), fx.trigger("a"), fx.trigger("b"), fx.trigger("a")
	if got := fx.states(a1, a2, b1, a3); got != "READY READY BLOCKED BLOCKED" {
		t.Fatalf("states %s, want two READY and two waiting for the pool", got)
	}
	if p := fx.pool("db"); p.Busy != 2 || p.Queued != 2 || strings.Join(p.Tasks, ",") != "a,b,c" {
		t.Errorf("pool %+v, want busy 2, queued 2, tasks a,b,c", p)
	}
	if f, err := fx.f.InstanceWhy(b1); err != nil || f.Pool == nil || f.Pool.Name != "db" {
		t.Errorf("why facts of a waiter: %+v %v, want the pool", f, err)
	}
	if c1 := fx.trigger("c"); fx.states(c1) != "SKIPPED" {
		t.Errorf("overlap skip with the pool full: %s, want SKIPPED", fx.states(c1))
	}

	fx.run(a1, true, "")
	if got := fx.states(a1, b1, a3); got != "SUCCESS READY BLOCKED" {
		t.Fatalf("after a1 ended: %s, want the oldest waiter (b1) started", got)
	}
	if e, ok := fx.event(b1, "unblocked"); !ok || !strings.Contains(e.Message, "pool db") {
		t.Errorf("b1's unblocked event: %+v %v", e, ok)
	}
	if r := fx.do(CmdPutPool, "", PutPool{Pool: model.Pool{Name: "db", Slots: 3}}); r.Err != nil {
		t.Fatal(r.Err)
	}
	if got := fx.states(a3); got != "READY" {
		t.Errorf("after the pool grew: a3 %s, want READY", got)
	}
	b2 := fx.trigger("b")
	if r := fx.do(CmdDecide, "", Decide{ID: b2, Action: DecideCancel}); r.Err != nil {
		t.Fatal(r.Err)
	}
	if p := fx.pool("db"); p.Busy != 3 || p.Queued != 0 || p.Version != 2 {
		t.Errorf("pool %+v, want busy 3, queued 0 after the canceled waiter, version 2", p)
	}
	r := fx.do(CmdDeletePool, "", TaskRef{Name: "db"})
	if r.Err == nil || r.Err.Code != model.CodePrecondition || !strings.Contains(r.Err.Message, "used by task(s) a, b, c") {
		t.Errorf("deleting a pool in use: %v", r.Err)
	}

	old := newPolicyFixture(t, 7)
	if r := old.put(eventTask("a", model.Policy{Pool: "db"})); r.Err == nil || r.Err.Field != "policy.pool" || r.Err.Code != model.CodePrecondition {
		t.Errorf("policy.pool at protocol 7: %v", r.Err)
	}
}

// TestFSM_PoolsTaskLimit: a waiter whose task is at its own
// maxConcurrency keeps its place while a later waiter of another task
// takes the freed pool slot, and starts once its task's slot frees.
func TestFSM_PoolsTaskLimit(t *testing.T) {
	fx := newPolicyFixture(t, 8)
	fx.do(CmdPutPool, "", PutPool{Pool: model.Pool{Name: "p", Slots: 2}})
	fx.mustPut(eventTask("one", model.Policy{Pool: "p", MaxConcurrency: 1}))
	fx.mustPut(eventTask("other", model.Policy{Pool: "p", MaxConcurrency: 5}))
	o1, x1, x2 := fx.trigger("one"), fx.trigger("other"), fx.trigger("other")
	o2 := fx.trigger("one") // its task's slot is busy: the task's own queue
	x3 := fx.trigger("other")
	if got := fx.states(o1, x1, x2, o2, x3); got != "READY READY BLOCKED BLOCKED BLOCKED" {
		t.Fatalf("states %s", got)
	}
	fx.run(x1, true, "")
	if got := fx.states(x2, o2, x3); got != "READY BLOCKED BLOCKED" {
		t.Fatalf("after x1: %s, want x2 started (the oldest waiter of the pool)", got)
	}
	fx.run(o1, true, "")
	if got := fx.states(o2, x3); got != "READY BLOCKED" {
		t.Errorf("after o1: %s, want o2 started (its task's slot and o1's pool slot free)", got)
	}
	fx.run(x2, true, "")
	if got := fx.states(x3); got != "READY" {
		t.Errorf("after x2: x3 %s, want READY", got)
	}
}
