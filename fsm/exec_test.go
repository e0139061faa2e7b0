package fsm

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/model"
)

// execFixture builds a state machine with one instance in a given state.
type execFixture struct {
	t   *testing.T
	f   *FSM
	a   *applier
	now int64
}

func newExecFixture(t *testing.T, policy model.Policy) *execFixture {
	t.Helper()
	fx := &execFixture{t: t, f: newTestFSM(t), now: t0}
	fx.a = &applier{t: t, f: fx.f}
	writeResult(t, fx.a.apply(cmd(t, CmdSetProto, "", t0, SetProto{Proto: ProtoVersion})))
	task := model.Task{Name: "job", Trigger: model.Trigger{Type: model.TriggerEvent},
		Action: model.Action{Type: model.ActionShell, Command: "true"}, Policy: policy}
	writeResult(t, fx.a.apply(cmd(t, CmdPutTask, "", t0, PutTask{Task: task})))
	return fx
}

func (fx *execFixture) do(typ CommandType, body any) *Result {
	fx.t.Helper()
	fx.now += 10
	c := cmd(fx.t, typ, "", fx.now, body)
	c.Node = "n1"
	return fx.a.apply(c)
}

func (fx *execFixture) trigger() uint64 {
	fx.t.Helper()
	var s model.Submitted
	if err := fx.do(CmdTrigger, Trigger{Task: "job"}).Decode(&s); err != nil {
		fx.t.Fatal(err)
	}
	id, _ := model.ParseID(s.ID)
	return id
}

func (fx *execFixture) inst(id uint64) *model.Instance {
	fx.t.Helper()
	in, err := fx.f.GetInstance(id)
	if err != nil {
		fx.t.Fatal(err)
	}
	return in
}

func (fx *execFixture) lease(id uint64) {
	fx.do(CmdLease, Lease{Executor: "e1", IDs: []uint64{id}, LeaseMs: 10_000})
}

// beat renews (and so confirms) the lease of id's current attempt.
func (fx *execFixture) beat(id uint64) {
	fx.t.Helper()
	writeResult(fx.t, fx.do(CmdHeartbeat, Heartbeat{Executor: "e1", Items: []AttemptRef{{ID: id, Attempt: fx.inst(id).Attempts}}, LeaseMs: 10_000}))
}

// expire lapses the lease of id's current attempt, interrupted as the
// leader says.
func (fx *execFixture) expire(id uint64, interrupted bool) {
	fx.t.Helper()
	fx.now += 3_600_000
	writeResult(fx.t, fx.do(CmdExpire, Expire{Items: []ExpireItem{{ID: id, Attempt: fx.inst(id).Attempts, Interrupted: interrupted}}}))
}

func (fx *execFixture) complete(id uint64, ok, retryable bool) *Result {
	return fx.do(CmdComplete, Complete{ID: id, Attempt: fx.inst(id).Attempts,
		Report: model.CompleteRequest{Executor: "e1", Success: ok, Retryable: retryable, ExitCode: map[bool]int{true: 0, false: 3}[ok], Error: "x"}})
}

