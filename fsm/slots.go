package fsm

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"sort"

	bolt "go.etcd.io/bbolt"

	"github.com/ax-scheduler/ax/fsm/command"
	"github.com/ax-scheduler/ax/model"
)

// Admission and the concurrency slots (slotWrites): what a fired
// instance becomes (admit), the slot a finished one frees (release), the
// overlap=queue FIFO and its bound (unblockHead, queueFull), and from
// protocol 6 the slots kept exact (below).

// protoSlots is the protocol from which (the entry after set_proto 6 on)
// the concurrency slots are kept exactly and a stopped attempt keeps its
// output:
//   - an attempt that ends (its report) while it waits for a mid-run
//     approval frees its slot (before, complete cleared the mid-run flag
//     first and finish took the instance for one without a slot: the
//     slot stayed busy for good);
//   - the flag is dropped whenever the instance leaves WAITING_APPROVAL;
//   - a task deleted while attempts of it still run keeps their slots
//     counted, and a task created again under its name starts with them;
//   - every set_proto that raises the protocol to 6 or more recounts the
//     slots of every task from its instances and unblocks the queued
//     instances the recount frees a slot for (recountSlots): a cluster
//     that leaked a slot before heals when it upgrades;
//   - a mid-run approval that is rejected or canceled records its attempt
//     (outcome canceled), as a terminate does (outcome terminated);
//   - the report an executor sends for an attempt an operator stopped
//     (terminate, or reject/cancel of a mid-run approval) no longer ends
//     anything, but attaches the attempt's output, exit code and pid to
//     its record, once (lateOutput).
const protoSlots = 6

// dropsMidRunFlag reports whether, entering st from was, the mid-run
// approval flag is dropped with the state (protocol 6; before it the
// flag was cleared by approve and complete only, and stayed on the
// records of mid-run approvals that were rejected, canceled or
// terminated).
func (w slotWrites) dropsMidRunFlag(was, st uint8) bool {
	return was == stApproval && st != stApproval && w.protoAt() >= protoSlots
}

// stopAttempt records the end of r's current attempt, stopped by an
// operator's decision (outcome terminated, or canceled), before the
// decision moves the instance: the attempt's report, which the executor
// still sends after the process is stopped, only adds its output to it.
func (w attemptWrites) stopAttempt(r *record, outcome, why string) {
	if r.FirstShard != 0 {
		return // a sharded instance's attempts are its shards' (finish ends them)
	}
	a := currentAttempt(r)
	a.EndedAt, a.Outcome, a.Error = model.UnixMilli(w.cmd.Now), outcome, why
	w.saveAttempt(r.ID, a)
	w.ended = &endedAttempt{id: r.ID, a: a}
}

// lateOutput returns the record of the attempt a report c is about, and
// true, when the report, refused as not current, still has something to
// add (protocol 6): the attempt was stopped by an operator (the instance
// ended TERMINATED, or CANCELED by a reject or cancel of its mid-run
// approval) and its record has no output yet, and the report comes from
// the executor that ran it and carries output.
func lateOutput(tx *bolt.Tx, r *record, ok bool, c *command.Complete) (model.Attempt, bool) {
	if !ok || c.Report.Output == "" || (r.State != stTerm && r.State != stCanceled) ||
		int(r.Attempts) != c.Attempt || r.Executor != c.Report.Executor {
		return model.Attempt{}, false
	}
	k := attemptKey(r.ID, c.Attempt)
	v := tx.Bucket(bktAttempts).Get(k)
	if v == nil || tx.Bucket(bktLogs).Get(k) != nil {
		return model.Attempt{}, false
	}
	a, err := decodeAttempt(r.ID, v)
	if err != nil || a.Output != "" || (a.Outcome != model.OutcomeTerminated && a.Outcome != model.OutcomeCanceled) {
		return model.Attempt{}, false
	}
	return a, true
}

// attachOutput adds a late report's output, exit code and pid to a, the
// stopped attempt of instance id (see lateOutput). The instance does not
// change.
func (w attemptWrites) attachOutput(id uint64, a model.Attempt, rep *model.CompleteRequest) {
	out := rep.Output
	if len(out) > 1024 {
		out = out[len(out)-1024:]
	}
	a.Output = out
	if rep.PID != 0 {
		a.PID = rep.PID
	}
	if rep.Host != "" {
		a.Host = rep.Host
	}
	ec := rep.ExitCode
	a.ExitCode, a.HTTPStatus = &ec, rep.HTTPStatus
	w.saveAttempt(id, a)
	w.put(bktLogs, attemptKey(id, a.Number), []byte(rep.Output))
}

