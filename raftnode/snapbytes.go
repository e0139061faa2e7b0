package raftnode

import (
	"errors"
	"time"

	"github.com/hashicorp/raft"
)

// Snapshots by size. Raft snapshots once SnapshotThreshold entries have
// been logged since the last snapshot, but ax's entries range from a few
// bytes to a megabyte (a batch of 1,000 submissions): 8,192 entries could
// hold 8 million instances. What a snapshot bounds is measured in bytes:
// a node restarted after a crash rebuilds its state from its latest
// snapshot and replays the log after it, and a new member installs the
// leader's latest snapshot and replays the same; at 2M pending, with no
// snapshot taken yet, both replayed the whole log (issue 27: 82 s and
// 89 s). So a node also snapshots once its state machine has applied
// SnapshotBytes of entries since it last did, or a sixteenth of its
// state's size if that is more: a snapshot writes the whole state, and the
// sixteenth keeps that to sixteen bytes written per byte logged as the
// state grows. A submission takes about 30 bytes of log and 140 of state:
// at 10M pending (1.4 GB of state) a node snapshots every 87 MB of log,
// about 3M submissions, which a rebuild replays in some 10 s.

// DefaultSnapshotBytes is Config.SnapshotBytes's default.
const DefaultSnapshotBytes = 32 << 20

// snapshotCheck is how often snapshotBySize looks.
const snapshotCheck = time.Second

// SizedStateMachine is a StateMachine that says how many bytes of entries
// it has applied (since it started) and how large its state is.
type SizedStateMachine interface {
	StateMachine
	AppliedBytes() uint64
	StateBytes() int64
}

// snapshotBySize takes a snapshot whenever sm has applied the bytes
// snapshotDue asks for since the last one this loop took, until the node
// closes.
func (n *Node) snapshotBySize(sm SizedStateMachine, min uint64) {
	defer n.wg.Done()
	t := time.NewTicker(snapshotCheck)
	defer t.Stop()
	last := sm.AppliedBytes()
	for {
		select {
		case <-n.closed:
			return
		case <-t.C:
		}
		applied := sm.AppliedBytes()
		if !snapshotDue(applied-last, min, sm.StateBytes()) || catchingUp(sm.AppliedIndex(), n.KnownCommitIndex()) {
			continue
		}
		start := time.Now()
		err := n.raft.Snapshot().Error()
		switch {
		case err == nil:
			n.logger.Info("snapshot taken for the log bytes applied since the last", "bytes", applied-last,
				"state_bytes", sm.StateBytes(), "took", time.Since(start).Round(time.Millisecond))
			last = applied
		case errors.Is(err, raft.ErrNothingNewToSnapshot):
			last = applied
		default:
			n.logger.Warn("snapshot by size failed; trying again at the next check", "error", err)
		}
	}
}

// catchUpEntries is how far behind the commit index it knows a node is
// catching up, and takes no snapshot by size. A node joining from the log
// is told the leader's commit index at once, and snapshots by size as it
// applies: five snapshots of up to 1 GB of state while joining at 10M
// pending, which made the join a third slower (issue 27). Once it is
// caught up its first check takes the snapshot due. Raft's own snapshots
// (SnapshotThreshold, SnapshotInterval) are not deferred.
const catchUpEntries = 1024

// catchingUp reports whether a node that has applied index, knowing the
// commit index known, is catching up.
func catchingUp(applied, known uint64) bool {
	return known > applied+catchUpEntries
}

// snapshotDue reports whether applied bytes of entries since the last
// snapshot call for one: min, or a sixteenth of a state of stateBytes.
func snapshotDue(applied, min uint64, stateBytes int64) bool {
	return applied >= max(min, uint64(max(stateBytes, 0))/16)
}
