package model_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/ax-scheduler/ax/model"
)

// FuzzTaskValidate decodes arbitrary JSON into a task: Normalize and
// Validate never panic, and a task that validates is stored and read back
// (a JSON round trip) unchanged and still valid, as the state machine
// does with every definition. ValidateStatic, the state machine's
// variant, accepts every task that Validate accepts. Seeds (valid tasks of
// every trigger and action type, and the two findings: a time past year
// 9999 and the zero time) are in testdata/fuzz/FuzzTaskValidate.
func FuzzTaskValidate(f *testing.F) {
	f.Fuzz(func(t *testing.T, b []byte) {
		var tk model.Task
		if json.Unmarshal(b, &tk) != nil {
			return
		}
		raw := tk
		_ = raw.ValidateStatic()
		tk.Normalize()
		if tk.Validate() != nil {
			return
		}
		if err := tk.ValidateStatic(); err != nil {
			t.Fatalf("Validate accepts, ValidateStatic refuses: %v", err)
		}
		enc, err := json.Marshal(tk)
		if err != nil {
			t.Fatalf("a valid task does not encode: %v", err)
		}
		var back model.Task
		if err := json.Unmarshal(enc, &back); err != nil {
			t.Fatalf("a valid task does not decode after encoding: %v\n%s", err, enc)
		}
		if err := back.Validate(); err != nil {
			t.Fatalf("a valid task is invalid after a round trip: %v\n%s", err, enc)
		}
		again, err := json.Marshal(back)
		if err != nil || !bytes.Equal(enc, again) {
			t.Fatalf("encoding is not stable:\n%s\n%s", enc, again)
		}
	})
}
