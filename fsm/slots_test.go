package fsm

import (
	"fmt"
	"math/rand"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	bolt "go.etcd.io/bbolt"

	"github.com/ax-scheduler/ax/model"
)

// auditSlots checks the slot invariant of f's state: each task's count of
// busy concurrency slots equals the number of its instances that hold one
// (READY, RUNNING, RETRYING, a mid-run WAITING_APPROVAL), and its count
// of queued instances equals its entries in the overlap=queue FIFO. So no
// finished instance holds a slot, and no slot is held twice.
func auditSlots(f *FSM) error {
	return f.view(func(tx *bolt.Tx) error {
		busy, queued, tasks, err := slotCounts(tx)
		if err != nil {
			return err
		}
		var bad []string
		w := &writer{tx: tx}
		for _, n := range tasks {
			st := w.loadState(n)
			if st.Inflight != busy[n] {
				bad = append(bad, fmt.Sprintf("task %s: %d slots busy, %d instances hold one", n, st.Inflight, busy[n]))
			}
			if st.Blocked != queued[n] {
				bad = append(bad, fmt.Sprintf("task %s: %d counted queued, %d in the queue", n, st.Blocked, queued[n]))
			}
		}
		bad = append(bad, auditRates(tx)...)
		if len(bad) > 0 {
			return fmt.Errorf("%s", strings.Join(bad, "; "))
		}
		return nil
	})
}

// newProtoFixture is newExecFixture at a given protocol, with no task.
func newProtoFixture(t *testing.T, proto int) *execFixture {
	t.Helper()
	fx := &execFixture{t: t, f: openTest(t, filepath.Join(t.TempDir(), "fsm.db"), true), now: t0}
	fx.a = &applier{t: t, f: fx.f}
	writeResult(t, fx.a.apply(cmd(t, CmdSetProto, "", t0, SetProto{Proto: proto})))
	return fx
}

func (fx *execFixture) putTask(name string, p model.Policy) {
	fx.t.Helper()
	task := model.Task{Name: name, Trigger: model.Trigger{Type: model.TriggerEvent},
		Action: model.Action{Type: model.ActionShell, Command: "true"}, Policy: p}
	if r := fx.do(CmdPutTask, PutTask{Task: task}); r.Err != nil {
		fx.t.Fatal(r.Err)
	}
}

func (fx *execFixture) triggerTask(task string) uint64 {
	fx.t.Helper()
	var s model.Submitted
	if err := fx.do(CmdTrigger, Trigger{Task: task}).Decode(&s); err != nil {
		fx.t.Fatal(err)
	}
	id, _ := model.ParseID(s.ID)
	return id
}

func (fx *execFixture) mustDo(typ CommandType, body any) *Result {
	fx.t.Helper()
	r := fx.do(typ, body)
	if r.Err != nil {
		fx.t.Fatalf("%s: %v", typ, r.Err)
	}
	return r
}

func (fx *execFixture) states(ids ...uint64) string {
	fx.t.Helper()
	var out []string
	for _, id := range ids {
		out = append(out, fx.inst(id).State)
	}
	return strings.Join(out, " ")
}

// midRunWaiting runs instance id to a mid-run approval request.
func (fx *execFixture) midRunWaiting(id uint64) {
	fx.t.Helper()
	fx.lease(id)
	fx.mustDo(CmdDecide, Decide{ID: id, Action: DecideRequestApproval, Attempt: fx.inst(id).Attempts, Comment: "go?"})
}