// slotCounts counts, per task, the instances that hold a concurrency
// slot (holdsSlot) and the entries of the overlap=queue FIFO, and lists
// in name order every task that has either or a task state.
func slotCounts(tx *bolt.Tx) (busy, queued map[string]uint64, tasks []string, err error) {
	busy, queued = map[string]uint64{}, map[string]uint64{}
	err = tx.Bucket(bktActive).ForEach(func(k, _ []byte) error {
		r, err := readRecord(tx, binary.BigEndian.Uint64(k))
		if err == nil && holdsSlot(r) {
			busy[r.Task]++
		}
		return err
	})
	if err != nil {
		return nil, nil, nil, err
	}
	_ = tx.Bucket(bktBlocked).ForEach(func(k, _ []byte) error {
		if len(k) > 17 {
			queued[string(k[:len(k)-17])]++
		}
		return nil
	})
	names := map[string]bool{}
	_ = tx.Bucket(bktTaskState).ForEach(func(k, _ []byte) error {
		names[string(k)] = true
		return nil
	})
	for _, m := range []map[string]uint64{busy, queued} {
		for n := range m {
			names[n] = true
		}
	}
	for n := range names {
		tasks = append(tasks, n)
	}
	sort.Strings(tasks)
	return busy, queued, tasks, nil
}

// recountSlots sets every task's count of busy concurrency slots to the
// number of its instances that hold one and its count of queued
// instances to its entries in the overlap=queue FIFO (slotCounts), and
// gives the slots the recount frees to the oldest queued instances, up
// to the task's maxConcurrency. Each count it corrects is a task event.
// It is deterministic: it reads the state only, in key order.
func (w slotWrites) recountSlots() {
	busy, queued, tasks, err := slotCounts(w.tx)
	if err != nil {
		w.err = err
		return
	}
	for _, task := range tasks {
		st := w.loadState(task)
		if st.Inflight == busy[task] && st.Blocked == queued[task] {
			continue
		}
		msg := fmt.Sprintf("concurrency slots recounted from the instances (protocol %d): busy %d, was %d; queued %d, was %d",
			protoSlots, busy[task], st.Inflight, queued[task], st.Blocked)
		st.Inflight, st.Blocked = busy[task], queued[task]
		if st.Version != 0 {
			w.tasks().event(task, &st, "slots_recounted", msg)
		}
		w.saveState(task, st)
		t, ok := w.tasks().definition(task)
		if !ok {
			continue
		}
		limit := uint64(max(t.Policy.MaxConcurrency, 1))
		for w.loadState(task).Inflight < limit {
			if !w.unblockHead(task) {
				break
			}
		}
	}
}

// unblockHead gives a concurrency slot to the oldest BLOCKED instance of
// task (overlap=queue) and reports whether the queue had one; instances
// a rate limit skips (onLimit skip) give it to the next.
func (w slotWrites) unblockHead(task string) bool {
	had := false
	for {
		one, skipped := w.unblockOne(task)
		had = had || one
		if !skipped {
			return had
		}
	}
}

// unblockOne is one step of unblockHead: whether the queue had an
// instance, and whether a rate limit skipped it.
func (w slotWrites) unblockOne(task string) (had, skipped bool) {
	st := w.loadState(task)
	if st.Blocked == 0 {
		return false, false
	}
	prefix := append([]byte(task), 0)
	c := w.tx.Bucket(bktBlocked).Cursor()
	k, _ := c.Seek(prefix)
	if k == nil || !bytes.HasPrefix(k, prefix) {
		return false, false
	}
	id := binary.BigEndian.Uint64(k[len(k)-8:])
	w.del(bktBlocked, append([]byte(nil), k...))
	st.Blocked--
	w.saveState(task, st)
	nr, ok := w.instances().loadRecord(id)
	if !ok || nr.State != stBlocked {
		return true, false
	}
	var ls []limiter
	if t, ok := w.tasks().definition(task); ok {
		p, _ := w.poolOf(t)
		if p != nil && p.Busy >= uint64(p.Slots) {
			w.poolWait(p, nr) // its task's slot is free, its pool's are not
			return true, false
		}
		ls = w.ratesOf(t, p)
		if l := w.rateCheck(nr, ls); l != nil && l.lim.Skips() {
			w.rateSkip(nr, l)
			return true, true
		}
		if p != nil {
			w.poolTake(p, nr)
		}
	}
	st.Inflight++
	w.saveState(task, st)
	if w.rateAdmit(nr, ls) {
		w.instances().event(id, "unblocked", "a concurrency slot freed")
	}
	return true, false
}

