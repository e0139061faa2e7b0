package fsm

import (
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/model"
)

// windowTask is a per-second cron task with the given trigger limits.
func windowTask(name string, tr model.Trigger) model.Task {
	t := cronTask(name, "* * * * * *")
	tr.Type, tr.Expression = t.Trigger.Type, t.Trigger.Expression
	t.Trigger = tr
	return t
}

// fireAt proposes one fire of task at at (ms) with a jitter and returns
// what it did.
func (fx *policyFixture) fireAt(task string, at, jitter int64) FireResult {
	fx.t.Helper()
	tk, err := fx.f.GetTask(task)
	if err != nil {
		fx.t.Fatal(err)
	}
	var fr FireResult
	if err := fx.do(CmdFire, "", Fire{Tasks: []TaskFire{{Task: task, Version: tk.Version, At: at,
		Key: task + "@" + model.UnixMilli(at).Format(model.TimeLayout), Jitter: jitter}}}).Decode(&fr); err != nil {
		fx.t.Fatal(err)
	}
	return fr
}

func (fx *policyFixture) runs(task string) uint64 {
	fx.t.Helper()
	tk, err := fx.f.GetTask(task)
	if err != nil {
		fx.t.Fatal(err)
	}
	return tk.Runs
}

func msTime(ms int64) *model.Time { t := model.UnixMilli(ms); return &t }

// TestFSM_Proto7Gate: before the cluster reaches protocol 7, a task using
// a protocol 7 trigger field is refused (failed_precondition naming it)
// by Precheck and by apply; interval's startAt, older, is not.
func TestFSM_Proto7Gate(t *testing.T) {
	fields := map[string]model.Trigger{
		"trigger.startAt": {StartAt: msTime(t0)},
		"trigger.endAt":   {EndAt: msTime(t0 + 60_000)},
		"trigger.maxRuns": {MaxRuns: 3},
		"trigger.jitter":  {Jitter: model.Duration(500 * time.Millisecond)},
	}
	for field, tr := range fields {
		t.Run(field, func(t *testing.T) {
			fx := newPolicyFixture(t, 6)
			task := windowTask("a", tr)
			pre := fx.f.Precheck(cmd(t, CmdPutTask, "", fx.now, PutTask{Task: task}))
			res := fx.put(task)
			for what, r := range map[string]*Result{"precheck": pre, "apply": res} {
				if r == nil || r.Err == nil || r.Err.Code != model.CodePrecondition || r.Err.Field != field ||
					!strings.Contains(r.Err.Message, "needs protocol 7, the cluster is at protocol 6") {
					t.Errorf("%s at protocol 6: got %+v, want failed_precondition on %s", what, r, field)
				}
			}
			if _, err := fx.f.GetTask("a"); !errors.Is(err, model.ErrNotFound) {
				t.Errorf("refused task stored: %v", err)
			}
			writeResult(t, fx.do(CmdSetProto, "", SetProto{Proto: 7}))
			if r := fx.f.Precheck(cmd(t, CmdPutTask, "", fx.now, PutTask{Task: task})); r != nil && r.Err != nil {
				t.Errorf("precheck at protocol 7: %v", r.Err)
			}
			fx.mustPut(task)
		})
	}
	fx := newPolicyFixture(t, 6)
	iv := cronTask("iv", "")
	iv.Trigger = model.Trigger{Type: model.TriggerInterval, Every: model.Duration(time.Minute), StartAt: msTime(t0)}
	fx.mustPut(iv)
}

