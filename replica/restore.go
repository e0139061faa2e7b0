package replica

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/ax-scheduler/ax/fsm"
	"github.com/ax-scheduler/ax/fsm/command"
	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/raftnode"
)

// Restoring a saved state into the running cluster (ax snapshot
// restore), through the log (fsm/restorelog.go). The leader loop does it
// between two terms: it revokes the term (the wheel, the dispatcher and
// every other per-term service stop, so nothing proposes from the state
// being replaced), checks the file (fsm.CheckRestore), proposes it as a
// restore_begin, its chunks and a restore_switch, and establishes a new
// term, whose services load the restored state. A leader that dies
// midway leaves committed chunks, which the next leader drops as its term
// starts (dropStagedRestore), or a committed switch, which every replica
// applies.

// restoreWindow is how many chunks the leader has in flight at once.
const restoreWindow = 16

// restoreProgress is how often the leader logs a restore's progress.
const restoreProgress = 2 * time.Second

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
// the restored state holds once the switch to it is committed and
// applied on this node.
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
	return ans.info, ans.err
}

// restore runs req on the leader loop, between two terms.
func (ts *terms) restore(req restoreReq) restoreAns {
	r := ts.r
	if !r.node.IsLeader() {
		return restoreAns{err: raftnode.ErrNotLeader}
	}
	start := time.Now()
	info, err := r.fsm.CheckRestore(req.path)
	if err != nil {
		return restoreAns{err: err}
	}
	begin := &command.RestoreBegin{ID: newRestoreID(), Size: info.Size}
	if begin.SHA256, err = fileSHA256(req.path); err != nil {
		return restoreAns{err: fmt.Errorf("restore: %w", err)}
	}
	c, err := command.New(command.TypeRestoreBegin, "", r.actor(), begin)
	if err != nil {
		return restoreAns{err: err}
	}
	if err := checkProto(req.ctx, r.node, r.fsm, r.cfg.NodeID, c); err != nil {
		return restoreAns{err: err}
	}
	r.log.Info("restoring a saved state into the cluster", "path", req.path, "restore", begin.ID, "saved_index", info.Index,
		"tasks", info.Tasks, "instances", info.Instances, "bytes", info.Size)
	if err := ts.stage(req.ctx, c, begin, req.path); err != nil {
		r.log.Error("restore failed before its switch; the state is unchanged", "restore", begin.ID, "error", err)
		r.dropStagedRestore(begin.ID)
		return restoreAns{err: restoreError(err, "the state is unchanged")}
	}
	r.log.Info("restore staged; switching the cluster to it", "restore", begin.ID, "bytes", info.Size,
		"took", time.Since(start).Round(time.Millisecond))
	if err := r.waitOwn(r.ProposeAsync(r.own(command.TypeRestoreSwitch, &command.RestoreRef{ID: begin.ID}))); err != nil {
		var me *model.Error
		if errors.As(err, &me) {
			return restoreAns{err: err} // refused: every replica dropped the staging area
		}
		r.log.Error("restore switch not confirmed", "restore", begin.ID, "error", err)
		return restoreAns{err: restoreError(err, "outcome unknown: the switch was proposed but not confirmed committed; see which state the cluster holds")}
	}
	r.log.Info("restored a saved state into the cluster", "restore", begin.ID, "took", time.Since(start).Round(time.Millisecond),
		"applied", r.fsm.AppliedIndex())
	return restoreAns{info: info}
}

