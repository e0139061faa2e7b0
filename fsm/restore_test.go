package fsm

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/ax-scheduler/ax/fsm/command"
	"github.com/ax-scheduler/ax/model"
)

// saveState writes f's state to a file, as ax snapshot save does.
func saveState(t *testing.T, f *FSM) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "saved.ax")
	out, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteState(out, nil); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// restoreCmds returns the commands that restore file through the log, as
// the leader proposes them (replica/restore.go), in chunks of size bytes:
// begin, the chunks, the switch.
func restoreCmds(t *testing.T, id, file string, size int) []*Command {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	out := []*Command{cmd(t, command.TypeRestoreBegin, "", t0, command.RestoreBegin{ID: id, Size: int64(len(b)), SHA256: hex.EncodeToString(sum[:])})}
	for off := 0; off < len(b); off += size {
		out = append(out, chunkCmd(id, int64(off), b[off:min(off+size, len(b))]))
	}
	return append(out, cmd(t, command.TypeRestoreSwitch, "", t0, command.RestoreRef{ID: id}))
}

func chunkCmd(id string, off int64, data []byte) *Command {
	return &Command{Type: command.TypeRestoreChunk, Now: t0, Actor: "tester",
		Body: command.EncodeRestoreChunk(&command.RestoreChunk{ID: id, Offset: off, Data: data})}
}

// restoreFixture is a saved state (a task, ACLs, member key A, member
// old-1) and a running one (protocol 9, member key B, member n1, another
// task) with its applier.
func restoreFixture(t *testing.T) (file string, running *FSM, r *applier) {
	t.Helper()
	keyA, keyB := bytes.Repeat([]byte{1}, 32), bytes.Repeat([]byte{2}, 32)
	admin := TokenRecord{Name: "root", Role: model.RoleAdmin, Hash: hashOf('a')}
	saved := newTestFSM(t)
	a := &applier{t: t, f: saved}
	a.apply(cmd(t, CmdSetMemberKey, "", t0, SetMemberKey{Key: keyA}))
	a.apply(cmd(t, CmdSetNode, "", t0, NodeInfo{ID: "old-1", RaftAddr: "10.0.0.1:7001", HTTPAddr: "10.0.0.1:7000"}))
	a.apply(cmd(t, CmdACLBootstrap, "", t0, ACLBootstrap{Token: admin}))
	a.apply(cmd(t, CmdPutTask, "", t0, PutTask{Task: cronTask("saved", "@hourly")}))
	file = saveState(t, saved)

	running = newTestFSM(t)
	r = &applier{t: t, f: running}
	r.apply(cmd(t, CmdSetProto, "", t0, SetProto{Proto: ProtoVersion}))
	r.apply(cmd(t, CmdSetMemberKey, "", t0, SetMemberKey{Key: keyB}))
	r.apply(cmd(t, CmdSetNode, "", t0, NodeInfo{ID: "n1", RaftAddr: "127.0.0.1:7001", HTTPAddr: "127.0.0.1:7000"}))
	r.apply(cmd(t, CmdPutTask, "", t0, PutTask{Task: cronTask("running", "@hourly")}))
	return file, running, r
}

