package fsm

import (
	"encoding/json"

	bolt "go.etcd.io/bbolt"

	"github.com/ax-scheduler/ax/model"
)

// NodeInfo is what the state machine remembers of a cluster member: the
// addresses other nodes use to forward requests to it. Raft's own
// configuration remains the source of truth for membership.
type NodeInfo struct {
	ID       string `json:"id"`
	RaftAddr string `json:"raftAddr"`
	HTTPAddr string `json:"httpAddr"`
	// Proto is the protocol the node's binary speaks (ProtoVersion); 0 in
	// records of nodes older than protocol 2, which count as 1.
	Proto int `json:"proto,omitempty"`
}

func (w *writer) setNode() *Result {
	var n NodeInfo
	if e := w.decode(&n); e != nil {
		return errResult(e)
	}
	b, err := json.Marshal(n)
	if err != nil {
		w.err = err
		return nil
	}
	w.put(bktNodes, []byte(n.ID), b)
	return okResult(struct{}{})
}

func (w *writer) removeNode() *Result {
	var r nodeRef
	if e := w.decode(&r); e != nil {
		return errResult(e)
	}
	w.del(bktNodes, []byte(r.Name))
	return okResult(struct{}{})
}

// Nodes returns the known node addresses keyed by node id.
func (f *FSM) Nodes() (map[string]NodeInfo, error) {
	out := map[string]NodeInfo{}
	err := f.view(func(tx *bolt.Tx) error {
		return tx.Bucket(bktNodes).ForEach(func(k, v []byte) error {
			var n NodeInfo
			if err := json.Unmarshal(v, &n); err != nil {
				return err
			}
			out[n.ID] = n
			return nil
		})
	})
	if err != nil {
		return nil, model.Errorf(model.CodeInternal, "read nodes: %v", err)
	}
	return out, nil
}