// TestFSM_ExecStateTable applies every execution command to an instance in
// every state and checks the resulting state (or that nothing changed).
func TestFSM_ExecStateTable(t *testing.T) {
	base := model.Policy{MaxConcurrency: 1, Overlap: "queue", MaxRetries: 1, RetryInterval: model.Duration(time.Second)}
	setups := map[string]struct {
		policy model.Policy
		build  func(fx *execFixture) uint64
	}{
		"SCHEDULED": {base, func(fx *execFixture) uint64 {
			r := fx.a.apply(&Command{Type: CmdSubmit, Now: fx.now, Node: "n1", Body: EncodeSubmit(&Submit{Task: "job", Items: []SubmitItem{{DelayMs: 3_600_000}}})})
			sr, err := DecodeSubmitResult(r)
			if err != nil {
				fx.t.Fatal(err)
			}
			id, _ := model.ParseID(sr.Instances[0].ID)
			return id
		}},
		"READY": {base, func(fx *execFixture) uint64 { return fx.trigger() }},
		"RUNNING": {base, func(fx *execFixture) uint64 {
			id := fx.trigger()
			fx.lease(id)
			return id
		}},
		"RUNNING(confirmed)": {base, func(fx *execFixture) uint64 {
			id := fx.trigger()
			fx.lease(id)
			fx.beat(id)
			return id
		}},
		"RETRYING": {base, func(fx *execFixture) uint64 {
			id := fx.trigger()
			fx.lease(id)
			fx.complete(id, false, true)
			return id
		}},
		"BLOCKED": {base, func(fx *execFixture) uint64 {
			fx.trigger()
			return fx.trigger()
		}},
		"SKIPPED": {model.Policy{MaxConcurrency: 1, Overlap: "skip"}, func(fx *execFixture) uint64 {
			fx.trigger()
			return fx.trigger()
		}},
		"WAITING_APPROVAL": {model.Policy{MaxConcurrency: 1, Approval: "before_run"}, func(fx *execFixture) uint64 { return fx.trigger() }},
		"WAITING_APPROVAL(mid-run)": {base, func(fx *execFixture) uint64 {
			id := fx.trigger()
			fx.lease(id)
			fx.do(CmdDecide, Decide{ID: id, Action: DecideRequestApproval, Attempt: 1, Comment: "ok?"})
			return id
		}},
		"SUCCESS": {base, func(fx *execFixture) uint64 {
			id := fx.trigger()
			fx.lease(id)
			fx.complete(id, true, false)
			return id
		}},
		"FAILED": {base, func(fx *execFixture) uint64 {
			id := fx.trigger()
			fx.lease(id)
			fx.complete(id, false, false)
			return id
		}},
		"CANCELED": {base, func(fx *execFixture) uint64 {
			id := fx.trigger()
			fx.do(CmdDecide, Decide{ID: id, Action: DecideCancel})
			return id
		}},
		"TERMINATED": {base, func(fx *execFixture) uint64 {
			id := fx.trigger()
			fx.lease(id)
			fx.do(CmdDecide, Decide{ID: id, Action: DecideTerminate})
			return id
		}},
	}
	commands := map[string]func(fx *execFixture, id uint64){
		"fire": func(fx *execFixture, id uint64) {
			fx.now += 2 * 3_600_000 // past any due or retry time
			fx.do(CmdFire, Fire{Instances: []uint64{id}})
		},
		"lease": func(fx *execFixture, id uint64) { fx.lease(id) },
		"heartbeat": func(fx *execFixture, id uint64) {
			fx.do(CmdHeartbeat, Heartbeat{Executor: "e1", Items: []AttemptRef{{ID: id, Attempt: fx.inst(id).Attempts}}, LeaseMs: 10_000})
		},
		"complete-ok":   func(fx *execFixture, id uint64) { fx.complete(id, true, false) },
		"complete-fail": func(fx *execFixture, id uint64) { fx.complete(id, false, true) },
		"expire": func(fx *execFixture, id uint64) {
			fx.now += 3_600_000
			fx.do(CmdExpire, Expire{Items: []ExpireItem{{ID: id, Attempt: fx.inst(id).Attempts}}})
		},
		"approve":   func(fx *execFixture, id uint64) { fx.do(CmdDecide, Decide{ID: id, Action: DecideApprove}) },
		"reject":    func(fx *execFixture, id uint64) { fx.do(CmdDecide, Decide{ID: id, Action: DecideReject}) },
		"cancel":    func(fx *execFixture, id uint64) { fx.do(CmdDecide, Decide{ID: id, Action: DecideCancel}) },
		"terminate": func(fx *execFixture, id uint64) { fx.do(CmdDecide, Decide{ID: id, Action: DecideTerminate}) },
		"request_approval": func(fx *execFixture, id uint64) {
			fx.do(CmdDecide, Decide{ID: id, Action: DecideRequestApproval, Attempt: fx.inst(id).Attempts})
		},
	}
	// want[state][command] = resulting state; a missing entry means the
	// command is rejected or ignored and the state does not change.
	want := map[string]map[string]string{
		"SCHEDULED": {"fire": "READY", "cancel": "CANCELED"},
		"READY":     {"lease": "RUNNING", "cancel": "CANCELED"},
		// An unconfirmed attempt whose lease lapses is given back (READY);
		// a confirmed one is lost and retried.
		"RUNNING": {"complete-ok": "SUCCESS", "complete-fail": "RETRYING", "expire": "READY",
			"terminate": "TERMINATED", "request_approval": "WAITING_APPROVAL"},
		"RUNNING(confirmed)": {"complete-ok": "SUCCESS", "complete-fail": "RETRYING", "expire": "RETRYING",
			"terminate": "TERMINATED", "request_approval": "WAITING_APPROVAL"},
		"RETRYING":                  {"fire": "READY", "cancel": "CANCELED"},
		"BLOCKED":                   {"cancel": "CANCELED"},
		"WAITING_APPROVAL":          {"approve": "READY", "reject": "CANCELED", "cancel": "CANCELED"},
		"WAITING_APPROVAL(mid-run)": {"expire": "READY", "approve": "RUNNING", "reject": "CANCELED", "cancel": "CANCELED", "terminate": "TERMINATED", "complete-ok": "SUCCESS", "complete-fail": "RETRYING"},
		"SUCCESS":                   {},
		"FAILED":                    {},
		"CANCELED":                  {},
		"TERMINATED":                {},
		"SKIPPED":                   {},
	}
	for state, setup := range setups {
		for cmdName, apply := range commands {
			t.Run(fmt.Sprintf("%s/%s", state, cmdName), func(t *testing.T) {
				fx := newExecFixture(t, setup.policy)
				id := setup.build(fx)
				start := fx.inst(id).State
				if wantStart := stateOnly(state); start != wantStart {
					t.Fatalf("setup: instance is %s, want %s", start, wantStart)
				}
				apply(fx, id)
				got := fx.inst(id).State
				exp, ok := want[state][cmdName]
				if !ok {
					exp = start
				}
				if got != exp {
					t.Fatalf("got %s, want %s", got, exp)
				}
			})
		}
	}
}

