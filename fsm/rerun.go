package fsm

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"

	bolt "go.etcd.io/bbolt"

	"github.com/ax-scheduler/ax/fsm/command"
	"github.com/ax-scheduler/ax/model"
)

// Re-runs (protocol 7, command rerun): a finished instance runs again as
// the same instance, for the same task and fire time, with a new attempt
// chain. Its attempts so far, their output and its events stay; the
// next attempt's number follows the last one, and the attempts before
// the re-run do not count against maxRetries (record.Base). The instance
// leaves its terminal state (and the finished index), fires again at
// the command's time (or, not due yet, is SCHEDULED again for its time)
// and is admitted as a fresh fire of it is (admit):
// approval before_run asked again, dependsOn checked again for its date,
// a concurrency slot taken, or BLOCKED in the overlap queue, or SKIPPED
// (overlap skip). A re-run is work an operator asked for by name, so
// maxQueued does not drop it (queueFull), as it drops no backfill. Its
// new outcome is handled as any: a success releases the dependsOn
// instances waiting for its date and creates its onSuccess chain, a
// failure waits in the alerts index for its notify and onFailure again.
// A failure whose alerts had not been handled yet when it was re-run is
// superseded (the rerun event says so), and the date's onUpstreamFailure
// record of this instance goes: the date may still succeed.

// rerunCheck is rerun's check: a lone re-run of an instance that is
// unknown, not finished, or of a task that is gone is refused; a task's
// re-run passes over what no longer qualifies, and is answered that
// nothing was re-run when nothing does.
func (w instanceWrites) rerunCheck(b *command.Rerun) ([]*record, *Result) {
	var plan []*record
	for _, id := range b.IDs {
		r, ok := w.loadRecord(id)
		if w.err != nil {
			return nil, nil
		}
		e := w.rerunRefusal(id, r, ok, b)
		switch {
		case e == nil:
			plan = append(plan, r)
		case b.Task == "":
			return nil, errResult(e)
		}
	}
	if len(plan) == 0 {
		return nil, okResult(model.RerunResult{Instances: []model.Submitted{}})
	}
	return plan, nil
}

// rerunRefusal returns why instance id (r, found by ok) cannot be re-run
// by b, nil if it can.
func (w instanceWrites) rerunRefusal(id uint64, r *record, ok bool, b *command.Rerun) *model.Error {
	switch {
	case !ok:
		return instanceNotFound(id)
	case b.Task != "" && (r.Task != b.Task || !slices.Contains(b.States, name(stateNames, r.State))):
		return &model.Error{Code: model.CodePrecondition, Field: "state", Message: "no longer selected"}
	case r.Parent != 0:
		return &model.Error{Code: model.CodePrecondition, Field: "id",
			Message: fmt.Sprintf("instance %s is shard %d of instance %s: re-run that instance, which runs its shards that did not succeed again",
				model.FormatID(id), r.ShardIndex, model.FormatID(r.Parent))}
	case !isTerminal(r.State):
		return &model.Error{Code: model.CodePrecondition, Field: "state",
			Message: fmt.Sprintf("instance %s is %s: only a finished instance (%s) can be re-run", model.FormatID(id),
				name(stateNames, r.State), strings.Join(command.TerminalStates, ", "))}
	case w.loadState(r.Task).Version == 0:
		return &model.Error{Code: model.CodePrecondition, Field: "task",
			Message: fmt.Sprintf("task %s no longer exists: nothing would run instance %s", r.Task, model.FormatID(id))}
	}
	return nil
}

func (w instanceWrites) rerun(b *command.Rerun, plan []*record) *Result {
	// What depends on the command's time, which the check may not read:
	// an attempt an operator stopped may still run.
	ready := make([]*record, 0, len(plan))
	for _, r := range plan {
		a, until, held := w.stopHeld(r, b.HoldMs)
		if w.err != nil {
			return nil
		}
		switch {
		case !held:
			ready = append(ready, r)
		case b.Task == "":
			return errResult(&model.Error{Code: model.CodePrecondition, Field: "state",
				Message: fmt.Sprintf("attempt %d of instance %s was stopped (%s) at %s and executor %s has not reported its end: it may run until %s; re-run it then",
					a.Number, model.FormatID(r.ID), a.Outcome, a.EndedAt.Format(model.TimeLayout), a.Executor, model.UnixMilli(until).Format(model.TimeLayout))})
		}
	}
	out := model.RerunResult{Rerun: len(ready), Instances: make([]model.Submitted, len(ready))}
	for i, r := range ready {
		w.rerunOne(r)
		out.Instances[i] = model.Submitted{ID: model.FormatID(r.ID), ScheduledAt: model.UnixMilli(r.ScheduledAt), State: name(stateNames, r.State)}
	}
	if w.err != nil {
		return nil
	}
	if b.Task == "" {
		return okResult(out.Instances[0])
	}
	return okResult(out)
}

