package replica

import (
	"errors"
	"fmt"
	"testing"

	"github.com/ax-scheduler/ax/fsm/command"
	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/raftnode"
)

// TestCommandProto: set_proto needs every member at the protocol it
// raises the cluster to, not only the one its type needs (the gate let a
// leader raise the cluster past a member that had not been upgraded, and
// that member refused the entry its peers applied).
func TestCommandProto(t *testing.T) {
	tests := []struct {
		name string
		typ  command.Type
		body any
		want int
	}{
		{"a first-release command", command.TypePutTask, command.PutTask{}, 1},
		{"an ACL command", command.TypeACLPutToken, command.ACLPutToken{}, 2},
		{"set_proto 2", command.TypeSetProto, command.SetProto{Proto: 2}, 2},
		{"set_proto to this version's", command.TypeSetProto, command.SetProto{Proto: command.ProtoVersion}, command.ProtoVersion},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := command.New(tc.typ, "", "tester", tc.body)
			if err != nil {
				t.Fatal(err)
			}
			if got := commandProto(c); got != tc.want {
				t.Fatalf("got %d, want %d", got, tc.want)
			}
		})
	}
	servers := []raftnode.Server{{ID: "n1", Voter: true}, {ID: "n2", Voter: true}}
	nodes := map[string]command.NodeInfo{"n1": {ID: "n1", Proto: command.ProtoVersion}, "n2": {ID: "n2", Proto: command.ProtoVersion - 1}}
	want := fmt.Sprintf("member n2 runs protocol %d; upgrade every member before the cluster moves to protocol %d", command.ProtoVersion-1, command.ProtoVersion)
	if err := protoGate(command.ProtoVersion, command.TypeSetProto, "n1", servers, nodes); err == nil || err.Error() != want {
		t.Fatalf("got %v, want %q", err, want)
	}
}

func TestProtoGate(t *testing.T) {
	servers := []raftnode.Server{{ID: "n1", Voter: true}, {ID: "n2", Voter: true}, {ID: "n3", Voter: true}}
	rec := func(protos ...int) map[string]command.NodeInfo {
		m := map[string]command.NodeInfo{}
		for i, p := range protos {
			id := "n" + string(rune('1'+i))
			m[id] = command.NodeInfo{ID: id, RaftAddr: id + ":7071", Proto: p}
		}
		return m
	}
	tests := []struct {
		name    string
		cmd     command.Type
		servers []raftnode.Server
		nodes   map[string]command.NodeInfo
		want    string // error message, "" for none
	}{
		{"protocol 1 command, old members", command.TypePutTask, servers, rec(0, 0, 0), ""},
		{"protocol 2 command, all upgraded", command.TypeACLPutToken, servers, rec(2, 2, 2), ""},
		{"one member without a protocol", command.TypeACLPutToken, servers, rec(2, 0, 2),
			"member n2 runs protocol 1; upgrade every member before using acl_put_token"},
		{"one member without a record", command.TypePutSecret, servers, rec(2, 2),
			"member n3 runs protocol 1; upgrade every member before using put_secret"},
		{"the lowest is named", command.TypeACLBootstrap, servers, rec(2, 1, 0),
			"member n2 runs protocol 1; upgrade every member before using acl_bootstrap"},
		{"self counts with its binary", command.TypeDeleteSecret, servers, rec(0, 2, 2), ""},
		{"a non-voter counts", command.TypeACLDeleteToken, append(servers[:3:3], raftnode.Server{ID: "n4"}), rec(2, 2, 2),
			"member n4 runs protocol 1; upgrade every member before using acl_delete_token"},
		{"a record of a removed member does not count", command.TypeACLPutToken, servers[:2], rec(2, 2, 0), ""},
		{"a type this binary does not know", command.Type(200), servers, rec(command.ProtoVersion, command.ProtoVersion, command.ProtoVersion),
			fmt.Sprintf("member n1 runs protocol %d; upgrade every member before using command(200)", command.ProtoVersion)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := protoGate(command.MinProto(tc.cmd), tc.cmd, "n1", tc.servers, tc.nodes)
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