// TestFSM_MidRunReportFreesSlot: an attempt that ends while it waits for
// a mid-run approval (its script gave up, or finished anyway) frees its
// concurrency slot, whatever it ended as. Before protocol 6 the slot
// stayed busy for good, and every later instance of the task stayed
// BLOCKED; the state of protocol 5 is kept as it was.
func TestFSM_MidRunReportFreesSlot(t *testing.T) {
	reports := map[string]model.CompleteRequest{
		"failed":    {Executor: "e1", ExitCode: 1, Error: "exit status 1"},
		"succeeded": {Executor: "e1", Success: true},
		"retried":   {Executor: "e1", ExitCode: 1, Error: "exit status 1", Retryable: true},
	}
	for _, proto := range []int{protoSlots - 1, protoSlots} {
		for what, rep := range reports {
			t.Run(fmt.Sprintf("proto%d/%s", proto, what), func(t *testing.T) {
				fx := newProtoFixture(t, proto)
				fx.putTask("job", model.Policy{MaxConcurrency: 1, Overlap: "queue", MaxRetries: 1, RetryInterval: model.Duration(time.Second)})
				a := fx.triggerTask("job")
				fx.midRunWaiting(a)
				fx.mustDo(CmdComplete, Complete{ID: a, Attempt: 1, Report: rep})
				b := fx.triggerTask("job")
				got := fx.states(a, b)
				want := map[string]string{"failed": "FAILED READY", "succeeded": "SUCCESS READY", "retried": "RETRYING BLOCKED"}[what]
				if proto < protoSlots && what != "retried" {
					want = strings.Replace(want, "READY", "BLOCKED", 1) // the leak, as it was
				}
				if got != want {
					t.Fatalf("after the report and a new trigger: %s, want %s", got, want)
				}
				if err := auditSlots(fx.f); (err == nil) != (want != "FAILED BLOCKED" && want != "SUCCESS BLOCKED") {
					t.Fatalf("audit: %v", err)
				}
				if proto >= protoSlots && fx.inst(a).State == model.StateRetrying {
					// The retry runs normally, and approval is asked again.
					fx.now += 2000
					fx.mustDo(CmdFire, Fire{Instances: []uint64{a}})
					fx.midRunWaiting(a)
					fx.mustDo(CmdDecide, Decide{ID: a, Action: DecideApprove})
					fx.complete(a, true, false)
					if got := fx.states(a, b); got != "SUCCESS READY" {
						t.Fatalf("after the retry: %s", got)
					}
					if err := auditSlots(fx.f); err != nil {
						t.Fatal(err)
					}
				}
			})
		}
	}
}

// TestFSM_SetProtoRecountsSlots: a slot leaked at protocol 5 is freed
// when the cluster's protocol is raised to 6: the recount gives it to the
// oldest queued instance and records why on the task.
func TestFSM_SetProtoRecountsSlots(t *testing.T) {
	fx := newProtoFixture(t, protoSlots-1)
	fx.putTask("job", model.Policy{MaxConcurrency: 2, Overlap: "queue"})
	fx.putTask("other", model.Policy{MaxConcurrency: 1, Overlap: "queue"})
	for range 2 {
		id := fx.triggerTask("job")
		fx.midRunWaiting(id)
		fx.mustDo(CmdComplete, Complete{ID: id, Attempt: 1, Report: model.CompleteRequest{Executor: "e1", ExitCode: 1, Error: "gave up"}})
	}
	b, c, d := fx.triggerTask("job"), fx.triggerTask("job"), fx.triggerTask("job")
	running := fx.triggerTask("other")
	fx.lease(running)
	queued := fx.triggerTask("other")
	if got := fx.states(b, c, d, running, queued); got != "BLOCKED BLOCKED BLOCKED RUNNING BLOCKED" {
		t.Fatalf("before the upgrade: %s", got)
	}
	if err := auditSlots(fx.f); err == nil || !strings.Contains(err.Error(), "task job: 2 slots busy, 0 instances hold one") {
		t.Fatalf("audit before the upgrade: %v, want the leak", err)
	}
	fx.mustDo(CmdSetProto, SetProto{Proto: protoSlots})
	if got := fx.states(b, c, d, running, queued); got != "READY READY BLOCKED RUNNING BLOCKED" {
		t.Fatalf("after set_proto %d: %s, want the two oldest queued started and the rest as they were", protoSlots, got)
	}
	if err := auditSlots(fx.f); err != nil {
		t.Fatal(err)
	}
	ev, err := fx.f.TaskEvents("job")
	if err != nil {
		t.Fatal(err)
	}
	if n := len(ev.Events); n == 0 || ev.Events[n-1].Type != "slots_recounted" || !strings.Contains(ev.Events[n-1].Message, "busy 0, was 2") {
		t.Fatalf("task events %+v, want slots_recounted", ev.Events)
	}
	if ev, _ := fx.f.TaskEvents("other"); len(ev.Events) != 0 {
		t.Errorf("a task whose counts were right got events %+v", ev.Events)
	}
	// A second set_proto finds nothing to correct.
	n := len(ev.Events)
	fx.mustDo(CmdSetProto, SetProto{Proto: protoSlots})
	if ev, _ := fx.f.TaskEvents("job"); len(ev.Events) != n {
		t.Fatalf("a second set_proto recounted again: %+v", ev.Events[n:])
	}
}