func stateOnly(s string) string {
	if i := strings.IndexByte(s, '('); i > 0 {
		return s[:i]
	}
	return s
}

// TestFSM_ConcurrencyQueue: a finished instance frees its slot and starts
// the oldest BLOCKED one; retries keep their slot.
func TestFSM_ConcurrencyQueue(t *testing.T) {
	fx := newExecFixture(t, model.Policy{MaxConcurrency: 1, Overlap: "queue", MaxRetries: 2})
	a, b, c := fx.trigger(), fx.trigger(), fx.trigger()
	if got := []string{fx.inst(a).State, fx.inst(b).State, fx.inst(c).State}; fmt.Sprint(got) != "[READY BLOCKED BLOCKED]" {
		t.Fatalf("got %v", got)
	}
	fx.lease(a)
	fx.complete(a, false, true) // RETRYING keeps the slot
	if fx.inst(b).State != model.StateBlocked {
		t.Fatalf("b started while a retries")
	}
	fx.now += 5000
	fx.do(CmdFire, Fire{Instances: []uint64{a}})
	fx.lease(a)
	fx.complete(a, true, false)
	if fx.inst(a).State != model.StateSuccess || fx.inst(b).State != model.StateReady || fx.inst(c).State != model.StateBlocked {
		t.Fatalf("after a: %s %s %s", fx.inst(a).State, fx.inst(b).State, fx.inst(c).State)
	}
	// Fencing: a report from attempt 1 of a after attempt 2 is refused.
	r := fx.do(CmdComplete, Complete{ID: a, Attempt: 1, Report: model.CompleteRequest{Executor: "e1", Success: true}})
	if r.Err == nil || r.Err.Code != model.CodeConflict {
		t.Fatalf("stale report: got %v, want conflict", r.Err)
	}
	in := fx.inst(a)
	if len(in.AttemptList) != 2 || in.AttemptList[0].Outcome != model.OutcomeFailed || in.AttemptList[1].Outcome != model.OutcomeSuccess {
		t.Fatalf("attempts: %+v", in.AttemptList)
	}
}

