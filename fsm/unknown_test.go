package fsm

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/ax-scheduler/ax/fsm/command"
	"github.com/ax-scheduler/ax/internal/testkit"
	"github.com/ax-scheduler/ax/model"
)

// raftApply applies logs as hashicorp/raft's FSM goroutine does (Apply
// for one entry, ApplyBatch for several) and returns the value of the
// panic that stops the node, if one does: in a node it ends the process.
func raftApply(f *FSM, logs []*raft.Log) (out []interface{}, stop string) {
	defer func() {
		if r := recover(); r != nil {
			out, stop = nil, fmt.Sprint(r)
		}
	}()
	if len(logs) == 1 {
		return []interface{}{f.Apply(logs[0])}, ""
	}
	return f.ApplyBatch(logs), ""
}

// holdsUnknownType reports whether a log entry holds a command of a type
// this version neither knows nor may skip.
func holdsUnknownType(entry []byte) bool {
	c, err := command.Decode(entry)
	if err != nil {
		return false
	}
	cmds := []*command.Command{c}
	if c.Type == command.TypeBatch {
		if cmds, err = command.DecodeBatch(c.Body); err != nil {
			return false
		}
	}
	for _, c := range cmds {
		if !c.Type.Known() && !c.Type.Ignorable() {
			return true
		}
	}
	return false
}

// openLogged opens a state machine at path whose WARN and ERROR logs go
// to logs.
func openLogged(t *testing.T, path string, logs *testkit.Buffer) *FSM {
	t.Helper()
	f, err := Open(Config{Path: path, Logger: hclog.New(&hclog.LoggerOptions{Output: logs, Level: hclog.Warn})})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// TestFSM_UnknownTypeStops: an entry holding a command of a type this
// version does not know, without the ignorable flag, stops the node
// loudly (a panic out of the apply, an ERROR saying to upgrade), commits
// nothing of its batch, and stops it again when the node restarts and
// meets the entry again. Skipping it would make the replica diverge from
// the peers that applied it. (Before, it was answered invalid_argument
// and skipped.)
func TestFSM_UnknownTypeStops(t *testing.T) {
	for _, tc := range []struct {
		name  string
		entry *Command
		typ   CommandType
	}{
		{"a command", raw(99, t0+2, "{}"), 99},
		{"type 0", raw(0, t0+2, ""), 0},
		{"a type between known ones", raw(29, t0+2, "{}"), 29},
		{"in a group commit", EncodeBatch(t0+2, "n1", []*Command{
			cmd(t, CmdTrigger, "b1", 0, Trigger{Task: "q"}), raw(99, 0, "{}")}), 99},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs testkit.Buffer
			path := filepath.Join(t.TempDir(), "fsm.db")
			f := openLogged(t, path, &logs)
			a := &applier{t: t, f: f}
			writeResult(t, a.apply(cmd(t, CmdPutTask, "", t0, PutTask{Task: wideTask("q")})))
			before := dump(t, f)
			good := cmd(t, CmdTrigger, "good", t0+1, Trigger{Task: "q"})
			entries := []*raft.Log{
				{Index: 2, Term: 1, Type: raft.LogCommand, Data: good.Encode()},
				{Index: 3, Term: 1, Type: raft.LogCommand, Data: tc.entry.Encode()},
			}
			for _, logs := range [][]*raft.Log{entries, entries[1:]} {
				if out, stop := raftApply(f, logs); !strings.Contains(stop, fmt.Sprintf("command type %d", tc.typ)) {
					t.Fatalf("got %v (stop %q), want a stop naming type %d", out, stop, tc.typ)
				}
			}
			if got := logs.String(); !strings.Contains(got, "[ERROR]") || !strings.Contains(got, "upgrade this node") {
				t.Fatalf("log:\n%s\nwant an ERROR saying to upgrade the node", got)
			}
			if f.AppliedIndex() != 1 || dump(t, f) != before {
				t.Fatalf("applied %d, want 1, and the state changed:\n%s", f.AppliedIndex(), diffLines(before, dump(t, f)))
			}
			// A restart meets the entries again, and stops again.
			if err := f.Close(); err != nil {
				t.Fatal(err)
			}
			f = openLogged(t, path, &logs)
			if _, stop := raftApply(f, entries); !strings.Contains(stop, "command type") {
				t.Fatalf("after a restart: stop %q, want a stop", stop)
			}
			if f.AppliedIndex() != 1 || dump(t, f) != before {
				t.Fatalf("after a restart: applied %d, want 1, or the state changed", f.AppliedIndex())
			}
		})
	}
}