// stage proposes begin (c) and the file's bytes as chunks, up to
// restoreWindow in flight, and returns once every one is applied here.
func (ts *terms) stage(ctx context.Context, c *command.Command, begin *command.RestoreBegin, path string) error {
	r := ts.r
	if err := r.waitOwn(r.ProposeAsync(c)); err != nil {
		return err
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	var (
		inflight []Future
		staged   int64
		logged   time.Time
	)
	wait := func() error {
		if err := r.waitOwn(inflight[0]); err != nil {
			return err
		}
		inflight = inflight[1:]
		staged = min(staged+command.MaxRestoreChunk, begin.Size)
		if time.Since(logged) >= restoreProgress {
			logged = time.Now()
			r.log.Info("restore staging", "restore", begin.ID, "staged_bytes", staged, "of", begin.Size)
		}
		return nil
	}
	for off := int64(0); off < begin.Size; {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("the request ended: %w", err)
		}
		if !r.node.IsLeader() {
			return raftnode.ErrNotLeader
		}
		buf := make([]byte, min(command.MaxRestoreChunk, begin.Size-off))
		if _, err := io.ReadFull(f, buf); err != nil {
			return fmt.Errorf("reading %s at %d: %w", path, off, err)
		}
		ch := r.own(command.TypeRestoreChunk, nil)
		ch.Body = command.EncodeRestoreChunk(&command.RestoreChunk{ID: begin.ID, Offset: off, Data: buf})
		inflight = append(inflight, r.ProposeAsync(ch))
		off += int64(len(buf))
		if len(inflight) == restoreWindow {
			if err := wait(); err != nil {
				return err
			}
		}
	}
	for len(inflight) > 0 {
		if err := wait(); err != nil {
			return err
		}
	}
	return nil
}

// dropStagedRestore proposes the abort of restore id ("": whatever is
// staged); a failure is logged (the next leader drops it).
func (r *Replica) dropStagedRestore(id string) {
	if err := r.waitOwn(r.ProposeAsync(r.own(command.TypeRestoreAbort, &command.RestoreRef{ID: id}))); err != nil {
		r.log.Warn("could not drop a restore's staged state; the next leader drops it", "restore", id, "error", err)
	}
}

// dropUnfinishedRestore, as a term starts, drops the staging area of a
// restore whose leader stopped before its switch.
func (r *Replica) dropUnfinishedRestore() {
	id, ok, err := r.fsm.StagedRestore()
	if err != nil || !ok {
		return
	}
	r.log.Warn("dropping the staged state of a restore that did not finish (its leader stopped before the switch); the state is unchanged", "restore", id)
	r.dropStagedRestore(id)
}

// own returns a command of this node's own of type t with body as JSON
// (nil: none).
func (r *Replica) own(t command.Type, body any) *command.Command {
	c, err := command.New(t, "", r.actor(), body)
	if err != nil {
		panic(err) // the restore bodies always encode
	}
	return c
}

// waitOwn waits for a proposal and returns its error or its result's.
func (r *Replica) waitOwn(f Future) error {
	res, err := f.Wait()
	if err != nil {
		return err
	}
	if res.Err != nil {
		return res.Err
	}
	return nil
}

// restoreError words a restore's failure: a refusal as it is, anything
// else unavailable with what it means for the state.
func restoreError(err error, state string) error {
	var me *model.Error
	if errors.As(err, &me) {
		return err
	}
	return Unavailable(fmt.Errorf("restore: %s: %w", state, err))
}

func newRestoreID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// oldRestoreMarker is the file an ax before protocol 9 wrote in the data
// dir while it led a restore through Raft's user restore, and removed once
// the restore was committed; that version discarded the node's state at
// its next start when it found it.
const oldRestoreMarker = "restore-pending"

// refuseOldRestore fails closed on a data dir that an older ax left in the
// middle of a restore: its state may hold a restore the cluster never
// committed, which this version does not know how to undo.
func refuseOldRestore(dataDir string) error {
	path := filepath.Join(dataDir, oldRestoreMarker)
	if _, err := os.Stat(path); err != nil {
		return nil
	}
	return fmt.Errorf("%s: an older ax stopped here while it led a snapshot restore, and its state may hold a restore the cluster never committed: start this node once with that older version (it discards that state and removes the file), or remove this data dir and start the node with -join", path)
}