// SlotsBusy returns how many of task's concurrency slots are busy, as its
// task state counts them (the count admission uses).
func (q taskReads) SlotsBusy(task string) (int, error) {
	n := 0
	err := q.f.view(func(tx *bolt.Tx) error {
		n = int((&writer{tx: tx}).loadState(task).Inflight)
		return nil
	})
	return n, err
}

// admit decides what a fired instance becomes: WAITING_APPROVAL when the
// task wants approval first, else READY if a concurrency slot is free
// (or freed by ending the oldest holder: overlap replace, replace.go),
// else BLOCKED (overlap queue) or SKIPPED (overlap skip).
func (w slotWrites) admit(r *record) {
	t, ok := w.tasks().definition(r.Task)
	if !ok {
		// The task is gone: nothing will ever run this instance.
		r.FinishedAt = w.cmd.Now
		w.instances().setState(r, stCanceled)
		w.instances().event(r.ID, "canceled", "task no longer exists")
		return
	}
	if t.Policy.Approval == "before_run" && r.Flags&flagApproved == 0 {
		w.instances().setState(r, stApproval)
		w.instances().event(r.ID, "waiting_approval", "policy approval=before_run")
		return
	}
	if w.deps().waitForDeps(r, t) {
		return
	}
	st := w.loadState(r.Task)
	limit := t.Policy.MaxConcurrency
	if limit <= 0 {
		limit = 1
	}
	if st.Inflight >= uint64(limit) && w.replaces(r, t) && w.replace(r) {
		st = w.loadState(r.Task) // a slot freed, unless the queue took it
	}
	if st.Inflight < uint64(limit) {
		p, _ := w.poolOf(t)
		if p != nil && p.Busy >= uint64(p.Slots) {
			if t.Policy.Overlap == "skip" {
				r.FinishedAt = w.cmd.Now
				w.instances().setState(r, stSkipped)
				w.instances().event(r.ID, "skipped", fmt.Sprintf("overlap=skip: pool %s: %d of %d slots busy", p.Name, p.Busy, p.Slots))
				return
			}
			w.poolWait(p, r)
			return
		}
		ls := w.ratesOf(t, p)
		if l := w.rateCheck(r, ls); l != nil && l.lim.Skips() {
			w.rateSkip(r, l)
			return
		}
		if p != nil {
			w.poolTake(p, r)
		}
		st.Inflight++
		w.saveState(r.Task, st)
		w.rateAdmit(r, ls)
		return
	}
	if t.Policy.Overlap != "skip" && w.queueFull(r, t, st) {
		return
	}
	if t.Policy.Overlap == "skip" {
		r.FinishedAt = w.cmd.Now
		w.instances().setState(r, stSkipped)
		w.instances().event(r.ID, "skipped", fmt.Sprintf("overlap=skip: %d of %d slots busy", st.Inflight, limit))
		return
	}
	w.put(bktBlocked, blockedKey(r.Task, r.ScheduledAt, r.ID), nil)
	st.Blocked++
	w.saveState(r.Task, st)
	w.instances().setState(r, stBlocked)
	w.instances().event(r.ID, "blocked", fmt.Sprintf("overlap=queue: %d of %d slots busy", st.Inflight, limit))
}

// release frees r's concurrency slot and starts the oldest BLOCKED
// instance of its task, if any.
func (w slotWrites) release(task string) {
	st := w.loadState(task)
	if st.Inflight > 0 {
		st.Inflight--
	}
	w.saveState(task, st)
	w.unblockHead(task)
	// An instance of the task that waits for its pool may start now that
	// its task has a slot.
	if t, ok := w.tasks().definition(task); ok && t.Policy.Pool != "" && w.loadState(task).Inflight < uint64(max(t.Policy.MaxConcurrency, 1)) {
		w.poolWake(t.Policy.Pool)
	}
}

// queueFull skips r instead of queueing it when its task's queue holds
// maxQueued BLOCKED instances already (protocol 4), and reports whether
// it did. Delayed submissions, backfills and re-runs are never dropped:
// each is work a caller asked for by name.
func (w slotWrites) queueFull(r *record, t *model.Task, st taskState) bool {
	if w.protoAt() < protoPolicies || r.Flags&flagRerun != 0 {
		return false
	}
	switch name(sourceNames, r.Source) {
	case model.SourceDelay, model.SourceBackfill:
		return false
	}
	limit := t.Policy.QueueLimit()
	if st.Blocked < uint64(limit) {
		return false
	}
	r.FinishedAt = w.cmd.Now
	w.instances().setState(r, stSkipped)
	w.notes.changes[len(w.notes.changes)-1].Reason = "queue_full"
	w.instances().event(r.ID, "queue_full", fmt.Sprintf("%d instances already queued (maxQueued %d)", st.Blocked, limit))
	return true
}
