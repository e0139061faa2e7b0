package command

import "testing"

func TestType(t *testing.T) {
	tests := []struct {
		typ       Type
		name      string
		known     bool
		ignorable bool
		proto     int
	}{
		{TypePutTask, "put_task", true, false, 1},
		{TypeBatch, "batch", true, false, 1},
		{TypeSetProto, "set_proto", true, false, 2},
		{TypeNote, "note", true, false, 3},
		{TypeDeleteChannel, "delete_channel", true, false, 4},
		{TypeRerun, "rerun", true, false, 7},
		{TypePutCalendar, "put_calendar", true, false, 8},
		{TypeDeleteWindow, "delete_window", true, false, 8},
		{TypeDeletePool, "delete_pool", true, false, 8},
		{TypeShard, "shard", true, false, 8},
		{TypePromoteRollout, "promote_rollout", true, false, 8},
		{TypeAbortRollout, "abort_rollout", true, false, 8},
		{TypeRestoreBegin, "restore_begin", true, false, 9},
		{TypeRestoreAbort, "restore_abort", true, false, 9},
		{61, "command(61)", false, false, ProtoVersion + 1},
		{0, "command(0)", false, false, ProtoVersion + 1},
		{29, "command(29)", false, false, ProtoVersion + 1}, // taken by other work of release 3
		{38, "command(38)", false, false, ProtoVersion + 1},
		{Ignorable | 38, "command(166)", false, true, ProtoVersion + 1},
		{Ignorable | TypeLease, "command(140)", false, true, ProtoVersion + 1}, // the bit is part of the number
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.typ.String(); got != tt.name {
				t.Errorf("String() = %q, want %q", got, tt.name)
			}
			if got := tt.typ.Known(); got != tt.known {
				t.Errorf("Known() = %v, want %v", got, tt.known)
			}
			if got := tt.typ.Ignorable(); got != tt.ignorable {
				t.Errorf("Ignorable() = %v, want %v", got, tt.ignorable)
			}
			if got := MinProto(tt.typ); got != tt.proto {
				t.Errorf("MinProto() = %d, want %d", got, tt.proto)
			}
		})
	}
	if n := len(Types()); n != 48 {
		t.Errorf("Types() lists %d types, want 48", n)
	}
}

// TestDecodeJSON_OtherErrors: only type errors are reworded; a syntax
// error keeps encoding/json's words.
func TestDecodeJSON_OtherErrors(t *testing.T) {
	c := &Command{Type: TypeLease, Body: []byte(`{"e":`)}
	e := DecodeJSON(c, &Lease{})
	if want := "undecodable lease body: unexpected end of JSON input"; e == nil || e.Message != want {
		t.Fatalf("got %v, want %q", e, want)
	}
}