// TestFSM_RestoreThroughLog: a saved state restored into a running
// cluster through the log (begin, chunks, switch) replaces the state,
// keeps the running cluster's members, member key and protocol (its
// identity), records the switch as the applied index, and survives a
// restart; two replicas that apply the same entries in other batches
// hold the same state.
func TestFSM_RestoreThroughLog(t *testing.T) {
	file, running, r := restoreFixture(t)
	info, err := running.CheckRestore(file)
	if err != nil {
		t.Fatal(err)
	}
	if info.Tasks != 1 || !info.ACLs {
		t.Errorf("checked: %+v", info)
	}
	// A second replica with the same state, fed the restore in one batch.
	_, twin, tw := restoreFixture(t)

	cmds := restoreCmds(t, "r1", file, 4096)
	if len(cmds) < 4 {
		t.Fatalf("only %d commands: the test wants several chunks", len(cmds))
	}
	for i, c := range cmds {
		if res := r.apply(c); res.Err != nil {
			t.Fatalf("command %d (%s): %v", i, c.Type, res.Err)
		}
		if i == len(cmds)-2 {
			if id, ok, err := running.StagedRestore(); !ok || id != "r1" || err != nil {
				t.Fatalf("staged before the switch: %q %v %v", id, ok, err)
			}
		}
	}
	var logs []*raft.Log
	for _, c := range append([]*Command{cmd(t, CmdNoop, "", t0, nil)}, append(cmds, cmd(t, CmdNoop, "", t0, nil))...) {
		tw.index++
		logs = append(logs, &raft.Log{Index: tw.index, Term: 1, Type: raft.LogCommand, Data: c.Encode()})
	}
	for i, out := range twin.ApplyBatch(logs) {
		if res := out.(*Result); res.Err != nil {
			t.Fatalf("batched entry %d: %v", i, res.Err)
		}
	}
	r.apply(cmd(t, CmdNoop, "", t0, nil)) // level with the twin's trailing no-op

	check := func(f *FSM) {
		t.Helper()
		if _, err := f.GetTask("saved"); err != nil {
			t.Errorf("the saved task: %v", err)
		}
		if _, err := f.GetTask("running"); !errors.Is(err, model.ErrNotFound) {
			t.Errorf("a task of the running state survived the restore: %v", err)
		}
		if got := f.MemberKey(); !bytes.Equal(got, bytes.Repeat([]byte{2}, 32)) {
			t.Errorf("member key %x, want the running cluster's", got)
		}
		nodes, err := f.Nodes()
		if _, ok := nodes["n1"]; err != nil || len(nodes) != 1 || !ok {
			t.Errorf("members %v %v, want the running cluster's n1 only", nodes, err)
		}
		if f.Proto() != ProtoVersion {
			t.Errorf("protocol %d, want %d (never down)", f.Proto(), ProtoVersion)
		}
		if !f.ACLBootstrapped() {
			t.Error("the saved ACLs were not restored")
		}
		if _, ok, _ := f.StagedRestore(); ok {
			t.Error("the staging area is still there")
		}
	}
	check(running)
	check(twin)
	if running.AppliedIndex() != r.index {
		t.Errorf("applied %d, want %d", running.AppliedIndex(), r.index)
	}
	var d1, d2 bytes.Buffer
	if err := running.Dump(&d1); err != nil {
		t.Fatal(err)
	}
	if err := twin.Dump(&d2); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(d1.Bytes(), d2.Bytes()) {
		t.Error("two replicas applying the same restore in other batches differ")
	}

	// The switched state is the state file: a restart keeps it.
	path := running.cfg.Path
	if err := running.Close(); err != nil {
		t.Fatal(err)
	}
	again := openTest(t, path, false)
	check(again)
	if again.AppliedIndex() != r.index {
		t.Errorf("after a restart applied %d, want %d", again.AppliedIndex(), r.index)
	}
}

