package fsm

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/model"
)

// TestDecodeAuditRef: the op, actor and time of a stored task version
// are read without its definition, whatever the actor's name holds (a
// quote, the definition's own key) and whatever the definition holds; a
// version without a definition reads too.
func TestDecodeAuditRef(t *testing.T) {
	at := model.Time{Time: time.Date(2026, 3, 8, 10, 0, 0, 123e6, time.UTC)}
	def := &model.Task{Name: "t", Action: model.Action{Type: model.ActionShell, Command: `echo '"op":"x","actor":"y"'`}}
	for _, tv := range []model.TaskVersion{
		{Version: 3, Op: "update", Actor: `eve,"task":{"op":"delete"}`, Time: at, Task: def},
		{Version: 1, Op: "create", Actor: "alice", Time: at, Task: def},
		{Version: 2, Op: "delete", Actor: "bob", Time: at},
	} {
		b, err := json.Marshal(tv)
		if err != nil {
			t.Fatal(err)
		}
		var ref AuditRef
		if err := decodeAuditRef(b, &ref); err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		if ref.Op != tv.Op || ref.Actor != tv.Actor || !ref.Time.Equal(at.Time) {
			t.Errorf("%s: read %+v", b, ref)
		}
	}
	if err := decodeAuditRef([]byte(`{"op":`), new(AuditRef)); err == nil {
		t.Error("a truncated version reads without error")
	}
}