// TestFSM_UnknownIgnorableTypeSkipped: a command of a type this version
// does not know but flagged ignorable is skipped with a WARN: answered
// invalid_argument, as the release before the flag answered every
// unknown type (so a mixed cluster answers alike), its request id
// remembered, nothing else written; the commands around it apply, and
// replicas that batch the entries differently end alike.
func TestFSM_UnknownIgnorableTypeSkipped(t *testing.T) {
	ign := command.Ignorable | 99
	log := []*Command{
		cmd(t, CmdPutTask, "", t0, PutTask{Task: wideTask("q")}),
		withReq(raw(ign, t0+1, `{"future":true}`), "ign"),
		EncodeBatch(t0+2, "n1", []*Command{cmd(t, CmdTrigger, "t1", 0, Trigger{Task: "q"}),
			withReq(raw(ign, 0, "{}"), "ign-2"), cmd(t, CmdTrigger, "t2", 0, Trigger{Task: "q"})}),
		withReq(raw(ign, t0+3, `{"future":true}`), "ign"), // a retry
	}
	entries := make([]*raft.Log, len(log))
	for i, c := range log {
		entries[i] = &raft.Log{Index: uint64(i + 1), Term: 1, Type: raft.LogCommand, Data: c.Encode()}
	}
	want := &model.Error{Code: model.CodeInvalid, Message: "unknown command type 227"}
	var logsOne, logsEach testkit.Buffer
	one := openLogged(t, filepath.Join(t.TempDir(), "fsm.db"), &logsOne)
	each := openLogged(t, filepath.Join(t.TempDir(), "fsm.db"), &logsEach)
	out, stop := raftApply(one, entries)
	if stop != "" {
		t.Fatalf("stopped: %s", stop)
	}
	for _, l := range entries {
		if _, stop := raftApply(each, []*raft.Log{l}); stop != "" {
			t.Fatalf("stopped: %s", stop)
		}
	}
	for _, i := range []int{1, 3} {
		if r := out[i].(*Result); r.Err == nil || *r.Err != *want {
			t.Errorf("entry %d: got %+v, want %+v", i, r.Err, want)
		}
	}
	br := out[2].(*BatchResult)
	if r := br.Results[1]; r.Err == nil || *r.Err != *want {
		t.Errorf("in the batch: got %+v, want %+v", r.Err, want)
	}
	for _, i := range []int{0, 2} {
		if r := br.Results[i]; r.Err != nil {
			t.Errorf("trigger %d of the batch: %v", i, r.Err)
		}
	}
	if one.AppliedIndex() != 4 || one.ActiveCount() != 2 {
		t.Fatalf("applied %d, active %d, want 4 and 2", one.AppliedIndex(), one.ActiveCount())
	}
	if a, b := dump(t, one), dump(t, each); a != b {
		t.Fatalf("replicas differ:\n%s", diffLines(a, b))
	}
	if !one.knownRequest("ign") || !one.knownRequest("ign-2") {
		t.Fatal("the skipped commands' request ids are not remembered")
	}
	if got := logsOne.String(); strings.Count(got, "flagged ignorable") != 2 || strings.Contains(got, "[ERROR]") {
		t.Fatalf("log:\n%s\nwant a WARN for each skipped command (a retry is answered from its first answer) and no ERROR", got)
	}
}
