package fsm

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

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

// TestFSM_PrepareRestore: a saved state restored into a running cluster
// keeps the running cluster's members, member key and protocol (its
// identity), and the saved data; a file saved without ACLs is refused
// into a cluster that has them; a file that is not a state is refused
// naming the snapshot.
func TestFSM_PrepareRestore(t *testing.T) {
	keyA, keyB := bytes.Repeat([]byte{1}, 32), bytes.Repeat([]byte{2}, 32)
	admin := TokenRecord{Name: "root", Role: model.RoleAdmin, Hash: hashOf('a')}

	saved := newTestFSM(t)
	a := &applier{t: t, f: saved}
	a.apply(cmd(t, CmdSetMemberKey, "", t0, SetMemberKey{Key: keyA}))
	a.apply(cmd(t, CmdSetNode, "", t0, NodeInfo{ID: "old-1", RaftAddr: "10.0.0.1:7001", HTTPAddr: "10.0.0.1:7000"}))
	a.apply(cmd(t, CmdACLBootstrap, "", t0, ACLBootstrap{Token: admin}))
	a.apply(cmd(t, CmdPutTask, "", t0, PutTask{Task: cronTask("saved", "@hourly")}))
	file := saveState(t, saved)

	running := newTestFSM(t)
	r := &applier{t: t, f: running}
	r.apply(cmd(t, CmdSetProto, "", t0, SetProto{Proto: ProtoVersion}))
	r.apply(cmd(t, CmdSetMemberKey, "", t0, SetMemberKey{Key: keyB}))
	r.apply(cmd(t, CmdSetNode, "", t0, NodeInfo{ID: "n1", RaftAddr: "127.0.0.1:7001", HTTPAddr: "127.0.0.1:7000"}))
	r.apply(cmd(t, CmdPutTask, "", t0, PutTask{Task: cronTask("running", "@hourly")}))

	info, err := running.PrepareRestore(file)
	if err != nil {
		t.Fatal(err)
	}
	if info.Tasks != 1 || info.Protocol != ProtoVersion || info.Index != saved.AppliedIndex() {
		t.Errorf("prepared: %+v", info)
	}
	in, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := running.Restore(in); err != nil {
		t.Fatal(err)
	}
	if _, err := running.GetTask("saved"); err != nil {
		t.Errorf("the saved task: %v", err)
	}
	if _, err := running.GetTask("running"); !errors.Is(err, model.ErrNotFound) {
		t.Errorf("a task of the running state survived the restore: %v", err)
	}
	if got := running.MemberKey(); !bytes.Equal(got, keyB) {
		t.Errorf("member key %x, want the running cluster's", got)
	}
	nodes, err := running.Nodes()
	if _, ok := nodes["n1"]; err != nil || len(nodes) != 1 || !ok {
		t.Errorf("members %v %v, want the running cluster's n1 only", nodes, err)
	}
	if running.Proto() != ProtoVersion {
		t.Errorf("protocol %d, want %d (never down)", running.Proto(), ProtoVersion)
	}
	if !running.ACLBootstrapped() {
		t.Error("the saved ACLs were not restored")
	}

	// A file without ACLs into a cluster with them: refused, unchanged.
	open := newTestFSM(t)
	(&applier{t: t, f: open}).apply(cmd(t, CmdPutTask, "", t0, PutTask{Task: cronTask("open", "@hourly")}))
	openFile := saveState(t, open)
	before, _ := os.ReadFile(openFile)
	_, err = running.PrepareRestore(openFile)
	var me *model.Error
	if !errors.As(err, &me) || me.Code != model.CodeConflict || me.Field != "snapshot" {
		t.Errorf("a state without ACLs into a cluster with them: %v", err)
	}
	if after, _ := os.ReadFile(openFile); !bytes.Equal(before, after) {
		t.Error("a refused file was changed")
	}

	junk := filepath.Join(t.TempDir(), "junk")
	if err := os.WriteFile(junk, []byte("not a state"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := running.PrepareRestore(junk); !errors.As(err, &me) || me.Field != "snapshot" {
		t.Errorf("a file that is no state: %v", err)
	}
}
