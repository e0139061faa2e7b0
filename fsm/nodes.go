package fsm

import (
	"encoding/json"

	bolt "go.etcd.io/bbolt"

	"github.com/ax-scheduler/ax/fsm/command"
	"github.com/ax-scheduler/ax/model"
)

func (w clusterWrites) setNode(n *command.NodeInfo) *Result {
	b, err := json.Marshal(n)
	if err != nil {
		w.err = err
		return nil
	}
	w.put(bktNodes, []byte(n.ID), b)
	return okResult(struct{}{})
}

func (w clusterWrites) removeNode(r *command.NodeRef) *Result {
	w.del(bktNodes, []byte(r.Name))
	return okResult(struct{}{})
}

// Nodes returns the known node addresses keyed by node id.
func (q clusterReads) Nodes() (map[string]command.NodeInfo, error) {
	out := map[string]command.NodeInfo{}
	err := q.f.view(func(tx *bolt.Tx) error {
		return tx.Bucket(bktNodes).ForEach(func(k, v []byte) error {
			var n command.NodeInfo
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
