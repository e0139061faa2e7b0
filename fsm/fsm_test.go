package fsm

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/hashicorp/raft"

	"github.com/ax-scheduler/ax/model"
)

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC).UnixMilli()

func openTest(t *testing.T, path string, noSync bool) *FSM {
	t.Helper()
	f, err := Open(Config{Path: path, NoSync: noSync})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func newTestFSM(t *testing.T) *FSM {
	t.Helper()
	return openTest(t, filepath.Join(t.TempDir(), "fsm.db"), false)
}

// applier feeds commands to an FSM as consecutive log entries.
type applier struct {
	t     *testing.T
	f     *FSM
	index uint64
}

func (a *applier) apply(c *Command) *Result {
	a.t.Helper()
	a.index++
	out := a.f.ApplyBatch([]*raft.Log{{Index: a.index, Term: 1, Type: raft.LogCommand, Data: c.Encode()}})
	r, ok := out[0].(*Result)
	if !ok {
		a.t.Fatalf("apply %s: response %T, want *Result", c.Type, out[0])
	}
	return r
}

func cmd(t *testing.T, typ CommandType, reqID string, now int64, body any) *Command {
	t.Helper()
	c, err := NewCommand(typ, reqID, "tester", body)
	if err != nil {
		t.Fatal(err)
	}
	c.Now = now
	return c
}

func cronTask(name, expr string) model.Task {
	return model.Task{
		Name:    name,
		Trigger: model.Trigger{Type: model.TriggerCron, Expression: expr},
		Action:  model.Action{Type: model.ActionShell, Command: "echo " + name},
	}
}

func writeResult(t *testing.T, r *Result) model.WriteResult {
	t.Helper()
	var w model.WriteResult
	if err := r.Decode(&w); err != nil {
		t.Fatalf("result: %v", err)
	}
	return w
}

func TestFSM_PutTask(t *testing.T) {
	f := newTestFSM(t)
	a := &applier{t: t, f: f}

	w := writeResult(t, a.apply(cmd(t, CmdPutTask, "", t0, PutTask{Task: cronTask("a", "* * * * *")})))
	if w.Version != 1 || !w.Changed {
		t.Fatalf("create: got %+v, want version 1 changed", w)
	}
	w = writeResult(t, a.apply(cmd(t, CmdPutTask, "", t0+1, PutTask{Task: cronTask("a", "* * * * *")})))
	if w.Version != 1 || w.Changed {
		t.Fatalf("identical put: got %+v, want version 1 unchanged", w)
	}
	w = writeResult(t, a.apply(cmd(t, CmdPutTask, "", t0+2, PutTask{Task: cronTask("a", "*/5 * * * *")})))
	if w.Version != 2 || !w.Changed {
		t.Fatalf("update: got %+v, want version 2 changed", w)
	}
	stale := cronTask("a", "0 * * * *")
	stale.Version = 1
	r := a.apply(cmd(t, CmdPutTask, "", t0+3, PutTask{Task: stale}))
	if !errors.Is(r.Err, model.ErrConflict) || r.Err.Field != "version" {
		t.Fatalf("stale version: got %v, want conflict on version", r.Err)
	}
	got, err := f.GetTask("a")
	if err != nil {
		t.Fatal(err)
	}
	if got.Trigger.Expression != "*/5 * * * *" || got.Version != 2 {
		t.Fatalf("stored: got %q v%d, want */5 v2", got.Trigger.Expression, got.Version)
	}
	if got.CreatedAt.Millis() != t0 || got.UpdatedAt.Millis() != t0+2 || got.UpdatedBy != "tester" {
		t.Fatalf("times: got created %v updated %v by %q", got.CreatedAt, got.UpdatedAt, got.UpdatedBy)
	}
	if got.Trigger.Timezone != "UTC" || got.Policy.MaxConcurrency != 1 || got.Policy.Catchup != "latest" {
		t.Fatalf("defaults not filled: %+v %+v", got.Trigger, got.Policy)
	}
}

func TestFSM_OnceDelayPinnedToLeaderTime(t *testing.T) {
	f := newTestFSM(t)
	a := &applier{t: t, f: f}
	task := model.Task{Name: "later", Trigger: model.Trigger{Type: model.TriggerOnce, Delay: model.Duration(90 * time.Second)},
		Action: model.Action{Type: model.ActionShell, Command: "true"}}
	writeResult(t, a.apply(cmd(t, CmdPutTask, "", t0, PutTask{Task: task})))
	got, _ := f.GetTask("later")
	if got.Trigger.At == nil || got.Trigger.At.Millis() != t0+90_000 || got.Trigger.Delay != 0 {
		t.Fatalf("got trigger %+v, want at = now+90s and no delay", got.Trigger)
	}
}

func TestFSM_PauseResumeDeleteHistory(t *testing.T) {
	f := newTestFSM(t)
	a := &applier{t: t, f: f}
	writeResult(t, a.apply(cmd(t, CmdPutTask, "", t0, PutTask{Task: cronTask("a", "@hourly")})))

	steps := []struct {
		name        string
		typ         CommandType
		wantVersion uint64
		wantChanged bool
		wantErr     error
	}{
		{"pause", CmdPauseTask, 2, true, nil},
		{"pause again", CmdPauseTask, 2, false, nil},
		{"resume", CmdResumeTask, 3, true, nil},
		{"delete", CmdDeleteTask, 4, true, nil},
		{"delete missing", CmdDeleteTask, 0, false, model.ErrNotFound},
		{"pause missing", CmdPauseTask, 0, false, model.ErrNotFound},
	}
	for i, s := range steps {
		r := a.apply(cmd(t, s.typ, "", t0+int64(i+1), TaskRef{Name: "a"}))
		if s.wantErr != nil {
			if !errors.Is(r.Err, s.wantErr) {
				t.Fatalf("%s: got %v, want %v", s.name, r.Err, s.wantErr)
			}
			continue
		}
		w := writeResult(t, r)
		if w.Version != s.wantVersion || w.Changed != s.wantChanged {
			t.Fatalf("%s: got %+v, want version %d changed %v", s.name, w, s.wantVersion, s.wantChanged)
		}
	}
	if _, err := f.GetTask("a"); !errors.Is(err, model.ErrNotFound) {
		t.Fatalf("get after delete: got %v, want not found", err)
	}
	// Re-creating continues the version sequence.
	w := writeResult(t, a.apply(cmd(t, CmdPutTask, "", t0+10, PutTask{Task: cronTask("a", "@daily")})))
	if w.Version != 5 {
		t.Fatalf("recreate: got version %d, want 5", w.Version)
	}
	h, err := f.TaskHistory("a")
	if err != nil {
		t.Fatal(err)
	}
	var ops []string
	for _, v := range h.Versions {
		ops = append(ops, fmt.Sprintf("%d:%s", v.Version, v.Op))
	}
	if got, want := fmt.Sprint(ops), "[1:create 2:pause 3:resume 4:delete 5:create]"; got != want {
		t.Fatalf("history: got %s, want %s", got, want)
	}
}

func TestFSM_ListTasks(t *testing.T) {
	f := newTestFSM(t)
	a := &applier{t: t, f: f}
	for i := 0; i < 25; i++ {
		task := cronTask(fmt.Sprintf("t%02d", i), "@hourly")
		task.Labels = map[string]string{"team": []string{"a", "b"}[i%2]}
		writeResult(t, a.apply(cmd(t, CmdPutTask, "", t0, PutTask{Task: task})))
	}
	a.apply(cmd(t, CmdPauseTask, "", t0, TaskRef{Name: "t03"}))
	paused := true
	tests := []struct {
		name   string
		filter model.TaskFilter
		want   int
		cursor string
	}{
		{"all", model.TaskFilter{}, 25, ""},
		{"page", model.TaskFilter{Limit: 10}, 10, "t09"},
		{"after cursor", model.TaskFilter{Cursor: "t19"}, 5, ""},
		{"label", model.TaskFilter{Labels: map[string]string{"team": "b"}}, 12, ""},
		{"paused", model.TaskFilter{Paused: &paused}, 1, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l, err := f.ListTasks(tc.filter)
			if err != nil {
				t.Fatal(err)
			}
			if len(l.Tasks) != tc.want || l.NextCursor != tc.cursor {
				t.Fatalf("got %d tasks cursor %q, want %d cursor %q", len(l.Tasks), l.NextCursor, tc.want, tc.cursor)
			}
		})
	}
}