func TestBackoff(t *testing.T) {
	tests := []struct {
		name string
		p    model.Policy
		n    int
		want time.Duration
	}{
		{"default", model.Policy{}, 1, time.Second},
		{"fixed", model.Policy{RetryInterval: model.Duration(5 * time.Second)}, 3, 5 * time.Second},
		{"exponential", model.Policy{RetryInterval: model.Duration(time.Second), Backoff: "exponential"}, 4, 8 * time.Second},
		{"capped", model.Policy{RetryInterval: model.Duration(time.Second), Backoff: "exponential", MaxRetryInterval: model.Duration(3 * time.Second)}, 4, 3 * time.Second},
	}
	for _, tc := range tests {
		if got := backoff(&tc.p, tc.n); got != tc.want {
			t.Errorf("%s: got %s, want %s", tc.name, got, tc.want)
		}
	}
}

// TestFSM_ActiveCountMatchesIndex checks the kept counter against the
// index after a mix of transitions.
func TestFSM_ActiveCountMatchesIndex(t *testing.T) {
	fx := newExecFixture(t, model.Policy{MaxConcurrency: 2, Overlap: "queue", MaxRetries: 1})
	var ids []uint64
	for i := 0; i < 5; i++ {
		ids = append(ids, fx.trigger())
	}
	fx.lease(ids[0])
	fx.complete(ids[0], true, false)
	fx.lease(ids[1])
	fx.complete(ids[1], false, true)
	fx.do(CmdDecide, Decide{ID: ids[4], Action: DecideCancel})
	n := 0
	if err := fx.f.ActiveInstances(func(Active) { n++ }); err != nil {
		t.Fatal(err)
	}
	if got := fx.f.ActiveCount(); got != n || n == 0 {
		t.Fatalf("ActiveCount %d, index holds %d", got, n)
	}
}

func TestFSM_BackfillSkipsExistingTimes(t *testing.T) {
	f := newTestFSM(t)
	a := &applier{t: t, f: f}
	task := cronTask("bf", "0 * * * *")
	task.Policy.MaxConcurrency = 100
	writeResult(t, a.apply(cmd(t, CmdPutTask, "", t0, PutTask{Task: task})))
	keys := task.FireKeys()
	h := int64(3_600_000)
	// A regular fire at t0+1h, then a backfill of t0+1h..t0+3h.
	fire, _ := NewCommand(CmdFire, "", "scheduler", Fire{Tasks: []TaskFire{{Task: "bf", Version: 1, At: t0 + h, Key: keys.Key(time.UnixMilli(t0 + h))}}})
	fire.Now = t0 + h
	a.apply(fire)
	var times []int64
	var ks []string
	for i := int64(1); i <= 3; i++ {
		times = append(times, t0+i*h)
		ks = append(ks, keys.Key(time.UnixMilli(t0+i*h)))
	}
	for round, want := range []int{2, 0} {
		var res BackfillResult
		if err := a.apply(cmd(t, CmdBackfill, "", t0+4*h, Backfill{Task: "bf", Version: 1, At: times, Keys: ks})).Decode(&res); err != nil {
			t.Fatal(err)
		}
		if len(res.Created) != want || res.Existing != 3-want {
			t.Fatalf("round %d: created %d existing %d, want %d and %d", round, len(res.Created), res.Existing, want, 3-want)
		}
	}
	l, _ := f.ListInstances(model.InstanceFilter{Task: "bf"})
	seen := map[int64]bool{}
	for _, in := range l.Instances {
		if seen[in.ScheduledAt.Millis()] {
			t.Fatalf("two instances for %s", in.ScheduledAt)
		}
		seen[in.ScheduledAt.Millis()] = true
	}
	if len(l.Instances) != 3 {
		t.Fatalf("got %d instances, want 3", len(l.Instances))
	}
	// A stale plan is refused.
	if r := a.apply(cmd(t, CmdBackfill, "", t0, Backfill{Task: "bf", Version: 9, At: times, Keys: ks})); r.Err == nil || r.Err.Code != model.CodeConflict {
		t.Fatalf("stale backfill: %v", r.Err)
	}
}

