package raftnode

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
)

// A restore into the running cluster (Node.Restore, hashicorp/raft's
// user restore) makes the leader take the restored state before the
// cluster has it: the file becomes the leader's latest snapshot, at an
// index past its whole log, and its state machine restores it; the
// followers install it only after, and the restore is committed once a
// majority has. A leader that dies in between restarts holding a state
// and a snapshot the cluster may never commit: the new leader's log goes
// on from the old state, past a hole in this node's log that Raft
// cannot bridge, and the node keeps serving the restored state beside
// the cluster's old one. AbandonRestore undoes it on restart.
//
// Known defect (docs/operations.md, "If the leader dies during the
// restore"): it discards unconditionally, so a node killed after a
// follower installed the restore forgets entries it may have counted
// toward their commit, and can vote in a node that lacks them; the
// follower holding them then cannot be brought level (hashicorp/raft
// finds no entry at the restore's snapshot index to truncate after).
// Discarding only once the elected leader's log shows another term at
// that index mends three nodes but not five (a minority that installed
// it is stuck the same way); the robust mend is a restore through the
// log (docs/operations.md, "Known defect").

// AbandonRestore removes from the Raft data in dataDir what a restore
// that began when the log ended at index after may have left there:
// every snapshot past after and every log entry past it. Call it before
// New, with the state machine discarded (it may hold the restored
// state). The node then is a follower that has the log up to after: if
// the restore was committed, the leader sends it the restored state as
// a snapshot (its log has the hole); if not, the leader's log follows
// on from after. It returns how many snapshots and entries it removed.
func AbandonRestore(dataDir string, after uint64) (snapshots, entries int, err error) {
	dir := filepath.Join(dataDir, "raft")
	store, err := raft.NewFileSnapshotStoreWithLogger(dir, 1<<20, hclog.NewNullLogger())
	if err != nil {
		return 0, 0, fmt.Errorf("raftnode: abandon restore: %w", err)
	}
	list, err := store.List()
	if err != nil {
		return 0, 0, fmt.Errorf("raftnode: abandon restore: %w", err)
	}
	for _, m := range list {
		if m.Index <= after {
			continue
		}
		if err := os.RemoveAll(filepath.Join(dir, "snapshots", m.ID)); err != nil {
			return snapshots, 0, fmt.Errorf("raftnode: abandon restore: %w", err)
		}
		snapshots++
	}
	logs, err := raftboltdb.New(raftboltdb.Options{Path: filepath.Join(dir, "raft.db")})
	if err != nil {
		return snapshots, 0, fmt.Errorf("raftnode: abandon restore: open log store: %w", err)
	}
	defer logs.Close()
	last, err := logs.LastIndex()
	if err == nil && last > after {
		entries = int(last - after)
		err = logs.DeleteRange(after+1, last)
	}
	if err != nil {
		return snapshots, 0, fmt.Errorf("raftnode: abandon restore: %w", err)
	}
	return snapshots, entries, nil
}

// restorePending names the file in the data dir that marks a restore
// this node began as the leader and has not seen committed. It holds the
// index the Raft log ended at before the restore.
const restorePending = "restore-pending"

// MarkRestore records, durably, that this node begins a restore when its
// log ends at index after (see AbandonRestore).
func MarkRestore(dataDir string, after uint64) error {
	if err := writeFileDurable(filepath.Join(dataDir, restorePending), []byte(strconv.FormatUint(after, 10)+"\n")); err != nil {
		return fmt.Errorf("restore: marking it begun: %w", err)
	}
	return nil
}

// PendingRestore reads the mark MarkRestore left: ok false when there is
// none.
func PendingRestore(dataDir string) (after uint64, ok bool, err error) {
	path := filepath.Join(dataDir, restorePending)
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("restore marker: %w", err)
	}
	after, err = strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0, false, fmt.Errorf("restore marker %s: %w", path, err)
	}
	return after, true, nil
}

// ClearRestore removes the mark, durably: the restore was committed, this
// node never took its state, or AbandonRestore undid it.
func ClearRestore(dataDir string) error {
	if err := os.Remove(filepath.Join(dataDir, restorePending)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("restore marker: %w", err)
	}
	return syncDir(dataDir)
}

// writeFileDurable replaces path with b so that a crash leaves the old
// file or the new one, never part of it: a temporary file, synced,
// renamed over path, and the directory synced.
func writeFileDurable(path string, b []byte) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	return syncDir(filepath.Dir(path))
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// SnapshotIndex is the index of this node's latest snapshot (0 for none).
func (n *Node) SnapshotIndex() uint64 {
	var i uint64
	fmt.Sscan(n.raft.Stats()["last_snapshot_index"], &i)
	return i
}