// TestFSM_DeletedTaskKeepsRunningSlots: attempts of a deleted task keep
// their slots counted, and the task created again under its name starts
// with them (protocol 6): its first instance waits for the old attempt
// rather than running beside it, and the old attempt's end frees the
// slot it took, not one of the new task's.
func TestFSM_DeletedTaskKeepsRunningSlots(t *testing.T) {
	fx := newProtoFixture(t, protoSlots)
	p := model.Policy{MaxConcurrency: 1, Overlap: "queue"}
	fx.putTask("job", p)
	old := fx.triggerTask("job")
	fx.lease(old)
	fx.mustDo(CmdDeleteTask, TaskRef{Name: "job"})
	if err := auditSlots(fx.f); err != nil {
		t.Fatalf("after the delete: %v", err)
	}
	fx.putTask("job", p)
	b := fx.triggerTask("job")
	if got := fx.states(old, b); got != "RUNNING BLOCKED" {
		t.Fatalf("after re-creating the task: %s", got)
	}
	fx.complete(old, true, false)
	if got := fx.states(old, b); got != "SUCCESS READY" {
		t.Fatalf("after the old attempt ended: %s", got)
	}
	if err := auditSlots(fx.f); err != nil {
		t.Fatal(err)
	}
}

// TestFSM_StoppedAttemptKeepsOutput: the report an executor sends for an
// attempt an operator terminated, or whose mid-run approval was rejected
// or canceled, adds the attempt's output (and exit code and pid) to its
// record, once; the instance stays as the decision left it. Before
// protocol 6 the report was refused and the output lost, and a rejected
// mid-run approval left no attempt record.
func TestFSM_StoppedAttemptKeepsOutput(t *testing.T) {
	for _, tc := range []struct {
		decision, outcome, state string
		midRun                   bool
	}{
		{DecideTerminate, model.OutcomeTerminated, model.StateTerminated, false},
		{DecideTerminate, model.OutcomeTerminated, model.StateTerminated, true},
		{DecideReject, model.OutcomeCanceled, model.StateCanceled, true},
		{DecideCancel, model.OutcomeCanceled, model.StateCanceled, true},
	} {
		for _, proto := range []int{protoSlots - 1, protoSlots} {
			t.Run(fmt.Sprintf("%s/midRun=%v/proto%d", tc.decision, tc.midRun, proto), func(t *testing.T) {
				fx := newProtoFixture(t, proto)
				fx.putTask("job", model.Policy{})
				id := fx.triggerTask("job")
				if tc.midRun {
					fx.midRunWaiting(id)
				} else {
					fx.lease(id)
				}
				fx.mustDo(CmdDecide, Decide{ID: id, Action: tc.decision, Comment: "stop"})
				// The executor learns it from its heartbeat, in words
				// worker.stopOver knows: a CANCELED instance's script gets
				// a moment to run its rejection path.
				var hr HeartbeatResult
				if err := fx.do(CmdHeartbeat, Heartbeat{Executor: "e1", Items: []AttemptRef{{ID: id, Attempt: 1}}, LeaseMs: 10_000}).Decode(&hr); err != nil ||
					len(hr.Stop) != 1 || hr.Stop[0].Reason != "instance is "+tc.state {
					t.Fatalf("heartbeat after the decision: %+v, %v; want a stop saying the instance is %s", hr, err, tc.state)
				}
				out := strings.Repeat("line\n", 300) + "line 8 of 60\n"
				rep := Complete{ID: id, Attempt: 1, Report: model.CompleteRequest{Executor: "e1", PID: 4242, ExitCode: -1,
					Canceled: true, Error: "stopped: instance is " + tc.state, Output: out}}
				if r := fx.do(CmdComplete, rep); proto < protoSlots {
					if r.Err == nil || r.Err.Code != model.CodeConflict {
						t.Fatalf("report at protocol %d: %v, want the old conflict", proto, r.Err)
					}
					return
				} else if r.Err != nil {
					t.Fatalf("report: %v", r.Err)
				}
				in := fx.inst(id)
				if in.State != tc.state || len(in.AttemptList) != 1 {
					t.Fatalf("instance %s with attempts %+v, want %s with one", in.State, in.AttemptList, tc.state)
				}
				a := in.AttemptList[0]
				if a.Outcome != tc.outcome || !strings.HasSuffix(a.Output, "line 8 of 60\n") || len(a.Output) != 1024 ||
					a.PID != 4242 || a.ExitCode == nil || *a.ExitCode != -1 || !strings.Contains(a.Error, "by tester") {
					t.Fatalf("attempt %+v", a)
				}
				l, err := fx.f.Log(id)
				if err != nil || l.Output != out {
					t.Fatalf("log %q (%v), want the whole output", l.Output, err)
				}
				// Once: a second report (a retried delivery under another
				// request id) changes nothing and is refused as before.
				rep.Report.Output = "other"
				if r := fx.do(CmdComplete, rep); r.Err == nil || r.Err.Code != model.CodeConflict {
					t.Fatalf("second report: %v, want conflict", r.Err)
				}
				if l, _ := fx.f.Log(id); l.Output != out {
					t.Fatalf("second report changed the log to %q", l.Output)
				}
				// A report from another executor, or of another attempt,
				// adds nothing either.
				for _, c := range []Complete{{ID: id, Attempt: 1, Report: model.CompleteRequest{Executor: "e2", Output: "x"}},
					{ID: id, Attempt: 2, Report: model.CompleteRequest{Executor: "e1", Output: "x"}}} {
					if r := fx.f.Precheck(mustCmd(t, CmdComplete, c)); r == nil || r.Err == nil {
						t.Fatalf("precheck let %+v through", c)
					}
				}
			})
		}
	}
}

