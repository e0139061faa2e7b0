package replica

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/ax-scheduler/ax/fsm"
	"github.com/ax-scheduler/ax/fsm/command"
	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/raftnode"
)

// checkProto refuses a command that needs a newer protocol than a member
// of the Raft configuration speaks (commandProto against the
// command.NodeInfo.Proto the member recorded), so that no replica meets a
// command type it does not know, and the cluster's protocol is raised only
// to what every member speaks. Non-voters count too: they apply the log
// as well. This node counts with its own command.ProtoVersion.
func checkProto(ctx context.Context, n *raftnode.Node, f *fsm.FSM, self string, c *command.Command) error {
	need := commandProto(c)
	if need <= 1 {
		return nil
	}
	servers, err := n.Servers(ctx)
	if err != nil {
		return err
	}
	nodes, err := f.Nodes()
	if err != nil {
		return err
	}
	return protoGate(need, c.Type, self, servers, nodes)
}

// commandProto is the protocol every member must speak before c is
// proposed: its type's (command.MinProto), and for set_proto the protocol it
// raises the cluster to.
func commandProto(c *command.Command) int {
	need := command.MinProto(c.Type)
	if c.Type == command.TypeSetProto {
		var p command.SetProto
		if json.Unmarshal(c.Body, &p) == nil {
			need = max(need, p.Proto)
		}
	}
	return need
}

// protoGate is checkProto's decision: a failed_precondition error naming
// the member with the lowest protocol (the first by id among equals) if
// it is below need, the protocol command type t needs.
func protoGate(need int, t command.Type, self string, servers []raftnode.Server, nodes map[string]command.NodeInfo) error {
	low, lowID := LowestProto(self, servers, nodes)
	if low >= need {
		return nil
	}
	what := "using " + t.String()
	if t == command.TypeSetProto {
		what = fmt.Sprintf("the cluster moves to protocol %d", need)
	}
	return &model.Error{Code: model.CodePrecondition,
		Message: fmt.Sprintf("member %s runs protocol %d; upgrade every member before %s", lowID, low, what)}
}

// LowestProto returns the lowest protocol a member of the configuration
// speaks and that member (the first by id among equals). A member without
// a recorded protocol runs protocol 1; self runs command.ProtoVersion.
func LowestProto(self string, servers []raftnode.Server, nodes map[string]command.NodeInfo) (int, string) {
	ids := make([]string, 0, len(servers))
	for _, s := range servers {
		ids = append(ids, s.ID)
	}
	sort.Strings(ids)
	low, lowID := command.ProtoVersion, self
	for _, id := range ids {
		p := max(nodes[id].Proto, 1)
		if id == self {
			p = command.ProtoVersion
		}
		if p < low {
			low, lowID = p, id
		}
	}
	return low, lowID
}
