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
	if info.Protocol > command.ProtoVersion {
		return nil, model.FieldErrorf("snapshot", "the file is at protocol %d; this binary speaks 1 to %d: restore it with a newer ax", info.Protocol, command.ProtoVersion)
	}
	var secured bool
	err = f.view(func(tx *bolt.Tx) error {
		secured = tx.Bucket(bktMeta).Get(keyACLBootstrapped) != nil
		return nil
	})
	if err != nil {
		return nil, err
	}
	if secured && !info.ACLs {
		return nil, errNoACLs
	}
	return info, nil
}
