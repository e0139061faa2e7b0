package fsm

import (
	"strings"
	"testing"

	"github.com/ax-scheduler/ax/fsm/command"
	"github.com/ax-scheduler/ax/model"
)

// fanOut applies shard to the READY sharded instance id and returns its
// shards' ids.
func (fx *policyFixture) fanOut(id uint64, s command.Shard) []uint64 {
	fx.t.Helper()
	s.ID = id
	if r := fx.do(command.TypeShard, "", s); r.Err != nil {
		fx.t.Fatalf("shard %d: %v", id, r.Err)
	}
	return fx.shardIDs(id)
}

func (fx *policyFixture) shardIDs(id uint64) []uint64 {
	fx.t.Helper()
	shards, err := fx.f.Shards(id)
	if err != nil {
		fx.t.Fatal(err)
	}
	var ids []uint64
	for _, s := range shards {
		n, _ := model.ParseID(s.ID)
		ids = append(ids, n)
	}
	return ids
}

// runOn leases id to executor and completes its attempt.
func (fx *policyFixture) runOn(id uint64, executor string, ok bool) {
	fx.t.Helper()
	fx.do(command.TypeLease, "", command.Lease{Executor: executor, IDs: []uint64{id}, LeaseMs: 10_000})
	fx.do(command.TypeComplete, "", command.Complete{ID: id, Attempt: fx.inst(id).Attempts,
		Report: model.CompleteRequest{Executor: executor, Success: ok, Retryable: !ok, ExitCode: map[bool]int{true: 0, false: 3}[ok], Error: "exit 3"}})
}

// TestFSM_Shards: a sharded instance holds its task's slot, runs as its
// shards (each an instance of its own, not in the task's list, holding
// no slot) and succeeds when every shard has; then the next queued
// instance starts. Its shards know their place; a retry is per shard.
func TestFSM_Shards(t *testing.T) {
	fx := newPolicyFixture(t, 8)
	fx.mustPut(eventTask("s", model.Policy{Shards: 3, MaxRetries: 1}))
	a, b := fx.trigger("s"), fx.trigger("s")
	if got := fx.states(a, b); got != "READY BLOCKED" {
		t.Fatalf("states %s, want the first READY holding the slot", got)
	}
	if r := fx.do(command.TypeShard, "", command.Shard{ID: b, Total: 3}); r.Err == nil || r.Err.Code != model.CodePrecondition {
		t.Errorf("fan-out of a BLOCKED instance: %v", r.Err)
	}
	ids := fx.fanOut(a, command.Shard{Total: 3})
	if len(ids) != 3 || ids[1] != ids[0]+1 || ids[2] != ids[0]+2 {
		t.Fatalf("shard ids %v, want 3 consecutive", ids)
	}
	if got := fx.states(append([]uint64{a}, ids...)...); got != "RUNNING READY READY READY" {
		t.Fatalf("after the fan-out: %s", got)
	}
	if r := fx.do(command.TypeShard, "", command.Shard{ID: a, Total: 3}); r.Err == nil {
		t.Error("a second fan-out of a RUNNING instance was applied")
	}
	sh := fx.inst(ids[2])
	if sh.Parent != model.FormatID(a) || sh.Shard == nil || sh.Shard.Index != 2 || sh.Shard.Total != 3 || sh.Task != "s" {
		t.Errorf("shard 2: parent %q shard %+v task %q", sh.Parent, sh.Shard, sh.Task)
	}
	if n := len(fx.instancesOf("s")); n != 2 {
		t.Errorf("the task lists %d instances, want its 2 (shards are listed with their instance)", n)
	}
	if busy, _ := fx.f.SlotsBusy("s"); busy != 1 {
		t.Errorf("%d slots busy, want 1 (the instance's)", busy)
	}
	fx.runOn(ids[0], "e1", true)
	fx.runOn(ids[1], "e2", false) // retried: maxRetries 1
	if got := fx.states(a, ids[1]); got != "RUNNING RETRYING" {
		t.Fatalf("after a failed attempt of shard 1: %s", got)
	}
	if s := fx.inst(a).Shards; s == nil || s.Total != 3 || s.ByState["SUCCESS"] != 1 || s.ByState["RETRYING"] != 1 || s.ByState["READY"] != 1 {
		t.Errorf("summary %+v", s)
	}
	if f, _ := fx.f.InstanceWhy(a); f.Shards == nil || f.Shards.Total != 3 {
		t.Errorf("why facts: %+v", f)
	}
	fx.now += 600_000
	fx.do(command.TypeFire, "", command.Fire{Instances: []uint64{ids[1]}})
	fx.runOn(ids[1], "e2", true)
	fx.runOn(ids[2], "e3", true)
	if got := fx.states(a, b); got != "SUCCESS READY" {
		t.Fatalf("after every shard succeeded: %s, want SUCCESS and the queued instance started", got)
	}
	if n := fx.inst(ids[1]).Attempts; n != 2 {
		t.Errorf("shard 1 made %d attempts, want 2", n)
	}
}