func mustCmd(t *testing.T, typ CommandType, body any) *Command {
	t.Helper()
	c := cmd(t, typ, "", t0, body)
	c.Node = "n1"
	return c
}

// TestPrecheck_LateOutput: Precheck lets a stopped attempt's report with
// output through to the log (apply attaches it) and still refuses one
// without output.
func TestPrecheck_LateOutput(t *testing.T) {
	fx := newProtoFixture(t, protoSlots)
	fx.putTask("job", model.Policy{})
	id := fx.triggerTask("job")
	fx.lease(id)
	fx.mustDo(CmdDecide, Decide{ID: id, Action: DecideTerminate})
	with := Complete{ID: id, Attempt: 1, Report: model.CompleteRequest{Executor: "e1", Output: "partial"}}
	if r := fx.f.Precheck(mustCmd(t, CmdComplete, with)); r != nil {
		t.Fatalf("precheck answered %+v, want the report logged", r)
	}
	without := with
	without.Report.Output = ""
	if r := fx.f.Precheck(mustCmd(t, CmdComplete, without)); r == nil || r.Err == nil || r.Err.Code != model.CodeConflict {
		t.Fatalf("precheck of a report without output: %+v, want conflict", r)
	}
	batch := &Command{Type: CmdCompleteBatch, Actor: "executor:e1", Node: "n1", Now: t0, Body: EncodeCompleteBatch([]Complete{with})}
	if r := fx.f.Precheck(batch); r != nil {
		t.Fatalf("precheck of the batch answered %+v, want it logged", r)
	}
}

// slotGen drives instances of a few tasks through their lives with
// commands that mostly apply: it reads each instance before choosing what
// to do with it.
type slotGen struct {
	t   *testing.T
	fx  *execFixture
	rng *rand.Rand
	ids []uint64
	log []string // what was applied, for a failure's report
	// tasks are the tasks it drives (slotTasks when nil).
	tasks []string
}

var slotTasks = []string{"q1", "q2", "skip", "gate"}

