package fsm

import (
	"encoding/binary"
	"fmt"

	"github.com/ax-scheduler/ax/model"
)

// policy.overlap "replace" (model.OverlapReplace; protocol 8, see
// proto8.go): admit ends the oldest slot holder for a fire that finds
// every slot busy.

// replaces reports whether r, admitted with every slot of t busy, ends
// the oldest instance holding one instead of queueing: t's overlap is
// replace (protocol 8), and r was fired or triggered, not submitted,
// backfilled or re-run (work asked for by name queues).
func (w slotWrites) replaces(r *record, t *model.Task) bool {
	if t.Policy.Overlap != model.OverlapReplace || w.protoAt() < proto8 || r.Flags&flagRerun != 0 {
		return false
	}
	switch name(sourceNames, r.Source) {
	case model.SourceDelay, model.SourceBackfill:
		return false
	}
	return true
}

// replace ends the oldest instance of r's task that holds a concurrency
// slot as TERMINATED, replaced by r: its running attempt (if any) is
// recorded terminated, and the executor running it is told to stop it at
// its next heartbeat (within its grace, as an operator's terminate). The
// slot it frees goes to the head of the overlap queue if one waits (a
// task switched from queue), else to r. It reports whether there was one
// to replace. The scan is over the cluster's active instances, oldest
// first; it runs only when a replace task's slots are all busy.
func (w slotWrites) replace(r *record) bool {
	var old *record
	err := w.tx.Bucket(bktActive).ForEach(func(k, _ []byte) error {
		if old != nil {
			return nil
		}
		o, err := readRecord(w.tx, binary.BigEndian.Uint64(k))
		if err == nil && o.ID != r.ID && o.Task == r.Task && holdsSlot(o) {
			old = o
		}
		return err
	})
	if err != nil {
		if w.err == nil {
			w.err = err
		}
		return false
	}
	if old == nil {
		return false
	}
	why := fmt.Sprintf("replaced by %s (overlap=replace)", model.FormatID(r.ID))
	if old.State == stRunning || old.State == stApproval {
		attemptWrites(w).stopAttempt(old, model.OutcomeTerminated, why)
	}
	old.LastError = why
	w.instances().event(old.ID, "replaced", why)
	w.instances().finish(old, stTerm)
	w.instances().event(r.ID, "replacing", fmt.Sprintf("overlap=replace: ended %s, which held a concurrency slot", model.FormatID(old.ID)))
	return true
}
