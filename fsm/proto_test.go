package fsm

import (
	"testing"

	"github.com/ax-scheduler/ax/model"
)

// TestFSM_ProtoGatesStricterChecks: entries applied before the cluster
// reached protocol 2 are held to the first release's rules, so a replica
// replaying one decides as the replicas that applied it did; from
// set_proto 2 on, the stricter rules apply. The protocol never goes down.
func TestFSM_ProtoGatesStricterChecks(t *testing.T) {
	f := newTestFSM(t)
	a := &applier{t: t, f: f}
	ranged := model.Task{Name: "ranged", Trigger: model.Trigger{Type: model.TriggerEvent},
		Action: model.Action{Type: model.ActionShell, Command: "echo {{range 3}}x{{end}}"}}
	if f.Proto() != 1 {
		t.Fatalf("a new state machine is at protocol %d, want 1", f.Proto())
	}
	if res := a.apply(cmd(t, CmdPutTask, "", t0, PutTask{Task: ranged})); res.Err != nil {
		t.Fatalf("protocol 1 refused a task the first release accepted: %v", res.Err)
	}
	for _, p := range []int{0, ProtoVersion + 1} {
		if res := a.apply(cmd(t, CmdSetProto, "", t0, SetProto{Proto: p})); res.Err == nil {
			t.Errorf("set_proto %d accepted", p)
		}
	}
	if res := a.apply(cmd(t, CmdSetProto, "", t0, SetProto{Proto: 2})); res.Err != nil {
		t.Fatal(res.Err)
	}
	if res := a.apply(cmd(t, CmdSetProto, "", t0, SetProto{Proto: 1})); res.Err != nil || f.Proto() != 2 {
		t.Fatalf("set_proto 1 after 2: %v, protocol %d; want a no-op at 2", res.Err, f.Proto())
	}
	ranged.Name = "ranged2"
	if res := a.apply(cmd(t, CmdPutTask, "", t0, PutTask{Task: ranged})); res.Err == nil || res.Err.Field != "action.command" {
		t.Fatalf("protocol 2 applied a range template: %v", res.Err)
	}
	// A new proposal meets this version's rules whatever the state's
	// protocol: Precheck holds it to them.
	g := newTestFSM(t)
	if r := g.Precheck(cmd(t, CmdPutTask, "", t0, PutTask{Task: ranged})); r == nil || r.Err == nil {
		t.Fatalf("Precheck let a range template through at protocol 1")
	}
}