func (g *slotGen) policy(task string) model.Policy {
	retry := model.Duration(time.Second)
	switch task {
	case "q1":
		return model.Policy{MaxConcurrency: 1, Overlap: "queue", MaxRetries: 1, RetryInterval: retry}
	case "q2":
		return model.Policy{MaxConcurrency: 1 + g.rng.Intn(3), Overlap: "queue", MaxRetries: g.rng.Intn(2), RetryInterval: retry}
	case "skip":
		return model.Policy{MaxConcurrency: 1, Overlap: "skip", MaxRetries: 1, RetryInterval: retry}
	case "rate": // protocol 8: a rate limit, in a pool with its own
		return model.Policy{MaxConcurrency: 1 + g.rng.Intn(4), Overlap: "queue", MaxRetries: 1, RetryInterval: retry,
			RateLimit: &model.RateLimit{Count: 1 + g.rng.Intn(2), Per: model.Duration(5 * time.Second), Burst: g.rng.Intn(2)}, Pool: "rp"}
	case "rskip":
		return model.Policy{MaxConcurrency: 2, Overlap: "queue", RateLimit: &model.RateLimit{Count: 1, Per: model.Duration(3 * time.Second), OnLimit: "skip"}, Pool: "rp"}
	case "pooled":
		return model.Policy{MaxConcurrency: 2, Overlap: "queue", MaxRetries: 1, RetryInterval: retry, Pool: "rp"}
	}
	return model.Policy{Approval: "before_run", MaxConcurrency: 1, Overlap: "queue", MaxRetries: 1, RetryInterval: retry}
}

func (g *slotGen) report(executor string) model.CompleteRequest {
	r := model.CompleteRequest{Executor: executor, Output: "out"}
	switch g.rng.Intn(4) {
	case 0:
		r.Success = true
	case 1:
		r.ExitCode, r.Error, r.Retryable = 1, "failed", true
	case 2:
		r.ExitCode, r.Error, r.Canceled = -1, "stopped", true
	default:
		r.ExitCode, r.Error = 2, "boom"
	}
	return r
}

// step applies one command.
func (g *slotGen) step() {
	fx, rng := g.fx, g.rng
	tasks := g.tasks
	if tasks == nil {
		tasks = slotTasks
	}
	task := tasks[rng.Intn(len(tasks))]
	var typ CommandType
	var body any
	switch n := rng.Intn(20); {
	case n == 0:
		typ, body = CmdPutTask, PutTask{Task: model.Task{Name: task, Trigger: model.Trigger{Type: model.TriggerEvent},
			Action: model.Action{Type: model.ActionShell, Command: "true"}, Policy: g.policy(task)}}
	case n == 1 && rng.Intn(3) == 0:
		typ, body = CmdDeleteTask, TaskRef{Name: task}
	case n < 5 || len(g.ids) == 0:
		typ, body = CmdTrigger, Trigger{Task: task}
	default:
		id := g.ids[rng.Intn(len(g.ids))]
		in, err := fx.f.GetInstance(id)
		if err != nil {
			typ, body = CmdPrune, Prune{IDs: []uint64{id}}
			break
		}
		typ, body = g.commandFor(id, in)
	}
	r := fx.do(typ, body)
	g.log = append(g.log, fmt.Sprintf("%s %+v -> %v", typ, body, r.Err))
	if typ == CmdTrigger && r.Err == nil {
		var s model.Submitted
		if err := r.Decode(&s); err == nil {
			id, _ := model.ParseID(s.ID)
			g.ids = append(g.ids, id)
		}
	}
}

