package fsm

import "testing"

func TestMinProto(t *testing.T) {
	for typ := CmdPutTask; typ <= CmdPrune; typ++ {
		if got := MinProto(typ); got != 1 {
			t.Errorf("MinProto(%s) = %d, want 1", typ, got)
		}
	}
	for typ := CmdACLBootstrap; typ <= CmdSetMemberKey; typ++ {
		if got := MinProto(typ); got != 2 {
			t.Errorf("MinProto(%s) = %d, want 2", typ, got)
		}
	}
	if got := MinProto(0); got <= ProtoVersion {
		t.Errorf("MinProto(0) = %d, want more than ProtoVersion %d", got, ProtoVersion)
	}
}