// TestFSM_ShardFailure: with fail-fast (the default) the first shard
// that fails for good fails the instance and ends the others (the
// running one terminated, the waiting one canceled); with finish the
// others run to their end first. A re-run runs only the shards that did
// not succeed; a shard cannot be re-run alone.
func TestFSM_ShardFailure(t *testing.T) {
	fx := newPolicyFixture(t, 8)
	fx.mustPut(eventTask("ff", model.Policy{Shards: 3}))
	a := fx.trigger("ff")
	ids := fx.fanOut(a, command.Shard{Total: 3})
	fx.do(command.TypeLease, "", command.Lease{Executor: "e2", IDs: []uint64{ids[1]}, LeaseMs: 10_000})
	fx.runOn(ids[0], "e1", false)
	if got := fx.states(a, ids[0], ids[1], ids[2]); got != "FAILED FAILED TERMINATED CANCELED" {
		t.Fatalf("fail-fast: %s", got)
	}
	if e := fx.inst(a).LastError; !strings.Contains(e, "shard 0 of 3 ended FAILED") || !strings.Contains(e, "fail-fast") {
		t.Errorf("lastError %q", e)
	}
	if busy, _ := fx.f.SlotsBusy("ff"); busy != 0 {
		t.Errorf("%d slots busy after the failure", busy)
	}

	fx.mustPut(eventTask("fin", model.Policy{Shards: 3, ShardFailure: model.ShardFinish}))
	b := fx.trigger("fin")
	ids = fx.fanOut(b, command.Shard{Total: 3})
	fx.runOn(ids[0], "e1", false)
	fx.runOn(ids[1], "e2", true)
	if got := fx.states(b); got != "RUNNING" {
		t.Fatalf("finish: %s after one shard failed, want RUNNING", got)
	}
	fx.runOn(ids[2], "e3", true)
	if in := fx.inst(b); in.State != "FAILED" || !strings.Contains(in.LastError, "1 of 3 shards did not succeed") {
		t.Fatalf("finish: %s %q", in.State, in.LastError)
	}

	if _, e := fx.rerun(ids[0], ""); e == nil || e.Field != "id" || !strings.Contains(e.Message, "re-run that instance") {
		t.Errorf("re-run of a shard: %v", e)
	}
	fx.mustRerun(b)
	if r := fx.do(command.TypeShard, "", command.Shard{ID: b, Total: 4}); r.Err == nil || r.Err.Field != "total" {
		t.Errorf("re-run fan-out with another count: %v", r.Err)
	}
	fx.fanOut(b, command.Shard{Total: 3})
	if got := fx.states(b, ids[0], ids[1], ids[2]); got != "RUNNING READY SUCCESS SUCCESS" {
		t.Fatalf("re-run: %s, want only the failed shard again", got)
	}
	fx.runOn(ids[0], "e1", true)
	if in := fx.inst(b); in.State != "SUCCESS" || in.LastError != "" {
		t.Errorf("after the re-run: %s %q", in.State, in.LastError)
	}
	if n := fx.inst(ids[0]).Attempts; n != 2 {
		t.Errorf("the re-run shard made %d attempts in all, want 2", n)
	}
	fx.mustRerun(b) // a success: every shard runs again
	fx.fanOut(b, command.Shard{Total: 3})
	if got := fx.states(b, ids[0], ids[1], ids[2]); got != "RUNNING READY READY READY" {
		t.Fatalf("re-run of a success: %s, want every shard again", got)
	}
}

