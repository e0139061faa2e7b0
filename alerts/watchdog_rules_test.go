package alerts

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/ax-scheduler/ax/dispatch"
	"github.com/ax-scheduler/ax/fsm"
	"github.com/ax-scheduler/ax/fsm/command"
	"github.com/ax-scheduler/ax/model"
)

// ruleState is a state machine driven directly (no Raft) under the
// watchdog's rules.
type ruleState struct {
	t     testing.TB
	f     *fsm.FSM
	a     *Alerts
	disp  *dispatch.Dispatcher // the leader's dispatcher, for executor_lost (nil: not leading)
	index uint64
}

func newRuleState(t testing.TB) *ruleState {
	t.Helper()
	rs := &ruleState{t: t}
	f, err := fsm.Open(fsm.Config{Path: filepath.Join(t.TempDir(), "fsm.db"), NoSync: true, Logger: hclog.NewNullLogger(), Observer: ruleObserver{rs}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	rs.f = f
	rs.a = &Alerts{state: f, log: hclog.NewNullLogger(), quorum: &quorumWatch{}, cfg: Config{StuckAfter: 30 * time.Minute,
		SilenceGrace: time.Minute, OvertimeGrace: time.Minute, MemberGrace: 30 * time.Second, AnomalyWindow: time.Hour, Silence: 10 * time.Minute,
		Executors: func() Executors {
			if rs.disp == nil {
				return nil
			}
			return rs.disp
		}}}
	rs.a.feed = newWatchFeed(time.UnixMilli(t0ms), time.Hour)
	rs.apply(t0ms, command.TypeSetProto, command.SetProto{Proto: command.ProtoVersion})
	return rs
}

// ruleObserver feeds the watchdog's feed (and a rule test's dispatcher)
// from the state machine, as the agent's observer does.
type ruleObserver struct{ rs *ruleState }

func (o ruleObserver) TaskChanged(string)      {}
func (o ruleObserver) Scheduled(uint64, int64) {}
func (o ruleObserver) InstanceChanged(c fsm.InstanceChange) {
	o.rs.a.feed.observe(&c)
	if d := o.rs.disp; d != nil {
		d.InstanceChanged(c)
	}
}

var t0ms = time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC).UnixMilli()

// apply applies one command at leader time ms and returns its result.
func (rs *ruleState) apply(ms int64, typ command.Type, body any) *fsm.Result {
	rs.t.Helper()
	c, err := command.New(typ, "", "test", body)
	if err != nil {
		rs.t.Fatal(err)
	}
	c.Now, c.Node = ms, "n1"
	rs.index++
	res := rs.f.Apply(&raft.Log{Index: rs.index, Term: 1, Type: raft.LogCommand, Data: c.Encode()}).(*fsm.Result)
	if err := res.Decode(nil); err != nil {
		rs.t.Fatalf("%s: %v", typ, err)
	}
	return res
}

// step evaluates at ms, applies the findings and returns them.
func (rs *ruleState) step(ms int64) []command.AlertChange {
	rs.t.Helper()
	items, err := rs.a.evaluate(time.UnixMilli(ms))
	if err != nil {
		rs.t.Fatal(err)
	}
	if len(items) > 0 {
		rs.apply(ms, command.TypeAlertUpdate, command.AlertUpdate{Items: items})
	}
	return items
}

func (rs *ruleState) firing(id string) bool {
	_, ok := rs.f.FiringAlert(id)
	return ok
}

func (rs *ruleState) trigger(ms int64, task string) uint64 {
	var s model.Submitted
	if err := rs.apply(ms, command.TypeTrigger, command.Trigger{Task: task}).Decode(&s); err != nil {
		rs.t.Fatal(err)
	}
	id, _ := model.ParseID(s.ID)
	return id
}

// TestWatchdog_Rules: each rule raises once when its condition appears,
// refreshes (not re-raises) while it holds, and resolves when it clears.
func TestWatchdog_Rules(t *testing.T) {
	min := int64(60_000)
	t.Run("stuck_ready", func(t *testing.T) {
		rs := newRuleState(t)
		rs.apply(t0ms, command.TypePutTask, command.PutTask{Task: *eventTask("job")})
		id := rs.trigger(t0ms, "job")
		if items := rs.step(t0ms + 29*min); len(items) != 0 {
			t.Fatalf("raised early: %+v", items)
		}
		rs.step(t0ms + 31*min)
		if !rs.firing("stuck_ready:job") {
			t.Fatal("stuck_ready not raised")
		}
		if items := rs.step(t0ms + 31*min + 5000); len(items) != 0 {
			t.Errorf("re-proposed within the refresh period: %+v", items)
		}
		rs.apply(t0ms+32*min, command.TypeDecide, command.Decide{ID: id, Action: command.DecideCancel})
		rs.step(t0ms + 33*min)
		if rs.firing("stuck_ready:job") {
			t.Error("stuck_ready not resolved")
		}
	})
	t.Run("running_overtime", func(t *testing.T) {
		rs := newRuleState(t)
		tk := eventTask("job")
		tk.Policy.Timeout = model.Timeout(time.Minute)
		rs.apply(t0ms, command.TypePutTask, command.PutTask{Task: *tk})
		id := rs.trigger(t0ms, "job")
		rs.apply(t0ms, command.TypeLease, command.Lease{Executor: "e1", IDs: []uint64{id}, LeaseMs: 3_600_000})
		rs.step(t0ms + 2*min - 1000)
		if rs.firing("running_overtime:job") {
			t.Fatal("raised within timeout + grace")
		}
		rs.step(t0ms + 2*min + 1000)
		a, ok := rs.f.FiringAlert("running_overtime:job")
		if !ok || a.Subject.Instance != model.FormatID(id) || a.Details["executor"] != "e1" {
			t.Fatalf("alert %+v", a)
		}
		rs.apply(t0ms+3*min, command.TypeComplete, command.Complete{ID: id, Attempt: 1, Report: model.CompleteRequest{Executor: "e1", Success: true}})
		rs.step(t0ms + 3*min)
		if rs.firing("running_overtime:job") {
			t.Error("not resolved after the attempt ended")
		}
	})
	t.Run("deadline_missed", func(t *testing.T) {
		// Daily at 01:00 in Berlin, due within 2h or by 02:30, whichever
		// is first: fired 01:00 CET (00:00 UTC), its deadline is 02:30
		// CET (01:30 UTC); on 29 March (spring forward at 02:00) 02:30
		// does not exist: it is the instant after the gap, 03:30 CEST,
		// 01:30 UTC again (not 02:30 CEST, 00:30 UTC).
		rs := newRuleState(t)
		tk := &model.Task{Name: "nightly", Trigger: model.Trigger{Type: model.TriggerCron, Expression: "0 1 * * *", Timezone: "Europe/Berlin"},
			Action: model.Action{Type: model.ActionShell, Command: "true"},
			Policy: model.Policy{Deadline: &model.Deadline{Within: model.Duration(2 * time.Hour), By: "02:30"}}}
		rs.apply(t0ms, command.TypePutTask, command.PutTask{Task: *tk})
		for _, tc := range []struct {
			fire, deadline time.Time
		}{
			{time.Date(2026, 3, 3, 0, 0, 0, 0, time.UTC), time.Date(2026, 3, 3, 1, 30, 0, 0, time.UTC)},
			{time.Date(2026, 3, 29, 0, 0, 0, 0, time.UTC), time.Date(2026, 3, 29, 1, 30, 0, 0, time.UTC)},
		} {
			at := tc.fire.UnixMilli()
			var fr fsm.FireResult
			if err := rs.apply(at, command.TypeFire, command.Fire{Tasks: []command.TaskFire{{Task: "nightly", Version: 1, At: at}}}).Decode(&fr); err != nil || len(fr.Created) != 1 {
				t.Fatalf("fire %s: %+v %v", tc.fire, fr, err)
			}
			id, _ := model.ParseID(fr.Created[0])
			dl := tc.deadline.UnixMilli()
			rs.step(dl - 1000)
			if rs.firing("deadline_missed:nightly") {
				t.Fatalf("fire %s: raised before its deadline", tc.fire)
			}
			rs.step(dl + 1000)
			a, ok := rs.f.FiringAlert("deadline_missed:nightly")
			if !ok || a.Subject.Instance != model.FormatID(id) || a.Details["deadline"] != tc.deadline.Format(time.RFC3339) || a.Details["state"] != model.StateReady {
				t.Fatalf("fire %s: alert %+v, want the instance past its deadline %s", tc.fire, a, tc.deadline)
			}
			rs.apply(dl+2000, command.TypeLease, command.Lease{Executor: "e1", IDs: []uint64{id}, LeaseMs: 3_600_000})
			rs.apply(dl+3000, command.TypeComplete, command.Complete{ID: id, Attempt: 1, Report: model.CompleteRequest{Executor: "e1", Success: true}})
			rs.step(dl + 4000)
			if rs.firing("deadline_missed:nightly") {
				t.Fatalf("fire %s: not resolved once the late instance ended", tc.fire)
			}
		}
		if got := len(rs.a.newMisses); got != 0 {
			t.Errorf("%d new misses after the last evaluation, want 0", got)
		}
	})
	t.Run("task_silence and misfire", func(t *testing.T) {
		rs := newRuleState(t)
		tk := &model.Task{Name: "cron", Trigger: model.Trigger{Type: model.TriggerCron, Expression: "* * * * *"},
			Action: model.Action{Type: model.ActionShell, Command: "true"}}
		rs.apply(t0ms, command.TypePutTask, command.PutTask{Task: *tk})
		rs.apply(t0ms, command.TypeFire, command.Fire{Tasks: []command.TaskFire{{Task: "cron", Version: 1, At: t0ms}}})
		// Next fire t0+1m; window 1m, grace 1m: silent from t0+3m.
		rs.step(t0ms + 3*min - 1000)
		if rs.firing("task_silence:cron") {
			t.Fatal("raised within window + grace")
		}
		rs.step(t0ms + 3*min + 1000)
		if !rs.firing("task_silence:cron") {
			t.Fatal("task_silence not raised")
		}
		// The scheduler comes back: it misses t0+1m..t0+2m and fires t0+3m.
		rs.apply(t0ms+3*min+2000, command.TypeFire, command.Fire{Tasks: []command.TaskFire{{Task: "cron", Version: 1, At: t0ms + 3*min,
			Missed: 2, MissedFirst: t0ms + min, MissedLast: t0ms + 2*min}}})
		rs.step(t0ms + 3*min + 3000)
		if rs.firing("task_silence:cron") {
			t.Error("task_silence not resolved after the fire")
		}
		if !rs.firing("misfire:cron") {
			t.Error("misfire not raised")
		}
		rs.apply(t0ms+13*min+4000, command.TypeFire, command.Fire{Tasks: []command.TaskFire{{Task: "cron", Version: 1, At: t0ms + 13*min}}})
		rs.step(t0ms + 13*min + 5000)
		if rs.firing("misfire:cron") {
			t.Error("misfire not resolved after the quiet period")
		}
	})
	t.Run("task_silence allows for the jitter and ends with maxRuns", func(t *testing.T) {
		rs := newRuleState(t)
		tk := &model.Task{Name: "cron", Trigger: model.Trigger{Type: model.TriggerCron, Expression: "*/10 * * * *",
			MaxRuns: 2, Jitter: model.Duration(5 * time.Minute)}, Action: model.Action{Type: model.ActionShell, Command: "true"}}
		rs.apply(t0ms-min, command.TypePutTask, command.PutTask{Task: *tk})
		rs.apply(t0ms, command.TypeFire, command.Fire{Tasks: []command.TaskFire{{Task: "cron", Version: 1, At: t0ms}}})
		// Next fire t0+10m, due by t0+15m with its jitter; window 1m,
		// grace 1m: silent from t0+17m.
		rs.step(t0ms + 17*min - 1000)
		if rs.firing("task_silence:cron") {
			t.Fatal("raised within jitter + window + grace")
		}
		rs.step(t0ms + 17*min + 1000)
		if !rs.firing("task_silence:cron") {
			t.Fatal("task_silence not raised")
		}
		// Its second and last run: nothing is due after it.
		rs.apply(t0ms+17*min+2000, command.TypeFire, command.Fire{Tasks: []command.TaskFire{{Task: "cron", Version: 1, At: t0ms + 10*min}}})
		rs.step(t0ms + 60*min)
		if rs.firing("task_silence:cron") {
			t.Error("task_silence raised for a task whose maxRuns are used up")
		}
	})
	t.Run("instance_failed resolves on a later success", func(t *testing.T) {
		rs := newRuleState(t)
		rs.apply(t0ms, command.TypePutTask, command.PutTask{Task: *eventTask("job")})
		id := rs.trigger(t0ms, "job")
		rs.apply(t0ms, command.TypeLease, command.Lease{Executor: "e1", IDs: []uint64{id}, LeaseMs: 60_000})
		rs.apply(t0ms+1000, command.TypeComplete, command.Complete{ID: id, Attempt: 1, Report: model.CompleteRequest{Executor: "e1", Error: "boom", ExitCode: 1}})
		in, _ := rs.f.GetInstance(id)
		rs.apply(t0ms+2000, command.TypeAlertUpdate, command.AlertUpdate{Items: []command.AlertChange{failedAlert(in, eventTask("job"))}})
		a, ok := rs.f.FiringAlert("instance_failed:job")
		if !ok || a.Details["error"] != "boom" || a.Details["attempt"] != "1" || a.Details["maxAttempts"] != "1" {
			t.Fatalf("alert %+v", a)
		}
		rs.step(t0ms + 3000)
		if !rs.firing("instance_failed:job") {
			t.Fatal("resolved without a success")
		}
		ok2 := rs.trigger(t0ms+4000, "job")
		rs.apply(t0ms+4000, command.TypeLease, command.Lease{Executor: "e1", IDs: []uint64{ok2}, LeaseMs: 60_000})
		rs.apply(t0ms+5000, command.TypeComplete, command.Complete{ID: ok2, Attempt: 1, Report: model.CompleteRequest{Executor: "e1", Success: true}})
		rs.step(t0ms + 6000)
		if rs.firing("instance_failed:job") {
			t.Error("not resolved after a later success")
		}
	})
	t.Run("instance_failed follows a re-run's outcome", func(t *testing.T) {
		rs := newRuleState(t)
		rs.apply(t0ms, command.TypePutTask, command.PutTask{Task: *eventTask("job")})
		id := rs.trigger(t0ms, "job")
		run := func(ms int64, attempt int, ok bool) *model.Instance {
			t.Helper()
			rs.apply(ms, command.TypeLease, command.Lease{Executor: "e1", IDs: []uint64{id}, LeaseMs: 60_000})
			rs.apply(ms+500, command.TypeComplete, command.Complete{ID: id, Attempt: attempt, Report: model.CompleteRequest{Executor: "e1", Success: ok, Error: "boom", ExitCode: 1}})
			in, err := rs.f.GetInstance(id)
			if err != nil {
				t.Fatal(err)
			}
			return in
		}
		raise := func(ms int64, in *model.Instance) {
			t.Helper()
			rs.apply(ms, command.TypeAlertUpdate, command.AlertUpdate{Items: []command.AlertChange{failedAlert(in, eventTask("job"))}})
		}
		first := run(t0ms+1000, 1, false)
		raise(t0ms+2000, first)
		raise(t0ms+2500, first) // a repeated proposal of the same failure
		if a, _ := rs.f.FiringAlert("instance_failed:job"); a.Count != 1 {
			t.Fatalf("count %d after one failure, want 1", a.Count)
		}
		rs.apply(t0ms+3000, command.TypeRerun, command.Rerun{IDs: []uint64{id}})
		again := run(t0ms+4000, 2, false)
		if k1, k2 := failureKey(first), failureKey(again); k1 != model.FormatID(id) || k2 != k1+"/rerun1" {
			t.Fatalf("failure keys %q and %q, want the id, then the id with the re-run", k1, k2)
		}
		raise(t0ms+5000, again)
		if a, _ := rs.f.FiringAlert("instance_failed:job"); a.Count != 2 || a.Details["attempt"] != "2" {
			t.Fatalf("after the re-run failed again: count %d, attempt %s; want the alert raised again (2, attempt 2)", a.Count, a.Details["attempt"])
		}
		rs.step(t0ms + 6000)
		if !rs.firing("instance_failed:job") {
			t.Fatal("resolved without a success")
		}
		rs.apply(t0ms+7000, command.TypeRerun, command.Rerun{IDs: []uint64{id}})
		if in := run(t0ms+8000, 3, true); in.State != model.StateSuccess {
			t.Fatalf("the second re-run: %s", in.State)
		}
		rs.step(t0ms + 9000)
		if rs.firing("instance_failed:job") {
			t.Error("not resolved once the failed instance, re-run, succeeded")
		}
	})
}

// BenchmarkWatchdog_Evaluate: one evaluation with 10,000 cron tasks, each
// with one READY instance (so every task has an active instance to look
// at), nothing firing yet.
func BenchmarkWatchdog_Evaluate(b *testing.B) {
	rs := newRuleState(b)
	const n = 10_000
	var batch []*command.Command
	flush := func() {
		if len(batch) == 0 {
			return
		}
		c := command.EncodeBatch(t0ms, "n1", batch)
		rs.index++
		rs.f.Apply(&raft.Log{Index: rs.index, Term: 1, Type: raft.LogCommand, Data: c.Encode()})
		batch = nil
	}
	add := func(typ command.Type, body any) {
		c, err := command.New(typ, "", "bench", body)
		if err != nil {
			b.Fatal(err)
		}
		batch = append(batch, c)
		if len(batch) == 500 {
			flush()
		}
	}
	for i := 0; i < n; i++ {
		add(command.TypePutTask, command.PutTask{Task: model.Task{Name: fmt.Sprintf("task-%05d", i), Trigger: model.Trigger{Type: model.TriggerCron, Expression: "*/5 * * * *"},
			Action: model.Action{Type: model.ActionShell, Command: "true"}}})
	}
	flush()
	for i := 0; i < n; i++ {
		add(command.TypeFire, command.Fire{Tasks: []command.TaskFire{{Task: fmt.Sprintf("task-%05d", i), Version: 1, At: t0ms}}})
	}
	flush()
	now := time.UnixMilli(t0ms + 60_000)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := rs.a.evaluate(now); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/1000/(n/1000), "ms/1000tasks")
}

func eventTask(name string) *model.Task {
	return &model.Task{Name: name, Trigger: model.Trigger{Type: model.TriggerEvent}, Action: model.Action{Type: model.ActionShell, Command: "true"}}
}