func TestFSM_RequestDedupe(t *testing.T) {
	f := newTestFSM(t)
	a := &applier{t: t, f: f}
	first := writeResult(t, a.apply(cmd(t, CmdPutTask, "req-1", t0, PutTask{Task: cronTask("a", "@hourly")})))
	// A retry of the same request after a leader change carries the same
	// id, even with a changed body: it must not apply again.
	again := writeResult(t, a.apply(cmd(t, CmdPutTask, "req-1", t0+5, PutTask{Task: cronTask("a", "@daily")})))
	if again != first {
		t.Fatalf("retry: got %+v, want the first result %+v", again, first)
	}
	if got, _ := f.GetTask("a"); got.Trigger.Expression != "@hourly" {
		t.Fatalf("retry applied twice: expression %q", got.Trigger.Expression)
	}
	// After the TTL the id is forgotten and the pruning keeps the index small.
	later := t0 + RequestTTL.Milliseconds() + 1
	w := writeResult(t, a.apply(cmd(t, CmdPutTask, "req-1", later, PutTask{Task: cronTask("a", "@daily")})))
	if w.Version != 2 {
		t.Fatalf("after TTL: got version %d, want 2", w.Version)
	}
}

func TestStoredResult(t *testing.T) {
	legacy, _ := json.Marshal(&Result{Data: []byte(`{"id":"7"}`)})
	legacyErr, _ := json.Marshal(&Result{Err: model.Errorf(model.CodeNotFound, "task %q not found", "x")})
	cases := []struct {
		name    string
		stored  []byte
		data    string
		errCode string
	}{
		{name: "data", stored: appendStoredResult(nil, &Result{Data: []byte(`{"id":"7"}`)}), data: `{"id":"7"}`},
		{name: "empty data", stored: appendStoredResult(nil, &Result{}), data: ""},
		{name: "error", stored: appendStoredResult(nil, &Result{Err: model.Errorf(model.CodeNotFound, "task %q not found", "x")}), errCode: model.CodeNotFound},
		{name: "legacy JSON data", stored: legacy, data: `{"id":"7"}`},
		{name: "legacy JSON error", stored: legacyErr, errCode: model.CodeNotFound},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, err := decodeStoredResult(tc.stored)
			if err != nil {
				t.Fatal(err)
			}
			if tc.errCode != "" {
				if r.Err == nil || r.Err.Code != tc.errCode || !strings.Contains(r.Err.Message, `"x"`) {
					t.Fatalf("got %+v, want error %s", r, tc.errCode)
				}
				return
			}
			if r.Err != nil || string(r.Data) != tc.data {
				t.Fatalf("got %+v, want data %q", r, tc.data)
			}
		})
	}
	for _, bad := range [][]byte{nil, {storedErr, '{'}, []byte("{")} {
		if _, err := decodeStoredResult(bad); err == nil {
			t.Fatalf("%q: decoded, want an error", bad)
		}
	}
}

