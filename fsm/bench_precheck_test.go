package fsm

import (
	"path/filepath"
	"testing"

	"github.com/hashicorp/raft"
)

// BenchmarkPrecheck measures what the leader spends before proposing a
// command it would let through (the common case): a trigger and a
// single submission of an existing task, and a put_task that changes it.
func BenchmarkPrecheck(b *testing.B) {
	f, err := Open(Config{Path: filepath.Join(b.TempDir(), "fsm.db"), NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	put, err := NewCommand(CmdPutTask, "", "bench", PutTask{Task: wideTask("t")})
	if err != nil {
		b.Fatal(err)
	}
	put.Now = t0
	f.ApplyBatch([]*raft.Log{{Index: 1, Term: 1, Type: raft.LogCommand, Data: put.Encode()}})
	changed := wideTask("t")
	changed.Action.Command = "changed"
	cmds := map[string]*Command{
		"submit": {Type: CmdSubmit, Body: EncodeSubmit(&Submit{Task: "t", Items: []SubmitItem{{DelayMs: 1000}}})},
	}
	for name, body := range map[string]struct {
		typ CommandType
		v   any
	}{"trigger": {CmdTrigger, Trigger{Task: "t"}}, "put_task": {CmdPutTask, PutTask{Task: changed}}} {
		if cmds[name], err = NewCommand(body.typ, "", "bench", body.v); err != nil {
			b.Fatal(err)
		}
	}
	for _, name := range []string{"trigger", "submit", "put_task"} {
		c := cmds[name]
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				if r := f.Precheck(c); r != nil {
					b.Fatalf("answered %+v %s", r.Err, r.Data)
				}
			}
		})
	}
}