// TestFSM_ShardStopHeld: a shard stopped by a failing sibling is not run
// again by a re-run while its process may still be dying.
func TestFSM_ShardStopHeld(t *testing.T) {
	fx := newPolicyFixture(t, 8)
	fx.mustPut(eventTask("h", model.Policy{Shards: 2}))
	a := fx.trigger("h")
	ids := fx.fanOut(a, command.Shard{Total: 2})
	fx.do(command.TypeLease, "", command.Lease{Executor: "e2", IDs: []uint64{ids[1]}, LeaseMs: 10_000})
	fx.runOn(ids[0], "e1", false)
	fx.mustRerun(a)
	if r := fx.do(command.TypeShard, "", command.Shard{ID: a, Total: 2}); r.Err == nil || r.Err.Code != model.CodeUnavailable {
		t.Fatalf("re-run fan-out while shard 1's stopped attempt may run: %v", r.Err)
	}
	fx.now += shardHoldMs
	fx.fanOut(a, command.Shard{Total: 2})
	if got := fx.states(a, ids[0], ids[1]); got != "RUNNING READY READY" {
		t.Errorf("after the hold: %s", got)
	}
}

// TestFSM_Broadcast: a broadcast pins one shard to each named executor;
// no other executor may lease it; an executor that leaves fails its
// waiting shard; terminating the instance ends the rest; retention
// prunes the shards with it.
func TestFSM_Broadcast(t *testing.T) {
	fx := newPolicyFixture(t, 8)
	fx.mustPut(eventTask("bc", model.Policy{Broadcast: true, ShardFailure: model.ShardFinish}))
	a := fx.trigger("bc")
	ids := fx.fanOut(a, command.Shard{Executors: []string{"e1", "e2", "e3"}})
	if p := fx.inst(ids[1]).Shard; p == nil || p.Executor != "e2" {
		t.Fatalf("shard 1: %+v, want pinned to e2", p)
	}
	fx.do(command.TypeLease, "", command.Lease{Executor: "e9", IDs: ids, LeaseMs: 10_000})
	if got := fx.states(ids...); got != "READY READY READY" {
		t.Fatalf("another executor leased broadcast shards: %s", got)
	}
	fx.runOn(ids[0], "e1", true)
	if r := fx.do(command.TypeShard, "", command.Shard{ID: a, Left: "e2"}); r.Err != nil {
		t.Fatal(r.Err)
	}
	if in := fx.inst(ids[1]); in.State != "FAILED" || !strings.Contains(in.LastError, "executor e2 left") {
		t.Errorf("shard of the departed executor: %s %q", in.State, in.LastError)
	}
	fx.do(command.TypeLease, "", command.Lease{Executor: "e3", IDs: []uint64{ids[2]}, LeaseMs: 10_000})
	if r := fx.do(command.TypeDecide, "", command.Decide{ID: a, Action: command.DecideTerminate}); r.Err != nil {
		t.Fatal(r.Err)
	}
	if got := fx.states(a, ids[0], ids[1], ids[2]); got != "TERMINATED SUCCESS FAILED TERMINATED" {
		t.Fatalf("after terminate: %s", got)
	}
	if hb := fx.do(command.TypeHeartbeat, "", command.Heartbeat{Executor: "e3", Items: []command.AttemptRef{{ID: ids[2], Attempt: 1}}, LeaseMs: 10_000}); hb.Err != nil {
		t.Fatal(hb.Err)
	} else {
		var res HeartbeatResult
		if hb.Decode(&res); len(res.Stop) != 1 {
			t.Errorf("heartbeat of the terminated shard: %+v, want told to stop", res)
		}
	}
	if r := fx.do(command.TypePrune, "", command.Prune{IDs: []uint64{ids[0]}}); r.Err != nil {
		t.Fatal(r.Err)
	}
	if _, err := fx.f.GetInstance(ids[0]); err != nil {
		t.Errorf("prune of a shard alone deleted it: %v", err)
	}
	fx.do(command.TypePrune, "", command.Prune{IDs: []uint64{a}})
	for _, id := range append([]uint64{a}, ids...) {
		if _, err := fx.f.GetInstance(id); err == nil {
			t.Errorf("instance %d kept after its instance was pruned", id)
		}
	}
}

