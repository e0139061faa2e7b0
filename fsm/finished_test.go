package fsm

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/ax-scheduler/ax/model"
)

// indexEntry is one key of the finished index.
type indexEntry struct {
	task string
	at   int64
	id   uint64
}

// finishedIndex reads the finished index.
func finishedIndex(t *testing.T, f *FSM) []indexEntry {
	t.Helper()
	var out []indexEntry
	err := f.view(func(tx *bolt.Tx) error {
		return tx.Bucket(bktFinished).ForEach(func(k, _ []byte) error {
			task, at, id, ok := parseFinishedKey(k)
			if !ok {
				return fmt.Errorf("malformed key %x", k)
			}
			out = append(out, indexEntry{string(task), at, id})
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// checkFinishedIndex fails unless the finished index lists exactly the
// terminal instances, under their task and finish time, and returns it.
func checkFinishedIndex(t *testing.T, f *FSM) []indexEntry {
	t.Helper()
	var want []indexEntry
	err := f.view(func(tx *bolt.Tx) error {
		return tx.Bucket(bktInstances).ForEach(func(k, v []byte) error {
			r, err := decodeRecord(binary.BigEndian.Uint64(k), v)
			if err == nil && isTerminal(r.State) {
				want = append(want, indexEntry{r.Task, r.FinishedAt, r.ID})
			}
			return err
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	got := finishedIndex(t, f)
	byID := func(a, b indexEntry) int { return int(a.id>>1) - int(b.id>>1) }
	slices.SortFunc(got, byID)
	slices.SortFunc(want, byID)
	if !slices.Equal(got, want) {
		t.Fatalf("finished index %+v, want the terminal instances %+v", got, want)
	}
	return got
}

func indexed(entries []indexEntry, id uint64) bool {
	return slices.ContainsFunc(entries, func(e indexEntry) bool { return e.id == id })
}

// TestFSM_FinishedIndex follows instances through every way of finishing
// (success, failure after a retry, cancel, skip, a task deleted under
// them) and pruning: the index lists exactly the terminal ones.
func TestFSM_FinishedIndex(t *testing.T) {
	fx := newExecFixture(t, model.Policy{MaxConcurrency: 2, Overlap: "skip", MaxRetries: 1, RetryInterval: model.Duration(time.Millisecond)})
	ok, retried, canceled := fx.trigger(), fx.trigger(), fx.trigger()
	checkFinishedIndex(t, fx.f)

	fx.lease(ok)
	fx.complete(ok, true, false)
	got := checkFinishedIndex(t, fx.f)
	if len(got) != 2 || !indexed(got, ok) || !indexed(got, canceled) {
		// canceled was SKIPPED at once: two slots, three triggers.
		t.Fatalf("after a success and a skip: %+v", got)
	}
	if got[0].at != fx.inst(got[0].id).FinishedAt.UnixMilli() {
		t.Fatalf("key time %d, want the finish time", got[0].at)
	}

	fx.lease(retried)
	fx.complete(retried, false, true)
	if s := fx.inst(retried).State; s != model.StateRetrying || indexed(checkFinishedIndex(t, fx.f), retried) {
		t.Fatalf("RETRYING instance (%s) must not be indexed", s)
	}
	fx.do(CmdFire, Fire{Instances: []uint64{retried}})
	fx.lease(retried)
	fx.complete(retried, false, true)
	if s := fx.inst(retried).State; s != model.StateFailed || !indexed(checkFinishedIndex(t, fx.f), retried) {
		t.Fatalf("FAILED instance (%s) must be indexed", s)
	}

	queued := fx.trigger()
	fx.do(CmdDecide, Decide{ID: queued, Action: DecideCancel})
	running := fx.trigger()
	fx.lease(running)
	fx.do(CmdDeleteTask, TaskRef{Name: "job"}) // running is left to finish
	got = checkFinishedIndex(t, fx.f)
	if !indexed(got, queued) || indexed(got, running) {
		t.Fatalf("after a cancel and a delete: %+v", got)
	}
	fx.complete(running, true, false)
	got = checkFinishedIndex(t, fx.f)
	if len(got) != 5 {
		t.Fatalf("every instance finished: %+v", got)
	}

	// A failure waits for the leader's alert handling before it can be
	// pruned (from protocol 4 every failure raises its task's alert).
	fx.do(CmdAlerted, Alerted{ID: retried, Message: "alert instance_failed:job"})
	fx.do(CmdPrune, Prune{IDs: []uint64{ok, retried, running}})
	got = checkFinishedIndex(t, fx.f)
	if len(got) != 2 || !indexed(got, canceled) || !indexed(got, queued) {
		t.Fatalf("after pruning three: %+v", got)
	}
}

// TestFSM_ExpiredRetention: the retention that applies is read when the
// index is: a task's policy.retention as it is now, else the default; a
// deleted task's instances take the default; pending alerts keep a
// failure.
func TestFSM_ExpiredRetention(t *testing.T) {
	fx := newExecFixture(t, model.Policy{MaxConcurrency: 10, Retention: model.Duration(time.Hour)})
	done := fx.trigger()
	fx.lease(done)
	fx.complete(done, true, false)
	finished := time.UnixMilli(fx.now)
	setRetention := func(d time.Duration, notify ...string) {
		t.Helper()
		task := model.Task{Name: "job", Trigger: model.Trigger{Type: model.TriggerEvent},
			Action: model.Action{Type: model.ActionShell, Command: "true"},
			Policy: model.Policy{MaxConcurrency: 10, Retention: model.Duration(d), Notify: notify}}
		if r := fx.do(CmdPutTask, PutTask{Task: task}); r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	steps := []struct {
		name  string
		do    func()
		after time.Duration // since the finish
		def   time.Duration
		want  bool
	}{
		{"task keeps 1h, 2m later", nil, 2 * time.Minute, time.Minute, false},
		{"task keeps 1h, 61m later", nil, 61 * time.Minute, time.Minute, true},
		{"retention shortened to 1m", func() { setRetention(time.Minute) }, 2 * time.Minute, 24 * time.Hour, true},
		{"retention unset: the default", func() { setRetention(0) }, 2 * time.Minute, time.Minute, true},
		{"retention unset, default longer", nil, 2 * time.Minute, time.Hour, false},
		{"retention unset, default 0 keeps", nil, 1000 * time.Hour, 0, false},
		{"retention lengthened to 2h", func() { setRetention(2 * time.Hour) }, 61 * time.Minute, time.Minute, false},
		{"task deleted: the default", func() { fx.do(CmdDeleteTask, TaskRef{Name: "job"}) }, 2 * time.Minute, time.Minute, true},
		{"task deleted, default 0 keeps", nil, 1000 * time.Hour, 0, false},
	}
	for _, st := range steps {
		if st.do != nil {
			st.do()
		}
		ids, err := fx.f.Expired(finished.Add(st.after), st.def, 100)
		if err != nil {
			t.Fatal(err)
		}
		if got := slices.Contains(ids, done); got != st.want || len(ids) > 1 {
			t.Fatalf("%s: expired %v, want the instance: %v", st.name, ids, st.want)
		}
	}

	// A failure whose alerts are pending is kept until they are recorded.
	fx2 := newExecFixture(t, model.Policy{MaxConcurrency: 10, Notify: []string{"http://hooks.example/ax"}})
	failed := fx2.trigger()
	fx2.lease(failed)
	fx2.complete(failed, false, false)
	later := time.UnixMilli(fx2.now).Add(time.Hour)
	if ids, _ := fx2.f.Expired(later, time.Minute, 100); len(ids) != 0 {
		t.Fatalf("expired %v with its alerts pending", ids)
	}
	fx2.do(CmdAlerted, Alerted{ID: failed, Message: "sent"})
	if ids, _ := fx2.f.Expired(later, time.Minute, 100); !slices.Equal(ids, []uint64{failed}) {
		t.Fatalf("expired %v after the alerts, want [%d]", ids, failed)
	}
}

// TestFSM_ExpiredPerTask: each task's range is read up to its first
// instance not yet due, and limit bounds the answer.
func TestFSM_ExpiredPerTask(t *testing.T) {
	fx := newExecFixture(t, model.Policy{MaxConcurrency: 100})
	short := model.Task{Name: "short", Trigger: model.Trigger{Type: model.TriggerEvent},
		Action: model.Action{Type: model.ActionShell, Command: "true"}, Policy: model.Policy{MaxConcurrency: 100, Retention: model.Duration(time.Second)}}
	fx.do(CmdPutTask, PutTask{Task: short})
	var jobs, shorts []uint64
	for i := 0; i < 4; i++ {
		for _, task := range []string{"job", "short"} {
			var s model.Submitted
			if err := fx.do(CmdTrigger, Trigger{Task: task}).Decode(&s); err != nil {
				t.Fatal(err)
			}
			id, _ := model.ParseID(s.ID)
			fx.lease(id)
			fx.complete(id, true, false)
			if task == "job" {
				jobs = append(jobs, id)
			} else {
				shorts = append(shorts, id)
			}
		}
	}
	now := time.UnixMilli(fx.now).Add(2 * time.Second)
	ids, err := fx.f.Expired(now, time.Hour, 100)
	if err != nil || !slices.Equal(ids, shorts) {
		t.Fatalf("expired %v (%v), want only the short-lived %v", ids, err, shorts)
	}
	ids, _ = fx.f.Expired(now.Add(2*time.Hour), time.Hour, 100)
	if !slices.Equal(ids, append(append([]uint64(nil), jobs...), shorts...)) {
		t.Fatalf("expired %v, want every one, task by task", ids)
	}
	if ids, _ = fx.f.Expired(now.Add(2*time.Hour), time.Hour, 3); !slices.Equal(ids, jobs[:3]) {
		t.Fatalf("limit 3: %v", ids)
	}
}

// TestFSM_ExpiredBehindUnfinished is the soak's finding: 300,000 delayed
// instances due in two hours sort before the finished ones, and the
// finished ones are still found, and found alone, until none is left.
func TestFSM_ExpiredBehindUnfinished(t *testing.T) {
	const pending, finished, batch = 300_000, 500, 10_000
	fx := newExecFixture(t, model.Policy{MaxConcurrency: 1000})
	items := make([]SubmitItem, batch)
	for i := range items {
		items[i] = SubmitItem{DelayMs: (2 * time.Hour).Milliseconds()}
	}
	for n := 0; n < pending; n += batch {
		fx.now += 10
		if r := fx.a.apply(submitCmd(t, "job", fx.now, items...)); r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	var want []uint64
	for len(want) < finished {
		ids := fx.ready(100)
		fx.do(CmdLease, Lease{Executor: "e1", IDs: ids, LeaseMs: 10_000})
		cs := make([]Complete, len(ids))
		for i, id := range ids {
			cs[i] = Complete{ID: id, Attempt: 1, Report: model.CompleteRequest{Executor: "e1", Success: true}}
		}
		fx.now += 10
		fx.a.apply(&Command{Type: CmdCompleteBatch, Now: fx.now, Node: "n1", Body: EncodeCompleteBatch(cs)})
		want = append(want, ids...)
	}
	if got := fx.f.Pending(); got != pending {
		t.Fatalf("pending %d, want %d", got, pending)
	}
	now := time.UnixMilli(fx.now).Add(time.Hour)
	start := time.Now()
	var got []uint64
	for {
		ids, err := fx.f.Expired(now, time.Minute, 200)
		if err != nil {
			t.Fatal(err)
		}
		if len(ids) == 0 {
			break
		}
		got = append(got, ids...)
		var res struct{ Pruned int }
		if err := fx.do(CmdPrune, Prune{IDs: ids}).Decode(&res); err != nil || res.Pruned != len(ids) {
			t.Fatalf("pruned %d of %d (%v)", res.Pruned, len(ids), err)
		}
	}
	took := time.Since(start)
	if !slices.Equal(got, want) {
		t.Fatalf("found %d finished instances, want all %d, oldest first", len(got), len(want))
	}
	if fx.f.Pending() != pending || len(checkFinishedIndex(t, fx.f)) != 0 {
		t.Fatalf("pending %d after pruning, index not empty", fx.f.Pending())
	}
	t.Logf("found and pruned %d finished instances behind %d pending ones in %s", len(got), pending, took)
}

// ready triggers n instances of the fixture's task and returns their ids.
func (fx *execFixture) ready(n int) []uint64 {
	fx.t.Helper()
	fx.now += 10
	return submittedIDs(fx.t, fx.a.apply(submitCmd(fx.t, "job", fx.now, make([]SubmitItem, n)...)))
}

// finishedState applies a mix of finished, running, pending and pruned
// instances and returns the fixture.
func finishedState(t *testing.T, path string) (*execFixture, uint64) {
	t.Helper()
	f := openTest(t, path, true)
	fx := &execFixture{t: t, f: f, a: &applier{t: t, f: f}, now: t0}
	task := model.Task{Name: "job", Trigger: model.Trigger{Type: model.TriggerEvent},
		Action: model.Action{Type: model.ActionShell, Command: "true"}, Policy: model.Policy{MaxConcurrency: 100}}
	writeResult(t, fx.a.apply(cmd(t, CmdPutTask, "", t0, PutTask{Task: task})))
	ids := fx.ready(6)
	fx.do(CmdLease, Lease{Executor: "e1", IDs: ids[:4], LeaseMs: 10_000})
	for _, id := range ids[:3] {
		fx.complete(id, id != ids[1], false)
	}
	fx.do(CmdDecide, Decide{ID: ids[5], Action: DecideCancel})
	fx.do(CmdPrune, Prune{IDs: ids[:1]})
	fx.now += 10
	fx.a.apply(submitCmd(t, "job", fx.now, SubmitItem{DelayMs: 60_000}))
	if n := len(checkFinishedIndex(t, f)); n != 3 {
		t.Fatalf("fixture has %d finished instances, want 3", n)
	}
	return fx, ids[2]
}

// editFile changes a closed state machine file as another release would
// have left it.
func editFile(t *testing.T, path string, fn func(tx *bolt.Tx) error) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Update(fn); err != nil {
		t.Fatal(err)
	}
}

// TestFSM_FinishedIndexBuiltOnOpen: a file an older release wrote (no
// index, no mark), or one an older release applied entries to after this
// one (the mark behind the applied index, keys it did not remove), gets
// its index rebuilt from the records when it is opened or restored; a
// file this release kept up is not read again.
func TestFSM_FinishedIndexBuiltOnOpen(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "fsm.db")
	fx, id := finishedState(t, path)
	want := dump(t, fx.f)
	at := fx.inst(id).FinishedAt.UnixMilli()
	if err := fx.f.Close(); err != nil {
		t.Fatal(err)
	}
	stray := finishedKey("job", t0, 99)
	cases := []struct {
		name    string
		edit    func(tx *bolt.Tx) error
		rebuilt bool
	}{
		{"kept up: not read again", func(tx *bolt.Tx) error { return tx.Bucket(bktFinished).Put(stray, nil) }, false},
		{"older release: no index", func(tx *bolt.Tx) error {
			if err := tx.DeleteBucket(bktFinished); err != nil {
				return err
			}
			return tx.Bucket(bktMeta).Delete(keyFinishedThrough)
		}, true},
		{"older release applied since", func(tx *bolt.Tx) error {
			if err := tx.Bucket(bktFinished).Delete(finishedKey("job", at, id)); err != nil {
				return err
			}
			if err := tx.Bucket(bktFinished).Put(stray, nil); err != nil {
				return err
			}
			return tx.Bucket(bktMeta).Put(keyFinishedThrough, u64key(1))
		}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			editFile(t, path, tc.edit)
			f := openTest(t, path, true)
			got := dump(t, f)
			if tc.rebuilt && got != want {
				t.Fatalf("rebuilt state differs:\n%s\nwant\n%s", got, want)
			}
			if !tc.rebuilt && !indexed(finishedIndex(t, f), 99) {
				t.Fatal("a complete index was rebuilt on open")
			}
			if err := f.Close(); err != nil {
				t.Fatal(err)
			}
			editFile(t, path, func(tx *bolt.Tx) error { return tx.Bucket(bktFinished).Delete(stray) })
		})
	}

	// A snapshot of an older release's file, restored (the file is a
	// snapshot's state.bin).
	editFile(t, path, cases[1].edit)
	old, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dst := newTestFSM(t)
	if err := dst.Restore(io.NopCloser(bytes.NewReader(old))); err != nil {
		t.Fatal(err)
	}
	if got := dump(t, dst); got != want {
		t.Fatalf("restored state differs:\n%s\nwant\n%s", got, want)
	}
}