// TestFSM_RestoreThroughLog_Refused: what the restore commands refuse,
// each leaving the state as it was: a chunk out of order or of another
// restore, a switch before every byte is staged, staged bytes whose
// SHA-256 differs, a file without ACLs into a cluster with them, a file
// that is no state; an abort drops the staging area.
func TestFSM_RestoreThroughLog_Refused(t *testing.T) {
	file, running, r := restoreFixture(t)
	b, _ := os.ReadFile(file)
	var before bytes.Buffer
	if err := running.Dump(&before); err != nil {
		t.Fatal(err)
	}
	unchanged := func(what string) {
		t.Helper()
		if _, err := running.GetTask("running"); err != nil {
			t.Errorf("%s: the running task: %v", what, err)
		}
		if _, ok, _ := running.StagedRestore(); ok {
			t.Errorf("%s: the staging area is still there", what)
		}
	}
	want := func(res *Result, field, substr string) {
		t.Helper()
		if res.Err == nil || res.Err.Field != field || !strings.Contains(res.Err.Message, substr) {
			t.Errorf("got %+v, want an error on %q saying %q", res.Err, field, substr)
		}
	}
	cmds := restoreCmds(t, "r1", file, 4096)
	begin, chunks, sw := cmds[0], cmds[1:len(cmds)-1], cmds[len(cmds)-1]

	// A chunk with nothing staged; out of order; of another restore.
	want(r.apply(chunks[0]), "id", `no restore "r1"`)
	r.apply(begin)
	want(r.apply(chunks[1]), "offset", "has 0 bytes staged")
	want(r.apply(chunkCmd("r2", 0, b[:10])), "id", `restore "r1" is being staged, not "r2"`)
	want(r.apply(chunkCmd("r1", 0, make([]byte, len(b)+1))), "data", "past the file's")
	// A switch with a byte missing: refused, the staging area dropped.
	for _, c := range chunks[:len(chunks)-1] {
		if res := r.apply(c); res.Err != nil {
			t.Fatal(res.Err)
		}
	}
	if res := r.apply(sw); res.Err == nil || res.Err.Code != model.CodePrecondition {
		t.Errorf("a switch before every byte is staged: %+v", res.Err)
	}
	unchanged("a switch before every byte")

	// Staged bytes with another SHA-256.
	bad := restoreCmds(t, "r2", file, 1<<20)
	bad[0] = cmd(t, command.TypeRestoreBegin, "", t0, command.RestoreBegin{ID: "r2", Size: int64(len(b)), SHA256: strings.Repeat("00", 32)})
	for _, c := range bad[:len(bad)-1] {
		r.apply(c)
	}
	want(r.apply(bad[len(bad)-1]), "sha256", "not 0000")
	unchanged("another SHA-256")

	// A state without ACLs into a cluster with them (the running state
	// bootstraps ACLs first; the saved file has them, the open one not).
	r.apply(cmd(t, CmdACLBootstrap, "", t0, ACLBootstrap{Token: TokenRecord{Name: "root", Role: model.RoleAdmin, Hash: hashOf('b')}}))
	open := newTestFSM(t)
	(&applier{t: t, f: open}).apply(cmd(t, CmdPutTask, "", t0, PutTask{Task: cronTask("open", "@hourly")}))
	openFile := saveState(t, open)
	if _, err := running.CheckRestore(openFile); err == nil {
		t.Error("CheckRestore let a state without ACLs into a cluster with them")
	}
	for _, c := range restoreCmds(t, "r3", openFile, 1<<20)[:2] {
		r.apply(c)
	}
	res := r.apply(cmd(t, command.TypeRestoreSwitch, "", t0, command.RestoreRef{ID: "r3"}))
	if res.Err == nil || res.Err.Code != model.CodeConflict {
		t.Errorf("a state without ACLs into a cluster with them: %+v", res.Err)
	}
	unchanged("no ACLs")

	// Bytes that are no state.
	junk := []byte("not a state at all")
	sum := sha256.Sum256(junk)
	r.apply(cmd(t, command.TypeRestoreBegin, "", t0, command.RestoreBegin{ID: "r4", Size: int64(len(junk)), SHA256: hex.EncodeToString(sum[:])}))
	r.apply(chunkCmd("r4", 0, junk))
	want(r.apply(cmd(t, command.TypeRestoreSwitch, "", t0, command.RestoreRef{ID: "r4"})), "snapshot", "")
	unchanged("no state")

	// An abort drops what is staged; an abort of nothing is no error.
	r.apply(begin)
	r.apply(chunks[0])
	if res := r.apply(cmd(t, command.TypeRestoreAbort, "", t0, command.RestoreRef{})); res.Err != nil {
		t.Fatal(res.Err)
	}
	unchanged("an abort")
	if res := r.apply(cmd(t, command.TypeRestoreAbort, "", t0, command.RestoreRef{ID: "r1"})); res.Err != nil {
		t.Errorf("an abort of nothing: %v", res.Err)
	}
	if _, err := running.CheckRestore(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Error("CheckRestore of a missing file")
	}
}