// A rejected request is remembered with its error, and a retry in a later
// entry gets the same error even once the state would now accept it.
func TestFSM_RequestDedupeRemembersErrors(t *testing.T) {
	f := newTestFSM(t)
	a := &applier{t: t, f: f}
	first := a.apply(cmd(t, CmdDeleteTask, "req-1", t0, TaskRef{Name: "a"}))
	if !errors.Is(first.Err, model.ErrNotFound) {
		t.Fatalf("got %+v, want not found", first)
	}
	writeResult(t, a.apply(cmd(t, CmdPutTask, "req-2", t0, PutTask{Task: cronTask("a", "@hourly")})))
	again := a.apply(cmd(t, CmdDeleteTask, "req-1", t0+1, TaskRef{Name: "a"}))
	if !errors.Is(again.Err, model.ErrNotFound) || again.Err.Message != first.Err.Message {
		t.Fatalf("retry: got %+v, want the first error %+v", again, first.Err)
	}
	if _, err := f.GetTask("a"); err != nil {
		t.Fatalf("retry applied: %v", err)
	}
}

// A remembered result that does not decode is answered with an error and
// the command is not applied a second time.
func TestFSM_UndecodableRememberedResultNotReapplied(t *testing.T) {
	for _, tc := range []struct {
		name   string
		stored []byte
	}{
		{"bad JSON", append(u64key(uint64(t0)), storedErr, '{')},
		{"empty", u64key(uint64(t0))},
		{"shorter than its time", []byte{1, 2, 3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newTestFSM(t)
			a := &applier{t: t, f: f}
			writeResult(t, a.apply(cmd(t, CmdPutTask, "", t0, PutTask{Task: cronTask("a", "@hourly")})))
			if r := a.apply(cmd(t, CmdTrigger, "trig-1", t0, Trigger{Task: "a"})); r.Err != nil {
				t.Fatal(r.Err)
			}
			if err := f.db.Update(func(tx *bolt.Tx) error {
				return tx.Bucket(bktRequests).Put([]byte("trig-1"), tc.stored)
			}); err != nil {
				t.Fatal(err)
			}
			active := f.ActiveCount()
			r := a.apply(cmd(t, CmdTrigger, "trig-1", t0+1, Trigger{Task: "a"}))
			if !errors.Is(r.Err, model.ErrConflict) || !strings.Contains(r.Err.Message, "trig-1") {
				t.Fatalf("retry with an unreadable first outcome: got %+v, want a conflict naming the request", r)
			}
			if got := f.ActiveCount(); got != active {
				t.Fatalf("active instances %d -> %d: the retry was applied again", active, got)
			}
		})
	}
}

// The commands of one entry share the entry's time; the prune of expired
// request ids runs for the first, and the result does not depend on it.
func TestFSM_BatchPrunesExpiredRequests(t *testing.T) {
	f := newTestFSM(t)
	a := &applier{t: t, f: f}
	writeResult(t, a.apply(cmd(t, CmdPutTask, "old", t0, PutTask{Task: cronTask("a", "@hourly")})))
	later := t0 + RequestTTL.Milliseconds() + 1
	cmds := []*Command{
		cmd(t, CmdPutTask, "new", 0, PutTask{Task: cronTask("b", "@hourly")}),
		cmd(t, CmdPutTask, "old", 0, PutTask{Task: cronTask("a", "@daily")}),
	}
	out := f.ApplyBatch([]*raft.Log{{Index: a.index + 1, Type: raft.LogCommand, Data: EncodeBatch(later, "n1", cmds).Encode()}})
	br := out[0].(*BatchResult)
	if w := writeResult(t, br.Results[1]); w.Version != 2 {
		t.Fatalf("expired request id answered from memory: %+v", w)
	}
	if f.knownRequest("old") != true || f.knownRequest("new") != true {
		t.Fatal("request ids of the entry not remembered")
	}
}

