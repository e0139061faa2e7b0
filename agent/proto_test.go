package agent

import (
	"errors"
	"fmt"
	"testing"

	"github.com/ax-scheduler/ax/fsm"
	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/raftnode"
)

func TestProtoGate(t *testing.T) {
	servers := []raftnode.Server{{ID: "n1", Voter: true}, {ID: "n2", Voter: true}, {ID: "n3", Voter: true}}
	rec := func(protos ...int) map[string]fsm.NodeInfo {
		m := map[string]fsm.NodeInfo{}
		for i, p := range protos {
			id := "n" + string(rune('1'+i))
			m[id] = fsm.NodeInfo{ID: id, RaftAddr: id + ":7071", Proto: p}
		}
		return m
	}
	tests := []struct {
		name    string
		cmd     fsm.CommandType
		servers []raftnode.Server
		nodes   map[string]fsm.NodeInfo
		want    string // error message, "" for none
	}{
		{"protocol 1 command, old members", fsm.CmdPutTask, servers, rec(0, 0, 0), ""},
		{"protocol 2 command, all upgraded", fsm.CmdACLPutToken, servers, rec(2, 2, 2), ""},
		{"one member without a protocol", fsm.CmdACLPutToken, servers, rec(2, 0, 2),
			"member n2 runs protocol 1; upgrade every member before using acl_put_token"},
		{"one member without a record", fsm.CmdPutSecret, servers, rec(2, 2),
			"member n3 runs protocol 1; upgrade every member before using put_secret"},
		{"the lowest is named", fsm.CmdACLBootstrap, servers, rec(2, 1, 0),
			"member n2 runs protocol 1; upgrade every member before using acl_bootstrap"},
		{"self counts with its binary", fsm.CmdDeleteSecret, servers, rec(0, 2, 2), ""},
		{"a non-voter counts", fsm.CmdACLDeleteToken, append(servers[:3:3], raftnode.Server{ID: "n4"}), rec(2, 2, 2),
			"member n4 runs protocol 1; upgrade every member before using acl_delete_token"},
		{"a record of a removed member does not count", fsm.CmdACLPutToken, servers[:2], rec(2, 2, 0), ""},
		{"a type this binary does not know", fsm.CommandType(200), servers, rec(fsm.ProtoVersion, fsm.ProtoVersion, fsm.ProtoVersion),
			fmt.Sprintf("member n1 runs protocol %d; upgrade every member before using command(200)", fsm.ProtoVersion)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := protoGate(tc.cmd, "n1", tc.servers, tc.nodes)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("got %v, want no error", err)
				}
				return
			}
			var me *model.Error
			if !errors.As(err, &me) || me.Code != model.CodePrecondition || me.Message != tc.want {
				t.Fatalf("got %#v, want failed_precondition %q", err, tc.want)
			}
			if !errors.Is(err, model.ErrPrecondition) {
				t.Fatalf("got %v, want it to match model.ErrPrecondition", err)
			}
		})
	}
}
