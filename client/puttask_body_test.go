package client

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/ax-scheduler/ax/model"
)

// TestPutTaskBody: paused is sent only when true; the rest of the
// definition is sent as model.Task encodes it.
func TestPutTaskBody(t *testing.T) {
	for _, paused := range []bool{false, true} {
		task := &model.Task{Name: "t", Paused: paused, Trigger: model.Trigger{Type: model.TriggerEvent},
			Action: model.Action{Type: model.ActionShell, Command: "true"}}
		b, err := json.Marshal(newPutTaskBody(task))
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		got, has := m["paused"]
		if has != paused || (paused && got != true) {
			t.Errorf("paused %v: body %s", paused, b)
		}
		plain, _ := json.Marshal(task)
		delete(m, "paused")
		var want map[string]any
		_ = json.Unmarshal(plain, &want)
		delete(want, "paused")
		wb, _ := json.Marshal(want)
		gb, _ := json.Marshal(m)
		if string(wb) != string(gb) {
			t.Errorf("paused %v: body %s, want the task's own encoding %s", paused, gb, wb)
		}
		if strings.Count(string(b), `"paused"`) > 1 {
			t.Errorf("paused twice: %s", b)
		}
	}
}