func TestFSM_PruneDeletesOnlyFinished(t *testing.T) {
	fx := newExecFixture(t, model.Policy{MaxConcurrency: 10})
	done, running := fx.trigger(), fx.trigger()
	fx.lease(done)
	fx.complete(done, true, false)
	fx.lease(running)
	ids, err := fx.f.Expired(time.UnixMilli(fx.now).Add(time.Hour), time.Minute, 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) != 1 || ids[0] != done {
		t.Fatalf("expired %v, want only the finished instance", ids)
	}
	var res struct{ Pruned int }
	if err := fx.do(CmdPrune, Prune{IDs: []uint64{done, running}}).Decode(&res); err != nil || res.Pruned != 1 {
		t.Fatalf("pruned %d (%v), want 1", res.Pruned, err)
	}
	if _, err := fx.f.GetInstance(done); err == nil {
		t.Fatal("pruned instance still there")
	}
	if in := fx.inst(running); in.State != model.StateRunning {
		t.Fatalf("running instance is %s", in.State)
	}
	l, _ := fx.f.ListInstances(model.InstanceFilter{Task: "job"})
	if len(l.Instances) != 1 {
		t.Fatalf("listing shows %d instances, want 1", len(l.Instances))
	}
}

// TestFSM_DependsOn: a scheduled fire waits BLOCKED until its upstream
// task succeeds for the same date; other dates do not count.
func TestFSM_DependsOn(t *testing.T) {
	f := newTestFSM(t)
	a := &applier{t: t, f: f}
	up := cronTask("sync", "0 1 * * *")
	down := cronTask("report", "0 2 * * *")
	down.Policy.DependsOn = []string{"sync"}
	for _, task := range []model.Task{up, down} {
		writeResult(t, a.apply(cmd(t, CmdPutTask, "", t0, PutTask{Task: task})))
	}
	fire := func(task string, at int64, date string) uint64 {
		t.Helper()
		c, _ := NewCommand(CmdFire, "", "scheduler", Fire{Tasks: []TaskFire{{Task: task, Version: 1, At: at, Key: task + "@" + fmt.Sprint(at), Date: date}}})
		c.Now = at
		var fr FireResult
		if err := a.apply(c).Decode(&fr); err != nil || len(fr.Created) != 1 {
			t.Fatalf("fire %s: %+v %v", task, fr, err)
		}
		id, _ := model.ParseID(fr.Created[0])
		return id
	}
	run := func(id uint64, ok bool) {
		t.Helper()
		c, _ := NewCommand(CmdLease, "", "", Lease{Executor: "e1", IDs: []uint64{id}, LeaseMs: 10000})
		c.Now = t0 + 10*3_600_000
		a.apply(c)
		in, _ := f.GetInstance(id)
		c, _ = NewCommand(CmdComplete, "", "", Complete{ID: id, Attempt: in.Attempts, Report: model.CompleteRequest{Executor: "e1", Success: ok, Error: "x"}})
		c.Now = t0 + 10*3_600_000
		a.apply(c)
	}
	state := func(id uint64) string { in, _ := f.GetInstance(id); return in.State }

	// Yesterday's upstream success does not count for today.
	y := fire("sync", t0+1*3_600_000, "2026-11-29")
	run(y, true)
	rep := fire("report", t0+2*3_600_000, "2026-11-30")
	if got := state(rep); got != model.StateBlocked {
		t.Fatalf("report before today's sync: %s, want BLOCKED", got)
	}
	s := fire("sync", t0+3*3_600_000, "2026-11-30")
	run(s, false) // a failure does not release it
	if got := state(rep); got != model.StateBlocked {
		t.Fatalf("report after a failed sync: %s, want BLOCKED", got)
	}
	s2 := fire("sync", t0+4*3_600_000, "2026-11-30")
	run(s2, true)
	if got := state(s2); got != model.StateSuccess {
		in, _ := f.GetInstance(s2)
		t.Fatalf("s2 is %s: %+v", got, in)
	}
	if got := state(rep); got != model.StateReady {
		t.Fatalf("report after today's sync succeeded: %s, want READY", got)
	}
	// Once the date has a success, later fires for it start at once.
	again := fire("report", t0+5*3_600_000, "2026-11-30")
	if got := state(again); got != model.StateBlocked {
		// maxConcurrency 1: the first report holds the slot.
		t.Fatalf("second report: %s, want BLOCKED behind the first", got)
	}
	run(rep, true)
	if got := state(again); got != model.StateReady {
		t.Fatalf("second report after the first finished: %s, want READY", got)
	}

	// Waiting on a task that does not exist (yet) says so.
	orphan := cronTask("orphan", "0 2 * * *")
	orphan.Policy.DependsOn = []string{"sync", "nope"}
	writeResult(t, a.apply(cmd(t, CmdPutTask, "", t0, PutTask{Task: orphan})))
	o := fire("orphan", t0+6*3_600_000, "2026-12-01")
	in, _ := f.GetInstance(o)
	want := "dependsOn: waiting for sync, nope (no such task yet) to succeed for 2026-12-01"
	found := false
	for _, e := range in.Events {
		found = found || (e.Type == "blocked" && e.Message == want)
	}
	if in.State != model.StateBlocked || !found {
		t.Fatalf("orphan: %s, events %+v; want BLOCKED with %q", in.State, in.Events, want)
	}
}

