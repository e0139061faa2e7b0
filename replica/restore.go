package replica

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ax-scheduler/ax/fsm"
	"github.com/ax-scheduler/ax/fsm/command"
	"github.com/ax-scheduler/ax/raftnode"
)

// Restoring a saved state into the running cluster (ax snapshot
// restore). The leader loop does it between two terms: it revokes the
// term (the wheel, the dispatcher and every other per-term service stop,
// so nothing proposes from the state being replaced), prepares the file
// (fsm.PrepareRestore: the cluster's identity kept), hands it to Raft's
// user restore (every member installs it), and establishes a new term,
// whose services load the restored state. A no-op command then brings
// the state machine's applied index past the restore's log position:
// Raft restores at an index beyond its whole log, while the state
// records the index it was saved at, and readers wait for the state
// machine to reach the commit index.

// restoreReq asks the leader loop to restore the state file at path.
type restoreReq struct {
	ctx  context.Context
	path string
	done chan restoreAns // buffered: the loop never waits on it
}

type restoreAns struct {
	info *fsm.StateInfo
	err  error
}

// RestoreState restores the state file at path as the cluster's state.
// Only the leader can (raftnode.ErrNotLeader otherwise); it returns what
// the restored state holds once the restore is committed and this
// node's state machine has applied an entry after it.
func (r *Replica) RestoreState(ctx context.Context, path string) (*fsm.StateInfo, error) {
	if !r.node.IsLeader() {
		return nil, raftnode.ErrNotLeader
	}
	req := restoreReq{ctx: ctx, path: path, done: make(chan restoreAns, 1)}
	select {
	case r.terms.restores <- req:
	case <-ctx.Done():
		return nil, Unavailable(ctx.Err())
	case <-r.stopCh:
		return nil, raftnode.ErrShutdown
	}
	ans := <-req.done
	if ans.err != nil {
		return nil, ans.err
	}
	if err := r.ProposeOwn(ctx, command.TypeNoop, struct{}{}); err != nil {
		return nil, fmt.Errorf("the state is restored, but the entry after it failed: %w", err)
	}
	return ans.info, nil
}

// restore runs req on the leader loop, between two terms.
func (ts *terms) restore(req restoreReq) restoreAns {
	r := ts.r
	if !r.node.IsLeader() {
		return restoreAns{err: raftnode.ErrNotLeader}
	}
	start := time.Now()
	info, err := r.fsm.PrepareRestore(req.path)
	if err != nil {
		return restoreAns{err: err}
	}
	// This node takes the state before the cluster has it: until the
	// restore is committed, a marker says where the log ended before it
	// (see abandonRestore).
	after := r.node.LastIndex()
	if err := raftnode.MarkRestore(r.cfg.DataDir, after); err != nil {
		return restoreAns{err: err}
	}
	r.log.Info("restoring a saved state into the cluster", "path", req.path, "saved_index", info.Index,
		"tasks", info.Tasks, "instances", info.Instances, "bytes", info.Size, "log_ends_at", after)
	if err := r.node.Restore(req.ctx, req.path, info.Index, info.Term, info.Size); err != nil {
		if r.node.SnapshotIndex() > after {
			r.log.Error("restore failed after this node took the restored state, which the cluster may not commit: restart this node (it then discards that state and catches up from the leader)", "error", err)
		} else {
			r.log.Error("restore failed", "error", err)
			clearRestore(r.cfg.DataDir, r.log)
		}
		return restoreAns{err: Unavailable(fmt.Errorf("restore: %w", err))}
	}
	clearRestore(r.cfg.DataDir, r.log)
	r.log.Info("restored a saved state into the cluster", "took", time.Since(start).Round(time.Millisecond),
		"last_index", r.node.LastIndex())
	return restoreAns{info: info}
}

// clearRestore removes the restore's mark: the restore is committed, or
// this node never took its state.
func clearRestore(dataDir string, log hclog.Logger) {
	if err := raftnode.ClearRestore(dataDir); err != nil {
		log.Error("could not remove the restore marker: the next start discards this node's state and catches up from the leader", "error", err)
	}
}

// abandonRestore, at start before the state machine opens: when the
// marker of a restore this node began as the leader is there (it died or
// failed before the restore was committed), it removes the restore's
// snapshot and the log entries after it began (raftnode.AbandonRestore)
// and says the state machine must be discarded: the node then holds the
// cluster's state as it was before the restore, and the leader brings it
// up to date, with the restored state if the restore was committed. The
// caller removes the marker (raftnode.ClearRestore) once the state
// machine is discarded.
func abandonRestore(dataDir string, log hclog.Logger) (bool, error) {
	after, pending, err := raftnode.PendingRestore(dataDir)
	if err != nil || !pending {
		return false, err
	}
	snaps, entries, err := raftnode.AbandonRestore(dataDir, after)
	if err != nil {
		return false, err
	}
	log.Warn("this node began a restore as the leader and stopped before it was committed: discarding the restored state and what the log holds after the restore began; the leader brings this node up to date (with the restored state if the cluster committed it)",
		"log_ended_at", after, "snapshots_removed", snaps, "entries_removed", entries)
	return true, nil
}
