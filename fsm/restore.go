package fsm

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/ax-scheduler/ax/fsm/command"
	"github.com/ax-scheduler/ax/model"
)

// Restoring a saved state into a running cluster (ax snapshot restore).
// The leader hands the file to Raft's user restore, which installs it on
// every member as a snapshot. What the file holds is the saved cluster's
// data; what identifies the running cluster is kept from the running
// state: its members' records (bktNodes: the addresses nodes reach each
// other at) and its member key (nodes without TLS prove membership with
// it), and its protocol does not go down. The leader writes these into
// the file before Raft takes it, so every replica restores the same
// bytes.

// PrepareRestore checks that the file at path is a state this binary can
// restore into the running cluster and writes the running cluster's
// identity into it (see above). It refuses, as a conflict, a file
// without ACLs into a cluster that has them: the restore would open the
// cluster to anyone. It returns what the file then holds.
func (f *FSM) PrepareRestore(path string) (*StateInfo, error) {
	info, err := InspectState(path)
	if err != nil {
		return nil, model.FieldErrorf("snapshot", "%v", err)
	}
	if info.Protocol > command.ProtoVersion {
		return nil, model.FieldErrorf("snapshot", "the file is at protocol %d; this binary speaks 1 to %d: restore it with a newer ax", info.Protocol, command.ProtoVersion)
	}
	var (
		nodes     [][2][]byte
		memberKey []byte
		proto     uint64
		secured   bool
	)
	err = f.view(func(tx *bolt.Tx) error {
		meta := tx.Bucket(bktMeta)
		memberKey = bytes.Clone(meta.Get(keyMemberKey))
		proto = uint64(stateProto(tx))
		secured = meta.Get(keyACLBootstrapped) != nil
		return tx.Bucket(bktNodes).ForEach(func(k, v []byte) error {
			nodes = append(nodes, [2][]byte{bytes.Clone(k), bytes.Clone(v)})
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	if secured && !info.ACLs {
		return nil, &model.Error{Code: model.CodeConflict, Field: "snapshot",
			Message: "the file was saved from a cluster without ACLs and this cluster has them: restoring it would let anyone in (bootstrap ACLs on the saved cluster and save again, or restore it as a new cluster with ax agent -restore)"}
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		return nil, fmt.Errorf("fsm: open %s: %w", path, err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		meta := tx.Bucket(bktMeta)
		if memberKey != nil {
			if err := meta.Put(keyMemberKey, memberKey); err != nil {
				return err
			}
		}
		if proto > uint64(info.Protocol) {
			v := make([]byte, 8)
			binary.BigEndian.PutUint64(v, proto)
			if err := meta.Put(keyProto, v); err != nil {
				return err
			}
		}
		if err := tx.DeleteBucket(bktNodes); err != nil {
			return err
		}
		b, err := tx.CreateBucket(bktNodes)
		if err != nil {
			return err
		}
		for _, kv := range nodes {
			if err := b.Put(kv[0], kv[1]); err != nil {
				return err
			}
		}
		return nil
	})
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	return InspectState(path)
}