func TestAttemptCodec_RoundTrip(t *testing.T) {
	three := 3
	tests := []model.Attempt{
		{Number: 1, Executor: "e1", Host: "h", PID: 42, StartedAt: model.UnixMilli(t0), EndedAt: model.UnixMilli(t0 + 5), Outcome: model.OutcomeFailed, ExitCode: &three, Error: "exit status 3", Output: "boom\n"},
		{Number: 2, Executor: "e2", StartedAt: model.UnixMilli(t0), EndedAt: model.UnixMilli(t0 + 9), Outcome: model.OutcomeLost, Error: "lost"},
		{Number: 7, Executor: "e3", StartedAt: model.UnixMilli(t0), Outcome: model.OutcomeSuccess, HTTPStatus: 204},
	}
	for _, want := range tests {
		want.ExecutionID = model.FormatID(99) + "-" + fmt.Sprint(want.Number)
		got, err := decodeAttempt(99, encodeAttempt(&want))
		if err != nil {
			t.Fatal(err)
		}
		same := got.Number == want.Number && got.Outcome == want.Outcome && deref(got.ExitCode) == deref(want.ExitCode) &&
			got.Error == want.Error && got.Output == want.Output && got.HTTPStatus == want.HTTPStatus &&
			got.ExecutionID == want.ExecutionID && got.StartedAt.Equal(want.StartedAt.Time) && got.EndedAt.Equal(want.EndedAt.Time) &&
			got.Executor == want.Executor && got.Host == want.Host && got.PID == want.PID
		if !same {
			t.Fatalf("round trip: got %+v, want %+v", got, want)
		}
	}
	if _, err := decodeAttempt(1, []byte{9}); err == nil {
		t.Fatal("corrupt record decoded")
	}
}

func deref(p *int) int {
	if p == nil {
		return -1
	}
	return *p
}
