package command

import (
	"encoding/json"

	"github.com/ax-scheduler/ax/model"
)

// PutTask creates or updates a task. A non-zero Task.Version is a
// precondition: the current version must equal it.
type PutTask struct {
	Task model.Task `json:"task"`
	// KeepPaused, from protocol 5, leaves the task's paused state as it
	// is (not paused for a new task) whatever Task.Paused says: paused is
	// operational state, and the API sets this when a request's body has
	// no "paused" key. Before protocol 5 it is ignored (as a replica of
	// an older release, which does not know it, ignores it).
	KeepPaused bool `json:"keepPaused,omitempty"`
}

// Validate normalizes the task (the state machine stores it normalized)
// and checks its name. The rest of the API's checks (StrictStatic) depend
// on the protocol the state machine has reached: the first release's
// API accepted templates and times that this one refuses, and its entries
// must replay as they were first applied.
func (p *PutTask) Validate(*Command) *model.Error {
	p.Task.Normalize()
	return checkName(field("name"), p.Task.Name)
}

// Storable is what protocol 1 entries are held to: the task must read
// back as it is stored (the first release's API let through times that
// did not, and every later read of such a task failed).
func (p *PutTask) Storable() *model.Error {
	b, err := json.Marshal(&p.Task)
	if err == nil {
		var back model.Task
		err = json.Unmarshal(b, &back)
	}
	if err != nil {
		return model.Errorf(model.CodeInvalid, "the task would not read back once stored: %v", err)
	}
	return nil
}

// StrictStatic checks the task as the API does, but for what depends on
// the node or may run long (model.Task.ValidateStatic): from protocol 2
// inside apply, and always before a new proposal.
func (p *PutTask) StrictStatic() *model.Error {
	if err := p.Task.ValidateStatic(); err != nil {
		return asModelError(err)
	}
	return nil
}

// TaskRef names a task (or a token, secret or channel for the types that
// say so).
type TaskRef struct {
	Name string `json:"name"`
}

// Validate checks the name.
func (r *TaskRef) Validate(*Command) *model.Error { return checkName(field("name"), r.Name) }

// NodeRef names a node: the body of TypeRemoveNode.
type NodeRef struct {
	Name string `json:"name"`
}

// Validate checks the node id.
func (r *NodeRef) Validate(*Command) *model.Error { return checkNodeID("name", r.Name) }

// NodeInfo is what the state machine remembers of a cluster member (the
// body of TypeSetNode): the addresses other nodes use to forward requests
// to it. Raft's own configuration remains the source of truth for
// membership.
type NodeInfo struct {
	ID       string `json:"id"`
	RaftAddr string `json:"raftAddr"`
	HTTPAddr string `json:"httpAddr"`
	// Proto is the protocol the node's binary speaks (ProtoVersion); 0 in
	// records of nodes older than protocol 2, which count as 1.
	Proto int `json:"proto,omitempty"`
}

// Validate checks the id, the addresses and the protocol.
func (n *NodeInfo) Validate(*Command) *model.Error {
	if e := checkNodeID("id", n.ID); e != nil {
		return e
	}
	if n.RaftAddr == "" {
		return model.FieldErrorf("raftAddr", "required")
	}
	if e := checkLen(field("raftAddr"), n.RaftAddr, maxAddr); e != nil {
		return e
	}
	if e := checkLen(field("httpAddr"), n.HTTPAddr, maxAddr); e != nil {
		return e
	}
	if n.Proto < 0 || n.Proto > maxProto {
		return model.FieldErrorf("proto", "protocol %d out of range", n.Proto)
	}
	return nil
}