// rerunOne re-runs the finished instance r (see above).
func (w instanceWrites) rerunOne(r *record) {
	was := r.State
	msg := fmt.Sprintf("re-run by %s; it had ended %s at %s after %d %s", w.cmd.Actor, name(stateNames, was),
		model.UnixMilli(r.FinishedAt).Format(model.TimeLayout), r.Attempts, plural(int(r.Attempts), "attempt", "attempts"))
	if r.LastError != "" {
		msg += ": " + truncateError(r.LastError)
	}
	w.del(bktFinished, finishedKey(r.Task, r.FinishedAt, r.ID))
	if w.tx.Bucket(bktAlerts).Get(u64key(r.ID)) != nil {
		w.del(bktAlerts, u64key(r.ID))
		msg += "; the alerts of that failure, not yet sent, are superseded by this run's outcome"
	}
	if r.Date != "" {
		if v := w.tx.Bucket(bktFailedDeps).Get(failedDepKey(r.Task, r.Date)); len(v) == 8 && binary.BigEndian.Uint64(v) == r.ID {
			w.del(bktFailedDeps, failedDepKey(r.Task, r.Date))
		}
	}
	if r.Flags&flagRerun == 0 && r.FiredAt != 0 {
		w.putEvent(r.ID, firedEvent(r)) // the first firing, which FiredAt no longer tells
	}
	st := w.loadState(r.Task)
	r.Base, r.Free, r.Flags, r.Canary = r.Attempts, 0, flagRerun, false
	r.FiredAt, r.StartedAt, r.FinishedAt, r.Node, r.TaskVersion = w.cmd.Now, 0, 0, w.cmd.Node, st.Version
	r.Executor, r.Host, r.LastError, r.ExitCode, r.LeaseUntil, r.RetryAt, r.AttemptStart = "", "", "", 0, 0, 0, 0
	w.event(r.ID, "rerun", msg)
	// Admitted as a fresh fire: no state yet. The transitions it makes
	// are noted as from the state it had ended in.
	n := len(w.notes.changes)
	r.State = 0
	if r.ScheduledAt > w.cmd.Now {
		// Not due yet (a delayed instance canceled before its time): it
		// waits for its time again.
		r.FiredAt = 0
		w.setState(r, stScheduled)
		w.put(bktDue, dueKey(r.ScheduledAt, r.ID), u64key(uint64(r.ScheduledAt)))
		w.pending(1)
		w.notes.ids = append(w.notes.ids, r.ID)
		w.notes.dues = append(w.notes.dues, r.ScheduledAt)
	} else {
		w.stats().fired(r)
		w.slots().admit(r)
		w.put(bktMeta, keyLastFired, u64key(r.ID))
	}
	for i := n; i < len(w.notes.changes); i++ {
		if c := &w.notes.changes[i]; c.ID == r.ID && c.From == "" {
			c.From = name(stateNames, was)
		}
	}
}

// stopHeld returns r's last attempt and until when it may still run, and
// true, when an operator stopped it (terminated, or canceled: the stop
// recorded it without an exit status) less than holdMs before the
// command's time and its executor has not reported its end since (a
// report of it adds its exit status: lateOutput).
func (w instanceWrites) stopHeld(r *record, holdMs int64) (model.Attempt, int64, bool) {
	if r.Attempts == 0 || holdMs == 0 || r.State != stTerm && r.State != stCanceled {
		return model.Attempt{}, 0, false
	}
	v := w.tx.Bucket(bktAttempts).Get(attemptKey(r.ID, int(r.Attempts)))
	if v == nil {
		return model.Attempt{}, 0, false
	}
	a, err := decodeAttempt(r.ID, v)
	if err != nil {
		w.err = err
		return model.Attempt{}, 0, false
	}
	if a.ExitCode != nil || a.Outcome != model.OutcomeTerminated && a.Outcome != model.OutcomeCanceled {
		return a, 0, false
	}
	until := a.EndedAt.Millis() + holdMs
	return a, until, until > w.cmd.Now
}

// truncateError bounds an error quoted in an event.
func truncateError(s string) string {
	if len(s) > recentErrorMax {
		return s[:recentErrorMax] + "…"
	}
	return s
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// FinishedIn returns the ids, in increasing order, of task's finished
// instances whose fire time is in [from, to] (Unix ms) and whose state is
// one of states, at most limit+1 (more than limit: the caller refuses):
// the plan of a task's re-run, which the state machine checks again when
// it applies it. It reads the task's range of the finished index and the
// head of each record in it: what retention keeps of the task.
func (q instanceReads) FinishedIn(task string, from, to int64, states []string, limit int) ([]uint64, error) {
	var out []uint64
	err := q.f.view(func(tx *bolt.Tx) error {
		insts := tx.Bucket(bktInstances)
		prefix := append([]byte(task), 0)
		c := tx.Bucket(bktFinished).Cursor()
		for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix) && len(out) <= limit; k, _ = c.Next() {
			_, _, id, ok := parseFinishedKey(k)
			if !ok {
				continue
			}
			b, ok := peekBrief(id, insts.Get(u64key(id)))
			if ok && b.ScheduledAt >= from && b.ScheduledAt <= to && slices.Contains(states, b.State) {
				out = append(out, id)
			}
		}
		return nil
	})
	slices.Sort(out)
	return out, err
}