// TestFSM_MaxRuns: from protocol 7 the state machine counts the fires a
// trigger made and creates none beyond maxRuns, whatever the leader
// proposes (a new leader re-proposing, catch-up); a skipped fire, a
// manual trigger and a backfill are not counted and not limited; the
// count survives a snapshot and restore; raising maxRuns lets it fire
// again.
func TestFSM_MaxRuns(t *testing.T) {
	fx := newPolicyFixture(t, 7)
	task := windowTask("m", model.Trigger{MaxRuns: 3})
	task.Policy = model.Policy{MaxConcurrency: 1, Overlap: "skip"}
	fx.mustPut(task)
	at := t0 + 1000
	created := func(fr FireResult) int { return len(fr.Created) }
	if n := created(fx.fireAt("m", at, 0)); n != 1 || fx.runs("m") != 1 {
		t.Fatalf("first fire: created %d, runs %d", n, fx.runs("m"))
	}
	// The first instance holds the only slot: the next fire is SKIPPED,
	// and not counted.
	fr := fx.fireAt("m", at+1000, 0)
	id, _ := model.ParseID(fr.Created[0])
	if st := fx.inst(id).State; st != model.StateSkipped || fx.runs("m") != 1 {
		t.Fatalf("skipped fire: state %s, runs %d; want SKIPPED and 1", st, fx.runs("m"))
	}
	first, _ := model.ParseID(fx.instancesOf("m")[0].ID)
	fx.run(first, true, "")
	// A manual trigger and a backfill neither count nor are limited.
	fx.trigger("m")
	fx.do(CmdBackfill, "", Backfill{Task: "m", Version: 1, At: []int64{t0 - 5000}, Keys: []string{"bf"}})
	if fx.runs("m") != 1 {
		t.Fatalf("runs %d after a trigger and a backfill, want 1", fx.runs("m"))
	}
	runReady := func() {
		for _, l := range fx.instancesOf("m") {
			if id, _ := model.ParseID(l.ID); l.State == model.StateReady || l.State == model.StateBlocked {
				fx.run(id, true, "")
			}
		}
	}
	for _, ms := range []int64{2000, 3000} {
		runReady()
		if n := created(fx.fireAt("m", at+ms, 0)); n != 1 {
			t.Fatalf("fire at +%d: created %d", ms, n)
		}
	}
	if fx.runs("m") != 3 {
		t.Fatalf("runs %d, want 3", fx.runs("m"))
	}
	// Beyond maxRuns: ignored, every time.
	for _, ms := range []int64{4000, 5000} {
		if fr := fx.fireAt("m", at+ms, 0); len(fr.Created) != 0 || fr.Ignored != 1 {
			t.Fatalf("fire at +%d beyond maxRuns: %+v", ms, fr)
		}
	}
	fx.trigger("m") // still allowed
	if fx.runs("m") != 3 {
		t.Fatalf("runs %d after maxRuns, want 3", fx.runs("m"))
	}

	// The count is state: a snapshot carries it.
	dst := restoredCopy(t, fx.f)
	if tk, err := dst.GetTask("m"); err != nil || tk.Runs != 3 {
		t.Fatalf("restored task: %+v, %v; want runs 3", tk, err)
	}
	if got, want := dump(t, dst), dump(t, fx.f); got != want {
		t.Fatal("restored state differs")
	}
	rfx := &policyFixture{t: t, f: dst, a: &applier{t: t, f: dst, index: dst.AppliedIndex()}, now: fx.now}
	if fr := rfx.fireAt("m", at+6000, 0); len(fr.Created) != 0 {
		t.Fatalf("restored replica fired beyond maxRuns: %+v", fr)
	}

	// Raising maxRuns (a trigger change) lets it fire again, from the
	// change on; the count goes on.
	task.Trigger.MaxRuns = 4
	fx.mustPut(task)
	runReady()
	if fr := fx.fireAt("m", at+7000, 0); len(fr.Created) != 1 || fx.runs("m") != 4 {
		t.Fatalf("after raising maxRuns: %+v, runs %d", fr, fx.runs("m"))
	}
	if fr := fx.fireAt("m", at+8000, 0); len(fr.Created) != 0 {
		t.Fatalf("fired beyond the raised maxRuns: %+v", fr)
	}
	// Deleting the task forgets the count.
	fx.do(CmdDeleteTask, "", TaskRef{Name: "m"})
	fx.mustPut(task)
	if fx.runs("m") != 0 {
		t.Fatalf("re-created task: runs %d, want 0", fx.runs("m"))
	}
}

