package fsm

import (
	"encoding/binary"
	"encoding/json"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/ax-scheduler/ax/model"
)

// Results (protocol 8): what an instance's successful attempt published,
// in bktResults under the instance's id (a shard, a child instance, has
// its own; a sharded instance's is its shards', in one array, read when
// asked: shardResults). A result goes with its instance when retention prunes it, and
// a later success of the instance (a re-run) replaces it, or removes it
// when it published none. An upstream result reaches a downstream job in
// Jobs (upstreamResults).

// bktResults: u64 id: uvarint attempt, then the result's JSON.
var bktResults = []byte("results")

// keepResult records the result of r's successful attempt (from protocol
// 8): res, or none.
func (w attemptWrites) keepResult(r *record, attempt int, res json.RawMessage) {
	if w.protoAt() < proto8 {
		return
	}
	if len(res) == 0 {
		if w.tx.Bucket(bktResults).Get(u64key(r.ID)) != nil {
			w.del(bktResults, u64key(r.ID))
		}
		return
	}
	w.put(bktResults, u64key(r.ID), append(binary.AppendUvarint(nil, uint64(attempt)), res...))
}

// readResult returns the result stored for instance id: the attempt that
// published it and a copy of its JSON; ok is false when there is none.
func readResult(tx *bolt.Tx, id uint64) (attempt int, res json.RawMessage, ok bool) {
	v := tx.Bucket(bktResults).Get(u64key(id))
	n, k := binary.Uvarint(v)
	if k <= 0 || k == len(v) {
		return 0, nil, false
	}
	return int(n), append(json.RawMessage(nil), v[k:]...), true
}

// maxShardResults bounds the result of a sharded instance, its shards'
// results in one array (1 MiB): a job that reads it downstream carries
// it.
const maxShardResults = 1 << 20

// shardResults returns the result of the fanned-out sharded instance r:
// a JSON array of its shards' results in shard order (null for a shard
// that published none); ok is false when none did, or when the array
// would exceed maxShardResults (why says so).
func shardResults(tx *bolt.Tx, r *record) (res json.RawMessage, ok bool, why string) {
	buf := []byte{'['}
	some := false
	for i := uint64(0); i < uint64(r.Shards); i++ {
		if i > 0 {
			buf = append(buf, ',')
		}
		_, one, found := readResult(tx, r.FirstShard+i)
		if !found {
			buf = append(buf, "null"...)
			continue
		}
		some = true
		if buf = append(buf, one...); len(buf) > maxShardResults {
			return nil, false, fmt.Sprintf("its %d shards' results exceed %d bytes together: read each shard's (GET /v1/instances/{shard}/result)", r.Shards, maxShardResults)
		}
	}
	if !some {
		return nil, false, "none of its shards published one"
	}
	return append(buf, ']'), true, ""
}

// resultOf is instance id's result: its own, or for a sharded instance
// its shards' (shardResults).
func resultOf(tx *bolt.Tx, id uint64) (attempt int, res json.RawMessage, ok bool) {
	if attempt, res, ok = readResult(tx, id); ok {
		return attempt, res, ok
	}
	if r, err := readRecord(tx, id); err == nil && r.FirstShard != 0 {
		res, ok, _ = shardResults(tx, r)
	}
	return 0, res, ok
}

// InstanceResult returns the result the successful attempt of instance id
// published: not found when the instance does not exist, or published
// none (the message says which).
func (q instanceReads) InstanceResult(id uint64) (*model.InstanceResult, error) {
	var out *model.InstanceResult
	err := q.f.view(func(tx *bolt.Tx) error {
		r, err := readRecord(tx, id)
		if err != nil {
			return err
		}
		attempt, res, ok := readResult(tx, id)
		if !ok && r.FirstShard != 0 {
			var why string
			if res, ok, why = shardResults(tx, r); !ok {
				return &model.Error{Code: model.CodeNotFound, Message: "sharded instance " + model.FormatID(id) + " has no result: " + why}
			}
		}
		if !ok {
			msg := "instance " + model.FormatID(id) + " has no result: it is " + name(stateNames, r.State)
			if r.State == stSuccess {
				msg += ", and its successful attempt published none"
			} else {
				msg += "; only a successful attempt publishes one"
			}
			return &model.Error{Code: model.CodeNotFound, Message: msg}
		}
		out = &model.InstanceResult{InstanceID: model.FormatID(id), Task: r.Task, Attempt: attempt, Result: res}
		return nil
	})
	return out, err
}

// upstreamResults returns the results a job of r (a task with policy p)
// reads as {{.Upstream.<task>.Result}}: an onSuccess instance's parent's
// (source dependency, params parent_task and parent_instance), and each
// dependsOn task's instance that succeeded for r's date (the success
// index names it from protocol 8). A task with no stored result is left
// out.
func upstreamResults(tx *bolt.Tx, r *record, in *model.Instance, p *model.Policy) map[string]json.RawMessage {
	var out map[string]json.RawMessage
	add := func(task string, id uint64) {
		if _, res, ok := resultOf(tx, id); ok {
			if out == nil {
				out = map[string]json.RawMessage{}
			}
			out[task] = res
		}
	}
	if in.Source == model.SourceDependency {
		if id, err := model.ParseID(in.Params[model.ParamParentInstance]); err == nil && in.Params[model.ParamParentTask] != "" {
			add(in.Params[model.ParamParentTask], id)
		}
	}
	if r.Date != "" {
		for _, dep := range p.DependsOn {
			if v := tx.Bucket(bktSucceeded).Get(depKey(dep, r.Date)); len(v) == 8 {
				add(dep, binary.BigEndian.Uint64(v))
			}
		}
	}
	return out
}
