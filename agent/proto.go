package agent

import (
	"context"
	"fmt"
	"sort"

	"github.com/ax-scheduler/ax/fsm"
	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/raftnode"
)

// checkProto refuses a command whose type needs a newer protocol than a
// member of the Raft configuration speaks (fsm.MinProto against the
// fsm.NodeInfo.Proto the member recorded), so that no replica meets a
// command type it does not know. Non-voters count too: they apply the log
// as well. This node counts with its own fsm.ProtoVersion.
func (a *Agent) checkProto(ctx context.Context, t fsm.CommandType) error {
	if fsm.MinProto(t) <= 1 {
		return nil
	}
	servers, err := a.node.Servers(ctx)
	if err != nil {
		return err
	}
	nodes, err := a.fsm.Nodes()
	if err != nil {
		return err
	}
	return protoGate(t, a.cfg.NodeID, servers, nodes)
}

// protoGate is checkProto's decision: a failed_precondition error naming
// the member with the lowest protocol (the first by id among equals) if
// it is below what t needs. A member without a recorded protocol runs
// protocol 1.
func protoGate(t fsm.CommandType, self string, servers []raftnode.Server, nodes map[string]fsm.NodeInfo) error {
	need := fsm.MinProto(t)
	ids := make([]string, 0, len(servers))
	for _, s := range servers {
		ids = append(ids, s.ID)
	}
	sort.Strings(ids)
	low, lowID := need, ""
	for _, id := range ids {
		p := max(nodes[id].Proto, 1)
		if id == self {
			p = fsm.ProtoVersion
		}
		if p < low {
			low, lowID = p, id
		}
	}
	if lowID == "" {
		return nil
	}
	return &model.Error{Code: model.CodePrecondition,
		Message: fmt.Sprintf("member %s runs protocol %d; upgrade every member before using %s", lowID, low, t)}
}