func TestFSM_BatchCommand(t *testing.T) {
	f := newTestFSM(t)
	var cmds []*Command
	for i := 0; i < 3; i++ {
		cmds = append(cmds, cmd(t, CmdPutTask, fmt.Sprintf("r%d", i), 0, PutTask{Task: cronTask(fmt.Sprintf("b%d", i), "@hourly")}))
	}
	cmds = append(cmds, cmd(t, CmdDeleteTask, "r9", 0, TaskRef{Name: "missing"}))
	b := EncodeBatch(t0, "n1", cmds)
	out := f.ApplyBatch([]*raft.Log{{Index: 1, Type: raft.LogCommand, Data: b.Encode()}})
	br, ok := out[0].(*BatchResult)
	if !ok || len(br.Results) != 4 {
		t.Fatalf("got %#v, want a BatchResult of 4", out[0])
	}
	for i := 0; i < 3; i++ {
		if w := writeResult(t, br.Results[i]); w.Version != 1 {
			t.Fatalf("sub %d: got %+v", i, w)
		}
	}
	if !errors.Is(br.Results[3].Err, model.ErrNotFound) {
		t.Fatalf("sub 3: got %v, want not found", br.Results[3].Err)
	}
	if n := f.CountTasks(); n != 3 {
		t.Fatalf("got %d tasks, want 3", n)
	}
}

func TestFSM_ReplayAfterRestartSkipsApplied(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fsm.db")
	f, err := Open(Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	var logs []*raft.Log
	for i := 1; i <= 3; i++ {
		c := cmd(t, CmdPutTask, "", t0+int64(i), PutTask{Task: cronTask("a", fmt.Sprintf("%d * * * *", i))})
		logs = append(logs, &raft.Log{Index: uint64(i), Term: 1, Type: raft.LogCommand, Data: c.Encode()})
	}
	f.ApplyBatch(logs)
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	f = openTest(t, path, false)
	if f.Rebuilt() || f.AppliedIndex() != 3 {
		t.Fatalf("reopen: rebuilt %v applied %d, want false 3", f.Rebuilt(), f.AppliedIndex())
	}
	out := f.ApplyBatch(logs) // Raft replays the log after the snapshot
	for i, r := range out {
		if r != nil {
			t.Fatalf("replayed entry %d answered %v, want nil (skipped)", i+1, r)
		}
	}
	if got, _ := f.GetTask("a"); got.Version != 3 {
		t.Fatalf("after replay: version %d, want 3", got.Version)
	}
}

// TestFSM_NoSyncUnclean: a file left without its clean marker is kept
// when the process died under the kernel still running (the same boot
// id: every write is in its page cache), and discarded to be rebuilt
// when the machine restarted since, the boot id cannot be read, or the
// file has no boot marker.
func TestFSM_NoSyncUnclean(t *testing.T) {
	for _, tc := range []struct {
		name         string
		before, now  string
		dropMarker   bool
		wantRebuilt  bool
		wantAppliedA uint64
	}{
		{name: "process died, same boot", before: "boot-a", now: "boot-a", wantAppliedA: 2},
		{name: "machine restarted", before: "boot-a", now: "boot-b", wantRebuilt: true},
		{name: "no boot id", before: "", now: "", wantRebuilt: true},
		{name: "boot id unknown now", before: "boot-a", now: "", wantRebuilt: true},
		{name: "no boot marker", before: "boot-a", now: "boot-a", dropMarker: true, wantRebuilt: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func(old func() string) { bootID = old }(bootID)
			bootID = func() string { return tc.before }
			path := filepath.Join(t.TempDir(), "fsm.db")
			f, err := Open(Config{Path: path, NoSync: true})
			if err != nil {
				t.Fatal(err)
			}
			ap := &applier{t: t, f: f}
			ap.apply(cmd(t, CmdPutTask, "", t0, PutTask{Task: cronTask("a", "@hourly")}))
			ap.apply(cmd(t, CmdPutTask, "", t0+1, PutTask{Task: cronTask("b", "@daily")}))
			// The process dies: the file is left without the clean marker
			// (bbolt's Close neither syncs nor writes anything more here).
			f.db.Close()
			f.db = nil
			if tc.dropMarker {
				os.Remove(path + bootMarker)
			}
			bootID = func() string { return tc.now }
			g := openTest(t, path, true)
			wantTasks := 2
			if tc.wantRebuilt {
				wantTasks = 0
			}
			if g.Rebuilt() != tc.wantRebuilt || g.AppliedIndex() != tc.wantAppliedA || g.CountTasks() != wantTasks {
				t.Fatalf("unclean reopen: rebuilt %v applied %d tasks %d, want %v %d %d",
					g.Rebuilt(), g.AppliedIndex(), g.CountTasks(), tc.wantRebuilt, tc.wantAppliedA, wantTasks)
			}
			// Whichever way it opened, it applies on and reopens clean.
			ap = &applier{t: t, f: g, index: g.AppliedIndex()}
			ap.apply(cmd(t, CmdPutTask, "", t0+2, PutTask{Task: cronTask("c", "@hourly")}))
			if err := g.Close(); err != nil {
				t.Fatal(err)
			}
			h := openTest(t, path, true)
			if h.Rebuilt() || h.AppliedIndex() != tc.wantAppliedA+1 {
				t.Fatalf("clean reopen: rebuilt %v applied %d, want false %d", h.Rebuilt(), h.AppliedIndex(), tc.wantAppliedA+1)
			}
		})
	}
}

type memSink struct {
	bytes.Buffer
	canceled bool
}