// commandFor picks a command for instance id, which is in.
func (g *slotGen) commandFor(id uint64, in *model.Instance) (CommandType, any) {
	fx, rng := g.fx, g.rng
	executor := in.Executor
	if executor == "" || rng.Intn(10) == 0 {
		executor = []string{"e1", "e2"}[rng.Intn(2)]
	}
	attempt := in.Attempts
	if rng.Intn(10) == 0 {
		attempt++
	}
	decide := func(actions ...string) (CommandType, any) {
		return CmdDecide, Decide{ID: id, Action: actions[rng.Intn(len(actions))], Attempt: attempt, Comment: "c"}
	}
	complete := func() (CommandType, any) {
		return CmdComplete, Complete{ID: id, Attempt: max(attempt, 1), Report: g.report(executor)}
	}
	switch in.State {
	case model.StateReady:
		if rng.Intn(4) == 0 {
			return decide(DecideCancel)
		}
		return CmdLease, Lease{Executor: executor, Host: "h", IDs: []uint64{id}, LeaseMs: 10_000}
	case model.StateRunning:
		switch rng.Intn(6) {
		case 0:
			return decide(DecideRequestApproval)
		case 1:
			return decide(DecideTerminate, DecideCancel)
		case 2:
			fx.now += 11_000
			return CmdExpire, Expire{Items: []ExpireItem{{ID: id, Attempt: attempt}}}
		case 3:
			return CmdHeartbeat, Heartbeat{Executor: executor, Items: []AttemptRef{{ID: id, Attempt: attempt}}, LeaseMs: 10_000}
		}
		return complete()
	case model.StateWaitingApproval:
		if rng.Intn(3) == 0 {
			fx.now += 11_000 // a mid-run approval is not expired: its executor renews it
			return CmdExpire, Expire{Items: []ExpireItem{{ID: id, Attempt: attempt}}}
		}
		if rng.Intn(2) == 0 {
			return complete()
		}
		return decide(DecideApprove, DecideReject, DecideCancel, DecideTerminate)
	case model.StateRetrying:
		if rng.Intn(4) == 0 {
			return decide(DecideCancel)
		}
		fx.now += 2000
		return CmdFire, Fire{Instances: []uint64{id}}
	case model.StateBlocked:
		if !in.RetryAt.IsZero() && rng.Intn(3) > 0 { // waiting for its turn under a rate limit
			early := int64(0)
			if rng.Intn(4) == 0 {
				early = int64(rng.Intn(1000)) // a fire before its turn changes nothing
			}
			fx.now = max(fx.now, in.RetryAt.UnixMilli()-early)
			return CmdFire, Fire{Instances: []uint64{id}}
		}
		return decide(DecideCancel, DecideApprove)
	}
	switch rng.Intn(4) {
	case 0:
		return CmdPrune, Prune{IDs: []uint64{id}}
	case 1:
		return CmdRerun, Rerun{IDs: []uint64{id}}
	}
	return complete() // a late report of a finished attempt
}

// TestFSM_SlotInvariant is the property "no finished instance holds a
// slot" (auditSlots) after every command of random instance lives: mid-run
// approvals approved, rejected, canceled, terminated and ended by their
// own report, expiries, retries, overlap queue and skip, before-run
// approvals, tasks deleted and created again with attempts running,
// retention. Half the runs start at protocol 5, where the old leak is
// allowed, and raise the protocol midway: from then on the invariant
// holds.
func TestFSM_SlotInvariant(t *testing.T) {
	for seed := int64(1); seed <= 16; seed++ {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			from := protoSlots
			if seed%2 == 0 {
				from = protoSlots - 1
			}
			fx := newProtoFixture(t, from)
			g := &slotGen{t: t, fx: fx, rng: rand.New(rand.NewSource(seed))}
			for _, task := range slotTasks {
				fx.putTask(task, g.policy(task))
			}
			checked := 0
			for i := range 600 {
				if i == 300 && from < protoSlots {
					fx.mustDo(CmdSetProto, SetProto{Proto: protoSlots})
					g.log = append(g.log, "set_proto 6")
				}
				g.step()
				if fx.f.Proto() < protoSlots {
					continue
				}
				checked++
				if err := auditSlots(fx.f); err != nil {
					tail := g.log[max(len(g.log)-8, 0):]
					t.Fatalf("after command %d: %v\nlast commands:\n%s", i+1, err, strings.Join(tail, "\n"))
				}
			}
			if checked < 300 {
				t.Fatalf("checked %d states, want at least 300", checked)
			}
		})
	}
}

// TestFSM_SlotInvariantRate is TestFSM_SlotInvariant at protocol 8 with
// rate limits (ratelimit.go): tasks with their own limit (wait, skip) in
// a pool with one, a task of the pool without one, and instances waiting
// for their turn fired (sometimes early), canceled, their tasks deleted
// and changed; auditSlots also checks the limiters' FIFOs, the due index
// of the waiters and the pool's busy count.
func TestFSM_SlotInvariantRate(t *testing.T) {
	waits, turns := 0, 0
	for seed := int64(1); seed <= 12; seed++ {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			fx := newProtoFixture(t, proto8)
			fx.mustDo(CmdPutPool, PutPool{Pool: model.Pool{Name: "rp", Slots: 4,
				RateLimit: &model.RateLimit{Count: 2, Per: model.Duration(2 * time.Second)}}})
			g := &slotGen{t: t, fx: fx, rng: rand.New(rand.NewSource(seed)), tasks: []string{"q1", "rate", "rskip", "pooled"}}
			for _, task := range g.tasks {
				fx.putTask(task, g.policy(task))
			}
			for i := range 600 {
				g.step()
				if err := auditSlots(fx.f); err != nil {
					tail := g.log[max(len(g.log)-8, 0):]
					t.Fatalf("after command %d: %v\nlast commands:\n%s", i+1, err, strings.Join(tail, "\n"))
				}
			}
			for _, id := range g.ids {
				in, err := fx.f.GetInstance(id)
				if err != nil {
					continue // pruned
				}
				for _, e := range in.Events {
					waits += strings.Count(e.Message, "rate limit of")
					turns += strings.Count(e.Message, "its turn under the rate limit came")
				}
			}
		})
	}
	if waits < 100 || turns < 40 {
		t.Fatalf("%d waits for a rate limit and %d turns, want at least 100 and 40", waits, turns)
	}
	t.Logf("%d waits for a rate limit, %d turns", waits, turns)
}