// TestFSM_FireWindow: from protocol 7 a fire outside the trigger's window
// creates nothing (and leaves the watermark); before it, fire does not
// look at the window (an interval's startAt, the one window field older
// releases stored, bounded only the leader's schedule).
func TestFSM_FireWindow(t *testing.T) {
	for _, proto := range []int{6, 7} {
		fx := newPolicyFixture(t, proto)
		iv := cronTask("iv", "")
		iv.Trigger = model.Trigger{Type: model.TriggerInterval, Every: model.Duration(time.Second), StartAt: msTime(t0 + 60_000)}
		fx.mustPut(iv)
		fr := fx.fireAt("iv", t0+30_000, 0)
		if want := map[int]int{6: 1, 7: 0}[proto]; len(fr.Created) != want {
			t.Errorf("protocol %d: a fire before startAt created %d, want %d", proto, len(fr.Created), want)
		}
	}
	fx := newPolicyFixture(t, 7)
	fx.mustPut(windowTask("w", model.Trigger{StartAt: msTime(t0 + 10_000), EndAt: msTime(t0 + 20_000)}))
	for _, c := range []struct {
		at      int64
		created int
	}{{t0 + 9_999, 0}, {t0 + 10_000, 1}, {t0 + 20_000, 1}, {t0 + 20_001, 0}} {
		if fr := fx.fireAt("w", c.at, 0); len(fr.Created) != c.created {
			t.Errorf("fire at start%+d ms: created %d, want %d", c.at-t0-10_000, len(fr.Created), c.created)
		}
	}
	if ts, _ := fx.f.TaskSchedule("w"); ts.Watermark != t0+20_000 {
		t.Errorf("watermark start%+d ms, want the last fire in the window", ts.Watermark-t0-10_000)
	}
}

// TestFSM_FireJitter: the jitter a fire carries is kept on its instance,
// said in its fired event and why, and measured out of its lateness; a
// jitter the task does not allow is dropped.
func TestFSM_FireJitter(t *testing.T) {
	fx := newPolicyFixture(t, 7)
	fx.mustPut(windowTask("j", model.Trigger{Jitter: model.Duration(900 * time.Millisecond)}))
	at := t0 + 1000
	fx.now = at + 380 // the command's time: 10 ms after the moved time
	fr := fx.fireAt("j", at, 370)
	id, _ := model.ParseID(fr.Created[0])
	ev, ok := fx.event(id, "fired")
	want := "fire at " + model.UnixMilli(at).Format(model.TimeLayout) + " moved +370ms by jitter; late by 20ms"
	if !ok || ev.Message != want {
		t.Errorf("fired event %q, want %q", ev.Message, want)
	}
	if f, err := fx.f.InstanceWhy(id); err != nil || f.Jitter != 370 || f.ScheduledAt != at {
		t.Errorf("why facts %+v, %v", f, err)
	}
	if r := fx.inst(id); r.ScheduledAt.UnixMilli() != at {
		t.Errorf("scheduledAt %s, want the nominal fire time", r.ScheduledAt)
	}
	fr = fx.fireAt("j", at+1000, 900) // not below the task's jitter
	id, _ = model.ParseID(fr.Created[0])
	if ev, _ := fx.event(id, "fired"); strings.Contains(ev.Message, "jitter") {
		t.Errorf("a jitter of 900ms kept: %q", ev.Message)
	}
}

// TestRecord_JitterRoundTrip: the record codec keeps the jitter with and
// without the protocol 6 count of interrupted attempts, and a record
// without either encodes as before.
func TestRecord_JitterRoundTrip(t *testing.T) {
	base := record{ID: 7, State: stReady, Source: 1, CreatedAt: t0, ScheduledAt: t0, FiredAt: t0, TaskVersion: 1, Task: "a", Date: "2026-11-30"}
	plain := base.encode()
	for _, c := range []struct {
		free   uint32
		jitter int64
	}{{0, 0}, {2, 0}, {0, 37_000}, {3, 1}} {
		r := base
		r.Free, r.Jitter = c.free, c.jitter
		b := r.encode()
		got, err := decodeRecord(7, b)
		if err != nil || got.Free != c.free || got.Jitter != c.jitter {
			t.Errorf("free %d jitter %d: decoded %+v, %v", c.free, c.jitter, got, err)
		}
		if c.free == 0 && c.jitter == 0 && string(b) != string(plain) {
			t.Errorf("a record without jitter encodes differently")
		}
	}
}

// restoredCopy returns a new state machine restored from a snapshot of f.
func restoredCopy(t *testing.T, f *FSM) *FSM {
	t.Helper()
	snap, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	var sink memSink
	if err := snap.Persist(&sink); err != nil {
		t.Fatal(err)
	}
	snap.Release()
	dst := newTestFSM(t)
	if err := dst.Restore(io.NopCloser(&sink)); err != nil {
		t.Fatal(err)
	}
	return dst
}
