package fsm

import (
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"

	"github.com/hashicorp/raft"
	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/ax-scheduler/ax/model"
)

// failOn makes f's applies of commands whose request id is reqID write a
// task record and then fail with fail (a panic).
func failOn(f *FSM, reqID string, fail func(f *FSM, tx *bolt.Tx)) {
	f.applyHook = func(tx *bolt.Tx, c *Command) {
		if c.ReqID == reqID {
			must(tx.Bucket(bktTasks).Put([]byte("half-written"), []byte("{}")))
			fail(f, tx)
		}
	}
}

var failures = map[string]func(f *FSM, tx *bolt.Tx){
	"panic (a bug)": func(*FSM, *bolt.Tx) {
		var m map[string]int
		//lint:ignore SA5000 the point: a runtime error in apply, as a bug would raise
		m["x"]++
	},
	"bbolt key too large": func(_ *FSM, tx *bolt.Tx) {
		must(tx.Bucket(bktTasks).Put(make([]byte, 40000), nil))
	},
	"bbolt key required": func(_ *FSM, tx *bolt.Tx) {
		w := &writer{tx: tx}
		w.put(bktIdem, nil, []byte{1})
		must(w.err)
	},
	"bbolt incompatible value": func(_ *FSM, tx *bolt.Tx) {
		must(tx.Bucket(bktMeta).Put([]byte("k"), []byte{1}))
		_, err := tx.Bucket(bktMeta).CreateBucket([]byte("k"))
		must(err)
	},
}

// replayEntries returns log entries: a task put, a batch of three
// submissions (the middle one with request id "bad") and two triggers.
func replayEntries(t *testing.T) []*raft.Log {
	t.Helper()
	sub := func(id string, delay int64) *Command {
		c := submitCmd(t, "q", t0, SubmitItem{DelayMs: delay})
		c.ReqID = id
		return c
	}
	trig := cmd(t, CmdTrigger, "b", t0+1, Trigger{Task: "q"})
	return []*raft.Log{
		{Index: 1, Type: raft.LogCommand, Data: cmd(t, CmdPutTask, "", t0, PutTask{Task: wideTask("q")}).Encode()},
		{Index: 2, Type: raft.LogCommand, Data: EncodeBatch(t0+1, "n1", []*Command{sub("a", 1000), sub("bad", 2000), sub("c", 0)}).Encode()},
		{Index: 3, Type: raft.LogCommand, Data: trig.Encode()},
		{Index: 4, Type: raft.LogCommand, Data: cmd(t, CmdTrigger, "d", t0+2, Trigger{Task: "q"}).Encode()},
	}
}

// TestFSM_FailedCommandRolledBack: a command that panics or hits a bbolt
// input error is answered as an error and leaves no write, the other
// commands of its entry and batch apply, and the result does not depend
// on how entries are grouped into ApplyBatch calls.
func TestFSM_FailedCommandRolledBack(t *testing.T) {
	for name, fail := range failures {
		t.Run(name, func(t *testing.T) {
			logs := replayEntries(t)
			// One ApplyBatch for all entries.
			one := newTestFSM(t)
			failOn(one, "bad", fail)
			out := one.ApplyBatch(logs)
			// The same entries one by one.
			each := newTestFSM(t)
			failOn(each, "bad", fail)
			for _, l := range logs {
				each.ApplyBatch([]*raft.Log{l})
			}
			br := out[1].(*BatchResult)
			if br.Results[0].Err != nil || br.Results[2].Err != nil {
				t.Fatalf("the batch's other commands: %+v %+v", br.Results[0].Err, br.Results[2].Err)
			}
			wantCode := model.CodeInvalid
			if strings.HasPrefix(name, "panic") {
				wantCode = model.CodeInternal
			}
			if e := br.Results[1].Err; e == nil || e.Code != wantCode || !strings.Contains(e.Message, "submit command could not be applied") {
				t.Fatalf("the failed command: %+v, want %s", e, wantCode)
			}
			if r := out[3].(*Result); r.Err != nil {
				t.Fatalf("the entry after: %v", r.Err)
			}
			if one.AppliedIndex() != 4 || each.AppliedIndex() != 4 {
				t.Fatalf("applied %d and %d, want 4", one.AppliedIndex(), each.AppliedIndex())
			}
			d := dump(t, one)
			if strings.Contains(d, fmt.Sprintf("%x", "half-written")) {
				t.Fatal("the failed command's first write survived")
			}
			if d2 := dump(t, each); d != d2 {
				t.Fatalf("grouping changed the state:\n%s", diffLines(d, d2))
			}
			if one.Pending() != 1 || one.ActiveCount() != 3 {
				t.Fatalf("pending %d active %d, want 1 and 3", one.Pending(), one.ActiveCount())
			}
			// The failed request id is remembered with its error: a retry
			// gets the same answer and changes nothing.
			one.applyHook = nil
			retry := submitCmd(t, "q", t0+5, SubmitItem{DelayMs: 2000})
			retry.ReqID = "bad"
			r := (&applier{t: t, f: one, index: 4}).apply(retry)
			if r.Err == nil || r.Err.Message != br.Results[1].Err.Message {
				t.Fatalf("retry: %+v, want the first error", r.Err)
			}
		})
	}
}