// TestRecord_ShardsRoundTrip: the shard fields survive the codec, and a
// record without them encodes as before.
func TestRecord_ShardsRoundTrip(t *testing.T) {
	base := record{ID: 7, State: stReady, Source: 1, CreatedAt: t0, ScheduledAt: t0, FiredAt: t0, TaskVersion: 1, Task: "a"}
	plain := base.encode()
	for _, r := range []record{
		{Parent: 9, ShardIndex: 3, Shards: 10, Pin: "e1"},
		{Shards: 1000, FirstShard: 1 << 40, ShardsDone: 999, ShardsFailed: 2, Pool: "p"},
		{},
	} {
		want := base
		want.Parent, want.ShardIndex, want.Shards, want.Pin = r.Parent, r.ShardIndex, r.Shards, r.Pin
		want.FirstShard, want.ShardsDone, want.ShardsFailed, want.Pool = r.FirstShard, r.ShardsDone, r.ShardsFailed, r.Pool
		got, err := decodeRecord(7, want.encode())
		if err != nil || !(got.Parent == want.Parent && got.ShardIndex == want.ShardIndex && got.Shards == want.Shards &&
			got.Pin == want.Pin && got.FirstShard == want.FirstShard && got.ShardsDone == want.ShardsDone && got.ShardsFailed == want.ShardsFailed && got.Pool == want.Pool) {
			t.Errorf("round trip of %+v: %+v, %v", want, got, err)
		}
	}
	if string(base.encode()) != string(plain) {
		t.Error("a record without shard fields encodes differently")
	}
}

// TestFSM_ShardResults: a sharded instance's result is its shards', in
// shard order (null for one that published none), for the API and for
// the jobs downstream of it.
func TestFSM_ShardResults(t *testing.T) {
	fx := newPolicyFixture(t, 8)
	fx.mustPut(eventTask("s", model.Policy{Shards: 3}))
	a := fx.trigger("s")
	ids := fx.fanOut(a, command.Shard{Total: 3})
	if _, err := fx.f.InstanceResult(a); err == nil || !strings.Contains(err.Error(), "none of its shards published one") {
		t.Errorf("before any result: %v", err)
	}
	for i, res := range []string{`{"n":0}`, ``, `[1,2]`} {
		fx.do(command.TypeLease, "", command.Lease{Executor: "e1", IDs: []uint64{ids[i]}, LeaseMs: 10_000})
		fx.do(command.TypeComplete, "", command.Complete{ID: ids[i], Attempt: 1,
			Report: model.CompleteRequest{Executor: "e1", Success: true, Result: []byte(res)}})
	}
	r, err := fx.f.InstanceResult(a)
	if err != nil || string(r.Result) != `[{"n":0},null,[1,2]]` {
		t.Fatalf("result of the sharded instance: %+v %v", r, err)
	}
	if s, err := fx.f.InstanceResult(ids[2]); err != nil || string(s.Result) != `[1,2]` {
		t.Errorf("shard 2's own result: %+v %v", s, err)
	}
}
