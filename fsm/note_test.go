package fsm

import (
	"strings"
	"testing"

	"github.com/ax-scheduler/ax/model"
)

// TestFSM_Note: a note is recorded on a READY instance once per wait (a
// repeated note, from this or another leader, adds nothing), never on an
// instance that is not READY, and a new wait gets a new one.
func TestFSM_Note(t *testing.T) {
	fx := newExecFixture(t, model.Policy{MaxRetries: 1})
	id, other := fx.trigger(), fx.trigger()
	fx.lease(other) // RUNNING: not noted
	count := func(id uint64) int {
		n := 0
		for _, e := range fx.inst(id).Events {
			if e.Type == NoteNoExecutor {
				n++
			}
		}
		return n
	}
	note := Note{IDs: []uint64{id, other, 999 << 20}, Type: NoteNoExecutor, Message: "no executor can run it"}
	for i := 0; i < 2; i++ {
		var out struct{ Recorded int }
		if err := fx.do(CmdNote, note).Decode(&out); err != nil {
			t.Fatal(err)
		}
		if want := 1 - i; out.Recorded != want {
			t.Errorf("note %d recorded %d, want %d", i+1, out.Recorded, want)
		}
	}
	if got := count(id); got != 1 {
		t.Errorf("READY instance has %d no_executor events, want 1", got)
	}
	if got := count(other); got != 0 {
		t.Errorf("RUNNING instance has %d no_executor events, want 0", got)
	}
	if st := fx.inst(id).State; st != model.StateReady {
		t.Errorf("noted instance is %s, want READY (a note changes no state)", st)
	}
	// Leased, failed and retried: READY again, a new wait.
	fx.lease(id)
	fx.do(CmdComplete, Complete{ID: id, Attempt: 1, Report: model.CompleteRequest{Executor: "e1", Retryable: true, Error: "boom"}})
	fx.now += 60_000
	fx.do(CmdFire, Fire{Instances: []uint64{id}})
	if st := fx.inst(id).State; st != model.StateReady {
		t.Fatalf("retried instance is %s, want READY", st)
	}
	fx.do(CmdNote, note)
	if got := count(id); got != 2 {
		t.Errorf("after a second wait: %d no_executor events, want 2", got)
	}
}

func TestNote_validate(t *testing.T) {
	tests := []struct {
		name      string
		note      Note
		wantField string
	}{
		{"ok", Note{IDs: []uint64{1 << 20}, Type: NoteNoExecutor}, ""},
		{"unknown type", Note{IDs: []uint64{1 << 20}, Type: "gossip"}, "type"},
		{"id 0", Note{IDs: []uint64{0}, Type: NoteNoExecutor}, "ids"},
		{"too many", Note{IDs: make([]uint64, maxNoteIDs+1), Type: NoteNoExecutor}, "ids"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := tt.note.Validate(nil)
			switch {
			case tt.wantField == "" && e != nil:
				t.Errorf("refused: %v", e)
			case tt.wantField != "" && (e == nil || !strings.HasPrefix(e.Field, tt.wantField)):
				t.Errorf("got %v, want an error on %s", e, tt.wantField)
			}
		})
	}
}