func (s *memSink) ID() string    { return "mem" }
func (s *memSink) Cancel() error { s.canceled = true; return nil }
func (s *memSink) Close() error  { return nil }

func dump(t *testing.T, f *FSM) string {
	t.Helper()
	var b bytes.Buffer
	if err := f.Dump(&b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestFSM_SnapshotRestore(t *testing.T) {
	src := newTestFSM(t)
	applyRandom(t, src, rand.New(rand.NewSource(7)), 300, 1)
	snap, err := src.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	// Writes after the snapshot must not leak into it.
	before := dump(t, src)
	applied := src.AppliedIndex()
	(&applier{t: t, f: src, index: applied}).apply(cmd(t, CmdPutTask, "", t0, PutTask{Task: cronTask("after", "@hourly")}))
	var sink memSink
	if err := snap.Persist(&sink); err != nil {
		t.Fatal(err)
	}
	snap.Release()

	dst := newTestFSM(t)
	(&applier{t: t, f: dst}).apply(cmd(t, CmdPutTask, "", t0, PutTask{Task: cronTask("stale", "@hourly")}))
	if err := dst.Restore(io.NopCloser(&sink)); err != nil {
		t.Fatal(err)
	}
	if got := dump(t, dst); got != before {
		t.Fatalf("restored state differs from the snapshot:\n got %d bytes\nwant %d bytes", len(got), len(before))
	}
	if dst.AppliedIndex() != applied {
		t.Fatalf("restored applied index %d, want %d", dst.AppliedIndex(), applied)
	}
	if _, err := dst.GetTask("stale"); !errors.Is(err, model.ErrNotFound) {
		t.Fatalf("restore kept old state: %v", err)
	}
}

// applyRandom applies n random commands in batches of up to maxBatch.
func applyRandom(t *testing.T, f *FSM, rng *rand.Rand, n, maxBatch int) {
	t.Helper()
	exprs := []string{"* * * * *", "@hourly", "0 2 * * *", "*/5 * * * * *"}
	now := t0
	var logs []*raft.Log
	index := f.AppliedIndex()
	flush := func() {
		if len(logs) > 0 {
			f.ApplyBatch(logs)
			logs = nil
		}
	}
	for i := 0; i < n; i++ {
		now += int64(rng.Intn(5000))
		name := fmt.Sprintf("task-%d", rng.Intn(20))
		var c *Command
		reqID := ""
		if rng.Intn(3) == 0 {
			reqID = fmt.Sprintf("req-%d", rng.Intn(30))
		}
		switch rng.Intn(6) {
		case 0, 1, 2:
			task := cronTask(name, exprs[rng.Intn(len(exprs))])
			if rng.Intn(2) == 0 {
				task.Labels = map[string]string{"k": fmt.Sprint(rng.Intn(3)), "z": "1", "a": "2"}
			}
			c = cmd(t, CmdPutTask, reqID, now, PutTask{Task: task})
		case 3:
			c = cmd(t, CmdPauseTask, reqID, now, TaskRef{Name: name})
		case 4:
			c = cmd(t, CmdResumeTask, reqID, now, TaskRef{Name: name})
		case 5:
			c = cmd(t, CmdDeleteTask, reqID, now, TaskRef{Name: name})
		}
		index++
		logs = append(logs, &raft.Log{Index: index, Term: 1, Type: raft.LogCommand, Data: c.Encode()})
		if len(logs) >= 1+rng.Intn(maxBatch) {
			flush()
		}
	}
	flush()
}

func TestCommand_EncodeDecode(t *testing.T) {
	tests := []Command{
		{Type: CmdNoop},
		{Type: CmdPutTask, ReqID: "abc", Now: t0, Node: "n2", Actor: "me@host", Body: []byte(`{"x":1}`)},
		{Type: CmdDeleteTask, Now: -5, Body: []byte{}},
	}
	for _, want := range tests {
		got, err := DecodeCommand(want.Encode())
		if err != nil {
			t.Fatal(err)
		}
		if got.Type != want.Type || got.ReqID != want.ReqID || got.Now != want.Now || got.Node != want.Node || got.Actor != want.Actor || !bytes.Equal(got.Body, want.Body) {
			t.Fatalf("round trip: got %+v, want %+v", got, want)
		}
	}
	if _, err := DecodeCommand([]byte{1, 200}); err == nil {
		t.Fatal("truncated command decoded without error")
	}
}

func TestFSM_Check(t *testing.T) {
	f := newTestFSM(t)
	a := &applier{t: t, f: f}
	writeResult(t, a.apply(cmd(t, CmdPutTask, "", t0, PutTask{Task: cronTask("a", "@hourly")})))
	writeResult(t, a.apply(cmd(t, CmdDeleteTask, "del-1", t0, TaskRef{Name: "a"})))
	writeResult(t, a.apply(cmd(t, CmdPutTask, "", t0, PutTask{Task: cronTask("b", "@hourly")})))
	v2 := cronTask("b", "@daily")
	v2.Version = 2
	v1 := cronTask("b", "@daily")
	v1.Version = 1
	tests := []struct {
		name string
		c    *Command
		want error
	}{
		{"pause missing", cmd(t, CmdPauseTask, "", t0, TaskRef{Name: "zz"}), model.ErrNotFound},
		{"delete missing", cmd(t, CmdDeleteTask, "", t0, TaskRef{Name: "a"}), model.ErrNotFound},
		{"retry of applied delete", cmd(t, CmdDeleteTask, "del-1", t0, TaskRef{Name: "a"}), nil},
		{"stale version", cmd(t, CmdPutTask, "", t0, PutTask{Task: v2}), model.ErrConflict},
		{"current version", cmd(t, CmdPutTask, "", t0, PutTask{Task: v1}), nil},
		{"unconditional put", cmd(t, CmdPutTask, "", t0, PutTask{Task: cronTask("new", "@daily")}), nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := f.Check(tc.c)
			if (tc.want == nil) != (err == nil) || (tc.want != nil && !errors.Is(err, tc.want)) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
		})
	}
}

func submitCmd(t *testing.T, task string, now int64, items ...SubmitItem) *Command {
	t.Helper()
	return &Command{Type: CmdSubmit, Now: now, Node: "n1", Body: EncodeSubmit(&Submit{Task: task, Items: items})}
}

func wideTask(name string) model.Task {
	t := cronTask(name, "@hourly")
	t.Policy.MaxConcurrency = 100
	return t
}

// The counts of pending and active instances are written once per entry;
// a batch of submissions (one rejected) and a delete that cancels them
// leave the same counts as single entries would.
func TestFSM_BatchCounters(t *testing.T) {
	f := newTestFSM(t)
	a := &applier{t: t, f: f}
	writeResult(t, a.apply(cmd(t, CmdPutTask, "", t0, PutTask{Task: wideTask("q")})))
	sub := func(task string, items ...SubmitItem) *Command {
		c := submitCmd(t, task, t0, items...)
		c.ReqID = fmt.Sprintf("r%d", rand.Int())
		return c
	}
	cmds := []*Command{
		sub("q", SubmitItem{DelayMs: 1000}, SubmitItem{DelayMs: 2000}),
		sub("missing", SubmitItem{DelayMs: 1000}),
		sub("q", SubmitItem{DelayMs: 0}, SubmitItem{DelayMs: 3000}),
	}
	a.index++
	out := f.ApplyBatch([]*raft.Log{{Index: a.index, Type: raft.LogCommand, Data: EncodeBatch(t0, "n1", cmds).Encode()}})
	if br := out[0].(*BatchResult); !errors.Is(br.Results[1].Err, model.ErrNotFound) {
		t.Fatalf("submit to a missing task: %+v", br.Results[1])
	}
	if f.Pending() != 3 || f.ActiveCount() != 1 {
		t.Fatalf("after the batch: pending %d active %d, want 3 and 1", f.Pending(), f.ActiveCount())
	}
	a.index++
	del := EncodeBatch(t0+1, "n1", []*Command{cmd(t, CmdDeleteTask, "d", 0, TaskRef{Name: "q"})})
	f.ApplyBatch([]*raft.Log{{Index: a.index, Type: raft.LogCommand, Data: del.Encode()}})
	if f.Pending() != 0 || f.ActiveCount() != 0 {
		t.Fatalf("after the delete: pending %d active %d, want 0 and 0", f.Pending(), f.ActiveCount())
	}
}

func TestCommand_Instances(t *testing.T) {
	items := make([]SubmitItem, 7)
	bf, _ := json.Marshal(Backfill{Task: "q", At: []int64{1, 2, 3}, Keys: []string{"a", "b", "c"}})
	cases := []struct {
		c    *Command
		want int
	}{
		{&Command{Type: CmdSubmit, Body: EncodeSubmit(&Submit{Task: "q", Items: items})}, 7},
		{&Command{Type: CmdSubmit, Body: []byte{0xff}}, 0},
		{&Command{Type: CmdTrigger}, 1},
		{&Command{Type: CmdBackfill, Body: bf}, 3},
		{&Command{Type: CmdPutTask, Body: []byte(`{}`)}, 0},
	}
	for _, tc := range cases {
		if got := tc.c.Instances(); got != tc.want {
			t.Errorf("%s: Instances() = %d, want %d", tc.c.Type, got, tc.want)
		}
	}
}

// A command that would need more instance ids than its entry has left is
// refused before it writes anything; the commands before it stand.
func TestFSM_EntryInstanceCapacity(t *testing.T) {
	defer func(n int) { maxEntryInstances = n }(maxEntryInstances)
	maxEntryInstances = 10
	f := newTestFSM(t)
	a := &applier{t: t, f: f}
	writeResult(t, a.apply(cmd(t, CmdPutTask, "", t0, PutTask{Task: wideTask("q")})))
	six := make([]SubmitItem, 6)
	for i := range six {
		six[i].DelayMs = int64(1000 * (i + 1))
	}
	cmds := []*Command{
		submitCmd(t, "q", 0, six...),
		submitCmd(t, "q", 0, six...),
		cmd(t, CmdTrigger, "", 0, Trigger{Task: "q"}),
	}
	a.index++
	out := f.ApplyBatch([]*raft.Log{{Index: a.index, Type: raft.LogCommand, Data: EncodeBatch(t0, "n1", cmds).Encode()}})
	br := out[0].(*BatchResult)
	if _, err := DecodeSubmitResult(br.Results[0]); err != nil {
		t.Fatalf("first submit: %v", err)
	}
	if !errors.Is(br.Results[1].Err, model.ErrUnavailable) || !strings.Contains(br.Results[1].Err.Message, "room for 4 more") {
		t.Fatalf("second submit: got %+v, want unavailable (room for 4)", br.Results[1])
	}
	if br.Results[2].Err != nil {
		t.Fatalf("trigger: %v", br.Results[2].Err)
	}
	if f.Pending() != 6 || f.ActiveCount() != 1 {
		t.Fatalf("pending %d active %d, want 6 and 1: the refused command wrote", f.Pending(), f.ActiveCount())
	}
	l, err := f.ListInstances(model.InstanceFilter{Task: "q", Limit: 100})
	if err != nil || len(l.Instances) != 7 {
		t.Fatalf("instances: %d (%v), want 7", len(l.Instances), err)
	}
}

func TestFSM_SubmitFireCancel(t *testing.T) {
	f := newTestFSM(t)
	a := &applier{t: t, f: f}
	writeResult(t, a.apply(cmd(t, CmdPutTask, "", t0, PutTask{Task: wideTask("q")})))

	res := a.apply(submitCmd(t, "q", t0,
		SubmitItem{DelayMs: 1000, Payload: []byte(`{"n":1}`)},
		SubmitItem{DelayMs: 2000, Key: "k"},
		SubmitItem{DelayMs: 0},
		SubmitItem{AtMs: t0 + 5000, Key: "k"}, // same key: the existing instance
	))
	sr, err := DecodeSubmitResult(res)
	if err != nil {
		t.Fatal(err)
	}
	got := sr.Instances
	if len(got) != 4 || got[0].State != model.StateScheduled || got[2].State != model.StateReady || !got[3].Existing || got[3].ID != got[1].ID {
		t.Fatalf("submit result: %+v", got)
	}
	if got[0].ScheduledAt.Millis() != t0+1000 {
		t.Fatalf("due: got %v, want now+1s", got[0].ScheduledAt)
	}
	if f.Pending() != 2 {
		t.Fatalf("pending %d, want 2", f.Pending())
	}
	var due []uint64
	if err := f.ScanDue(0, t0+60*60_000, func(id uint64, dueMs int64) { due = append(due, id) }); err != nil || len(due) != 2 {
		t.Fatalf("due scan: %v %v, want 2 ids", due, err)
	}
	id0, _ := model.ParseID(got[0].ID)
	// Fire the first twice: the second fire is ignored (exactly once).
	for i, want := range []int{1, 0} {
		c, _ := NewCommand(CmdFire, "", "scheduler", Fire{Instances: []uint64{id0}})
		c.Now, c.Node = t0+1000+int64(i), "n2"
		var fr FireResult
		if err := a.apply(c).Decode(&fr); err != nil {
			t.Fatal(err)
		}
		if fr.Fired != want {
			t.Fatalf("fire %d: fired %d, want %d", i, fr.Fired, want)
		}
	}
	in, err := f.GetInstance(id0)
	if err != nil {
		t.Fatal(err)
	}
	if in.State != model.StateReady || in.FiredAt.Millis() != t0+1000 || string(in.Payload) != `{"n":1}` || in.Source != model.SourceDelay {
		t.Fatalf("fired instance: %+v", in)
	}
	if f.Pending() != 1 || f.LastFired() != got[0].ID {
		t.Fatalf("pending %d last fired %q", f.Pending(), f.LastFired())
	}
	// Deleting the task cancels what is still SCHEDULED.
	writeResult(t, a.apply(cmd(t, CmdDeleteTask, "", t0+1500, TaskRef{Name: "q"})))
	id1, _ := model.ParseID(got[1].ID)
	in, _ = f.GetInstance(id1)
	if in.State != model.StateCanceled || f.Pending() != 0 {
		t.Fatalf("after delete: state %s pending %d, want CANCELED 0", in.State, f.Pending())
	}
	if last := in.Events[len(in.Events)-1]; last.Type != "canceled" {
		t.Fatalf("events: %+v", in.Events)
	}
	if r := a.apply(submitCmd(t, "q", t0+2000, SubmitItem{DelayMs: 1})); !errors.Is(r.Err, model.ErrNotFound) {
		t.Fatalf("submit to deleted task: %v", r.Err)
	}
}

func TestFSM_TaskFireWatermark(t *testing.T) {
	f := newTestFSM(t)
	a := &applier{t: t, f: f}
	writeResult(t, a.apply(cmd(t, CmdPutTask, "", t0, PutTask{Task: cronTask("c", "* * * * * *")})))
	fire := func(now int64, tf ...TaskFire) FireResult {
		t.Helper()
		c, _ := NewCommand(CmdFire, "", "scheduler", Fire{Tasks: tf})
		c.Now, c.Node = now, "n1"
		var fr FireResult
		if err := a.apply(c).Decode(&fr); err != nil {
			t.Fatal(err)
		}
		return fr
	}
	tests := []struct {
		name        string
		tf          TaskFire
		wantCreated int
	}{
		{"first fire", TaskFire{Task: "c", Version: 1, At: t0 + 1000}, 1},
		{"same time again (new leader re-proposes)", TaskFire{Task: "c", Version: 1, At: t0 + 1000}, 0},
		{"older time", TaskFire{Task: "c", Version: 1, At: t0 + 500}, 0},
		{"stale version", TaskFire{Task: "c", Version: 9, At: t0 + 2000}, 0},
		{"misfire then fire", TaskFire{Task: "c", Version: 1, Missed: 3, MissedFirst: t0 + 2000, MissedLast: t0 + 4000, At: t0 + 5000}, 1},
		{"fire inside misfired span", TaskFire{Task: "c", Version: 1, At: t0 + 3000}, 0},
		{"unknown task", TaskFire{Task: "zz", Version: 1, At: t0 + 6000}, 0},
	}
	for _, tc := range tests {
		fr := fire(t0+6000, tc.tf)
		if len(fr.Created) != tc.wantCreated {
			t.Fatalf("%s: created %d, want %d", tc.name, len(fr.Created), tc.wantCreated)
		}
	}
	ev, _ := f.TaskEvents("c")
	if len(ev.Events) != 1 || ev.Events[0].Type != "misfire" {
		t.Fatalf("events: %+v", ev.Events)
	}
	list, _ := f.ListInstances(model.InstanceFilter{Task: "c"})
	if len(list.Instances) != 2 {
		t.Fatalf("instances: %d, want 2", len(list.Instances))
	}
	// Paused tasks do not fire; resume moves the watermark to the resume time.
	a.apply(cmd(t, CmdPauseTask, "", t0+7000, TaskRef{Name: "c"}))
	if fr := fire(t0+8000, TaskFire{Task: "c", Version: 2, At: t0 + 8000}); len(fr.Created) != 0 {
		t.Fatal("paused task fired")
	}
	a.apply(cmd(t, CmdResumeTask, "", t0+20000, TaskRef{Name: "c"}))
	ts, _ := f.TaskSchedule("c")
	if ts.Watermark != t0+20000 {
		t.Fatalf("watermark after resume %d, want resume time", ts.Watermark-t0)
	}
	if fr := fire(t0+21000, TaskFire{Task: "c", Version: 3, At: t0 + 15000}); len(fr.Created) != 0 {
		t.Fatal("fired a time inside the paused span")
	}
}

func TestFSM_ListInstancesByTaskPages(t *testing.T) {
	f := newTestFSM(t)
	a := &applier{t: t, f: f}
	writeResult(t, a.apply(cmd(t, CmdPutTask, "", t0, PutTask{Task: wideTask("p")})))
	writeResult(t, a.apply(cmd(t, CmdPutTask, "", t0, PutTask{Task: wideTask("other")})))
	var want []string
	for b := 0; b < 3; b++ {
		var items []SubmitItem
		for i := 0; i < 5; i++ {
			items = append(items, SubmitItem{DelayMs: int64(1000 * (i + 1))})
		}
		sr, err := DecodeSubmitResult(a.apply(submitCmd(t, "p", t0, items...)))
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range sr.Instances {
			want = append(want, s.ID)
		}
		a.apply(submitCmd(t, "other", t0, SubmitItem{DelayMs: 1}))
		var tr model.Submitted
		if err := a.apply(cmd(t, CmdTrigger, "", t0, Trigger{Task: "p"})).Decode(&tr); err != nil {
			t.Fatal(err)
		}
		want = append(want, tr.ID)
	}
	// Newest first, in pages of 4, across ranges.
	var got []string
	cursor := ""
	for {
		l, err := f.ListInstances(model.InstanceFilter{Task: "p", Limit: 4, Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		for _, in := range l.Instances {
			got = append(got, in.ID)
		}
		if l.NextCursor == "" {
			break
		}
		cursor = l.NextCursor
	}
	if len(got) != len(want) {
		t.Fatalf("got %d instances, want %d", len(got), len(want))
	}
	for i := range got {
		if got[i] != want[len(want)-1-i] {
			t.Fatalf("position %d: got %s, want %s", i, got[i], want[len(want)-1-i])
		}
	}
	l, _ := f.ListInstances(model.InstanceFilter{Task: "p", State: model.StateReady})
	if len(l.Instances) != 3 {
		t.Fatalf("READY instances of p: %d, want 3 (the triggers)", len(l.Instances))
	}
}

func TestSnapshotIndex(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "fsm.db")
	f := openTest(t, path, false)
	a := &applier{t: t, f: f}
	a.apply(cmd(t, CmdPutTask, "", t0, PutTask{Task: cronTask("a", "@hourly")}))
	a.apply(cmd(t, CmdPutTask, "", t0+1, PutTask{Task: cronTask("b", "@hourly")}))
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if idx, err := SnapshotIndex(path); err != nil || idx != 2 {
		t.Fatalf("SnapshotIndex = %d, %v; want 2", idx, err)
	}
	other := filepath.Join(dir, "other.db")
	db, err := bolt.Open(other, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	for _, p := range []string{other, filepath.Join(dir, "missing.db")} {
		if _, err := SnapshotIndex(p); err == nil {
			t.Errorf("SnapshotIndex(%s) accepted a file that is not an ax state machine", filepath.Base(p))
		}
	}
}