// TestFSM_SlotInvariantRandomLog checks the invariant after every entry
// of the determinism test's random logs (every command type, guessed ids,
// batches), at protocol 6.
func TestFSM_SlotInvariantRandomLog(t *testing.T) {
	for seed := int64(1); seed <= 3; seed++ {
		g := newLogGen(seed, 0)
		entries := g.scripted(t)
		for range 800 {
			entries = append(entries, g.entry(t))
		}
		f := openTest(t, filepath.Join(t.TempDir(), "fsm.db"), true)
		for i, e := range entries {
			f.ApplyBatch(entries[i : i+1])
			if f.Proto() < protoSlots {
				continue
			}
			if err := auditSlots(f); err != nil {
				t.Fatalf("seed %d, after entry %d (%s): %v", seed, e.Index, commandType(e.Data), err)
			}
		}
	}
}

func commandType(data []byte) string {
	if len(data) == 0 {
		return "?"
	}
	return CommandType(data[0]).String()
}

// BenchmarkFSM_RecountSlots times the apply of the set_proto that raises
// a state to protocol 6, which recounts every task's slots: 100 tasks of
// maxConcurrency 1 with 1,000 fired instances each (100 READY, 99,900
// BLOCKED in their queues).
func BenchmarkFSM_RecountSlots(b *testing.B) {
	for range b.N {
		b.StopTimer()
		f, err := Open(Config{Path: filepath.Join(b.TempDir(), "fsm.db"), NoSync: true})
		if err != nil {
			b.Fatal(err)
		}
		index := uint64(0)
		apply := func(typ CommandType, body any) *Result {
			c, err := NewCommand(typ, "", "bench", body)
			if err != nil {
				b.Fatal(err)
			}
			if typ == CmdSubmit {
				c.Body = EncodeSubmit(body.(*Submit))
			}
			c.Now, c.Node = t0, "n1"
			index++
			r, ok := f.ApplyBatch([]*raft.Log{{Index: index, Term: 1, Type: raft.LogCommand, Data: c.Encode()}})[0].(*Result)
			if !ok || r.Err != nil {
				b.Fatalf("%s: %+v", typ, r)
			}
			return r
		}
		apply(CmdSetProto, SetProto{Proto: protoSlots - 1})
		var ids []uint64
		for i := range 100 {
			task := fmt.Sprintf("t%d", i)
			apply(CmdPutTask, PutTask{Task: model.Task{Name: task, Trigger: model.Trigger{Type: model.TriggerEvent},
				Action: model.Action{Type: model.ActionShell, Command: "true"}, Policy: model.Policy{MaxConcurrency: 1, Overlap: "queue"}}})
			sr, err := DecodeSubmitResult(apply(CmdSubmit, &Submit{Task: task, Items: make([]SubmitItem, 1000)}))
			if err != nil {
				b.Fatal(err)
			}
			for _, s := range sr.Instances {
				id, _ := model.ParseID(s.ID)
				ids = append(ids, id)
			}
		}
		for len(ids) > 0 {
			n := min(len(ids), 10_000)
			apply(CmdFire, Fire{Instances: ids[:n]})
			ids = ids[n:]
		}
		if f.ActiveCount() != 100_000 {
			b.Fatalf("%d active instances, want 100,000", f.ActiveCount())
		}
		b.StartTimer()
		apply(CmdSetProto, SetProto{Proto: protoSlots})
		b.StopTimer()
		if err := auditSlots(f); err != nil {
			b.Fatal(err)
		}
		f.Close()
	}
}