// TestFSM_StorageFailureStops: an error that says the database cannot be
// written, or a failed bbolt assertion (a damaged file), stops the node (a
// panic out of ApplyBatch) and commits nothing.
func TestFSM_StorageFailureStops(t *testing.T) {
	fails := map[string]func(f *FSM, tx *bolt.Tx){
		"bbolt assertion": func(f *FSM, _ *bolt.Tx) {
			tx, err := f.db.Begin(false)
			must(err)
			b := tx.Bucket(bktTasks)
			_ = tx.Rollback()
			b.Cursor().First()
		},
	}
	for _, err := range []error{berrors.ErrTxClosed, berrors.ErrDatabaseNotOpen, fmt.Errorf("write: %w", errNoSpace)} {
		fails[err.Error()] = func(*FSM, *bolt.Tx) { must(err) }
	}
	for name, fail := range fails {
		t.Run(name, func(t *testing.T) {
			f := newTestFSM(t)
			failOn(f, "bad", fail)
			logs := replayEntries(t)
			func() {
				defer func() {
					if recover() == nil {
						t.Fatal("ApplyBatch did not stop")
					}
				}()
				f.ApplyBatch(logs)
			}()
			if f.AppliedIndex() != 0 {
				t.Fatalf("applied %d, want 0", f.AppliedIndex())
			}
		})
	}
}

var errNoSpace = syscall.ENOSPC

func TestStorageFailure(t *testing.T) {
	tests := []struct {
		err  error
		want bool
	}{
		{berrors.ErrKeyRequired, false},
		{berrors.ErrKeyTooLarge, false},
		{berrors.ErrValueTooLarge, false},
		{berrors.ErrIncompatibleValue, false},
		{errRecord, false},
		{errors.New("json: unsupported value"), false},
		{berrors.ErrTxClosed, true},
		{berrors.ErrDatabaseNotOpen, true},
		{berrors.ErrTxNotWritable, true},
		{errNoSpace, true},
	}
	for _, tc := range tests {
		if got := storageFailure(tc.err); got != tc.want {
			t.Errorf("storageFailure(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

// TestFSM_RejectEscalates: a command that fails again while it is being
// answered as an error is answered bare (no request bookkeeping); one that
// fails bare, or an entry that fails as a whole twice, stops the node.
func TestFSM_RejectEscalates(t *testing.T) {
	f := newTestFSM(t)
	cmdFail := &failure{pos: cmdPos{index: 7, sub: 2}, typ: CmdSubmit, err: errors.New("boom")}
	rej := f.reject(nil, cmdFail)
	if r := rej[cmdFail.pos]; r.bare || r.err == nil || r.err.Code != model.CodeInvalid {
		t.Fatalf("first failure: %+v, want an invalid_argument answer with bookkeeping", r)
	}
	rej = f.reject(rej, cmdFail)
	if r := rej[cmdFail.pos]; !r.bare {
		t.Fatalf("second failure: %+v, want bare", r)
	}
	mustStop := func(name string, rej map[cmdPos]rejection, fl *failure) {
		t.Helper()
		defer func() {
			if recover() == nil {
				t.Fatalf("%s: the node did not stop", name)
			}
		}()
		f.reject(rej, fl)
	}
	mustStop("third failure", rej, cmdFail)
	entryFail := &failure{pos: cmdPos{index: 8, sub: entryLevel}, err: errors.New("boom"), stack: []byte("stack")}
	rej = f.reject(rej, entryFail)
	if r := rej[entryFail.pos]; r.err == nil || r.err.Code != model.CodeInternal {
		t.Fatalf("entry failure: %+v, want an internal error", r)
	}
	mustStop("entry failing again", rej, entryFail)
}
