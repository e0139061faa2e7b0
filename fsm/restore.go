package fsm

import (
	bolt "go.etcd.io/bbolt"

	"github.com/ax-scheduler/ax/fsm/command"
	"github.com/ax-scheduler/ax/model"
)

// Restoring a saved state into a running cluster (ax snapshot restore).
// The leader checks the file (CheckRestore) and sends it through the log
// (restorelog.go). What the file holds is the saved cluster's data; what
// identifies the running cluster is kept from the running state: its
// members' records (bktNodes: the addresses nodes reach each other at)
// and its member key (nodes without TLS prove membership with it), and
// its protocol does not go down. The switch writes these into the file,
// from the state it replaces, on every replica alike.

// CheckRestore checks that the file at path is a state this binary can
// restore into the running cluster, before the leader sends it: the
// switch checks the same again. It refuses, as a conflict, a file
// without ACLs into a cluster that has them: the restore would open the
// cluster to anyone. It returns what the file holds.
func (f *FSM) CheckRestore(path string) (*StateInfo, error) {
	info, err := InspectState(path)
	if err != nil {
		return nil, model.FieldErrorf("snapshot", "%v", err)
	}
	var secured bool
	err = f.view(func(tx *bolt.Tx) error {
		secured = tx.Bucket(bktMeta).Get(keyACLBootstrapped) != nil
		return nil
	})
	if err != nil {
		return nil, err
	}
	if e := restorable(info, secured); e != nil {
		return nil, e
	}
	return info, nil
}

// restorable refuses a state file (info) that this binary cannot apply,
// or one without ACLs into a cluster that has them (secured): the
// restore would let anyone in. The leader asks before it sends the file,
// and every replica again at the switch.
func restorable(info *StateInfo, secured bool) *model.Error {
	switch {
	case info.Protocol > command.ProtoVersion:
		return model.FieldErrorf("snapshot", "the file is at protocol %d; this binary speaks 1 to %d: restore it with a newer ax", info.Protocol, command.ProtoVersion)
	case secured && !info.ACLs:
		return &model.Error{Code: model.CodeConflict, Field: "snapshot",
			Message: "the file was saved from a cluster without ACLs and this cluster has them: restoring it would let anyone in (bootstrap ACLs on the saved cluster and save again, or restore it as a new cluster with ax agent -restore)"}
	}
	return nil
}
