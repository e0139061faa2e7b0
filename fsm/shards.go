package fsm

import (
	"fmt"
	"strings"

	bolt "go.etcd.io/bbolt"

	"github.com/ax-scheduler/ax/fsm/command"
	"github.com/ax-scheduler/ax/model"
)

// Sharded execution (protocol 8; policy.shards, policy.broadcast).
//
// A sharded instance is admitted like any other: READY, it holds its
// task's slot (and its pool's). The leader's dispatcher does not lease
// it but proposes `shard`, which moves it to RUNNING (no attempt of its
// own: its attempts are its shards') and creates its shards: one
// instance each, with consecutive ids from the entry (FirstShard ..
// FirstShard+Shards-1), READY at once, each leased, heartbeated,
// retried and reported through the ordinary commands, with its own
// attempts, output and request ids. A shard holds no slot, is not in
// its task's instance list nor in the finished index (it goes with its
// instance), and counts in no aggregate of instances. When a shard
// ends, its instance counts it (ShardsDone, ShardsFailed, the first
// failure's words in LastError): SUCCESS once every shard succeeded,
// FAILED once they all ended and one did not, or, with shardFailure
// fail-fast (the default), FAILED at the first shard that did not
// succeed. An instance that ends while shards of it have not (that
// failure, terminate, cancel, replace) ends them: a running shard is
// terminated (its executor is told to stop at its next heartbeat), a
// waiting one canceled. A re-run of a sharded instance (rerun) admits
// it again; once READY the dispatcher proposes `shard` with the same
// count, which re-runs only the shards that did not succeed.
//
// A broadcast's `shard` names the executors (one shard pinned to each,
// chosen by the leader when the instance starts); `shard` with Left
// ends, FAILED, the shards pinned to an executor that left before they
// ran (or between two attempts).

// shardHoldMs is how long after an operator (or a failing sibling)
// stopped a shard's attempt a re-run waits before running it again: the
// process may still be dying on its executor (as for rerun's HoldMs).
const shardHoldMs = 20_000

// shardCheck is shard's check: the sharded instance, READY for a fan-out
// (with the count it had, if it was fanned out before) or RUNNING for a
// departed executor.
func (w instanceWrites) shardCheck(s *command.Shard) (*record, *Result) {
	r, ok := w.loadRecord(s.ID)
	if w.err != nil {
		return nil, nil
	}
	if !ok {
		return nil, errResult(instanceNotFound(s.ID))
	}
	bad := func(format string, a ...any) (*record, *Result) {
		return nil, errResult(&model.Error{Code: model.CodePrecondition, Field: "state", Message: fmt.Sprintf(format, a...)})
	}
	switch {
	case r.Parent != 0:
		return bad("instance %s is a shard", model.FormatID(r.ID))
	case s.Left != "":
		if r.State != stRunning || r.FirstShard == 0 {
			return bad("instance %s is not a running sharded instance", model.FormatID(r.ID))
		}
		return r, nil
	case r.State != stReady:
		return bad("only a READY instance fans out into shards, it is %s", name(stateNames, r.State))
	case r.FirstShard != 0 && s.Count() != int(r.Shards):
		return nil, errResult(model.FieldErrorf("total", "instance %s has %d shards; its re-run runs them again, not %d", model.FormatID(r.ID), r.Shards, s.Count()))
	}
	return r, nil
}

// shard applies a fan-out, or a departed executor's end of its shards.
func (w instanceWrites) shard(s *command.Shard, r *record) *Result {
	switch {
	case s.Left != "":
		return okResult(struct {
			Ended int `json:"ended"`
		}{w.shardsLeft(r, s.Left)})
	case r.FirstShard != 0:
		return w.shardsAgain(r)
	}
	n := s.Count()
	if e := w.reserve(n); e != nil {
		return e
	}
	for i := 0; i < n; i++ {
		id, _ := w.newID()
		c := &record{ID: id, Source: r.Source, CreatedAt: w.cmd.Now, ScheduledAt: r.ScheduledAt, FiredAt: w.cmd.Now,
			TaskVersion: r.TaskVersion, Task: r.Task, IdemKey: "", Node: w.cmd.Node, Params: r.Params, Payload: r.Payload,
			Date: r.Date, Parent: r.ID, ShardIndex: uint32(i), Shards: uint32(n), Canary: r.Canary}
		if len(s.Executors) > 0 {
			c.Pin = s.Executors[i]
		}
		if i == 0 {
			r.FirstShard = id
		}
		w.setState(c, stReady)
	}
	r.Shards, r.ShardsDone, r.ShardsFailed, r.LastError = uint32(n), 0, 0, ""
	if r.StartedAt == 0 {
		r.StartedAt = w.cmd.Now
	}
	w.setState(r, stRunning)
	msg := fmt.Sprintf("runs as %d %s", n, plural(n, "shard", "shards"))
	if len(s.Executors) > 0 {
		msg = fmt.Sprintf("broadcast to %d %s: %s", n, plural(n, "executor", "executors"), strings.Join(s.Executors, ", "))
	}
	w.event(r.ID, "sharded", msg)
	return okResult(struct {
		First string `json:"first"`
		Total int    `json:"total"`
	}{model.FormatID(r.FirstShard), n})
}

// shardsAgain runs again the shards of the re-run instance r that did
// not succeed (it is READY: rerun admitted it), or all of them if all
// had, and moves it to RUNNING; it refuses while a stopped shard's
// process may still run.
func (w instanceWrites) shardsAgain(r *record) *Result {
	var again, succeeded []*record
	done := uint32(0)
	for i := uint64(0); i < uint64(r.Shards); i++ {
		c, ok := w.loadRecord(r.FirstShard + i)
		if w.err != nil {
			return nil
		}
		if !ok {
			done++ // a shard deleted by hand: nothing is left of it to run
			continue
		}
		if c.State == stSuccess {
			done++
			succeeded = append(succeeded, c)
			continue
		}
		if !isTerminal(c.State) {
			continue // still running or waiting (not reachable: it ended with r)
		}
		if a, until, held := w.stopHeld(c, shardHoldMs); held {
			return errResult(model.Errorf(model.CodeUnavailable, "shard %d of instance %s: attempt %d was stopped at %s and may still run until %s; retry",
				c.ShardIndex, model.FormatID(r.ID), a.Number, a.EndedAt.Format(model.TimeLayout), model.UnixMilli(until).Format(model.TimeLayout)))
		}
		again = append(again, c)
	}
	if len(again) == 0 && len(succeeded) > 0 {
		// Every shard had succeeded: a re-run of a success runs it all
		// again, as it does an instance that is not sharded.
		again, done = succeeded, done-uint32(len(succeeded))
	}
	for _, c := range again {
		was := name(stateNames, c.State)
		c.Base, c.Free, c.Flags = c.Attempts, 0, flagRerun
		c.FiredAt, c.StartedAt, c.FinishedAt, c.Node, c.TaskVersion, c.Canary = w.cmd.Now, 0, 0, w.cmd.Node, r.TaskVersion, r.Canary
		c.Executor, c.Host, c.LastError, c.ExitCode, c.LeaseUntil, c.RetryAt, c.AttemptStart = "", "", "", 0, 0, 0, 0
		w.event(c.ID, "rerun", fmt.Sprintf("re-run with instance %s by %s; it had ended %s", model.FormatID(r.ID), w.cmd.Actor, was))
		w.setState(c, stReady)
	}
	r.ShardsDone, r.ShardsFailed, r.LastError = done, 0, ""
	if r.StartedAt == 0 {
		r.StartedAt = w.cmd.Now
	}
	w.setState(r, stRunning)
	w.event(r.ID, "sharded", fmt.Sprintf("runs %d of its %d shards again (%d succeeded before)", len(again), r.Shards, done))
	if len(again) == 0 {
		w.shardsSettled(r)
	}
	return okResult(struct {
		First string `json:"first"`
		Total int    `json:"total"`
		Again int    `json:"again"`
	}{model.FormatID(r.FirstShard), int(r.Shards), len(again)})
}

// shardsLeft ends FAILED the shards of r pinned to executor that wait to
// run, and returns how many.
func (w instanceWrites) shardsLeft(r *record, executor string) int {
	n := 0
	for i := uint64(0); i < uint64(r.Shards); i++ {
		c, ok := w.loadRecord(r.FirstShard + i)
		if w.err != nil {
			return n
		}
		if !ok || c.Pin != executor || (c.State != stReady && c.State != stRetrying) {
			continue
		}
		c.LastError = fmt.Sprintf("executor %s left during the broadcast", executor)
		w.event(c.ID, "executor_left", c.LastError)
		w.finish(c, stFailed)
		n++
	}
	return n
}

// shardEnded counts the end of shard c (state st) in its instance, which
// ends when the shards say so.
func (w instanceWrites) shardEnded(c *record, st uint8) {
	r, ok := w.loadRecord(c.Parent)
	if !ok || r.State != stRunning || r.FirstShard == 0 {
		return // it ended first (and ends its shards)
	}
	r.ShardsDone++
	failed := st != stSuccess
	if failed {
		r.ShardsFailed++
		if r.ShardsFailed == 1 {
			why := c.LastError
			if why == "" {
				why = "no error recorded"
			}
			r.LastError = truncateError(fmt.Sprintf("shard %d of %d ended %s: %s", c.ShardIndex, r.Shards, name(stateNames, st), why))
		}
	}
	if failed && w.failFast(r.Task) && r.ShardsDone < r.Shards {
		r.LastError = truncateError(r.LastError + " (shardFailure fail-fast: the other shards were stopped)")
		r.FinishedAt = w.cmd.Now
		w.finish(r, stFailed)
		return
	}
	w.shardsSettled(r)
}

// shardsSettled ends r once all its shards have: SUCCESS if all
// succeeded, else FAILED; else it only stores the count.
func (w instanceWrites) shardsSettled(r *record) {
	if r.ShardsDone < r.Shards {
		w.putRecord(r)
		return
	}
	st := stSuccess
	if r.ShardsFailed > 0 {
		st = stFailed
		r.LastError = truncateError(fmt.Sprintf("%d of %d shards did not succeed; first: %s", r.ShardsFailed, r.Shards, r.LastError))
	}
	r.FinishedAt = w.cmd.Now
	w.finish(r, st)
}

// failFast reports whether task's shards fail fast (the default; also
// when the task is gone).
func (w instanceWrites) failFast(task string) bool {
	t, ok := w.tasks().definition(task)
	return !ok || t.Policy.ShardFailure != model.ShardFinish
}

// endShards ends the shards of r, which ended (state st), that have not:
// a running one is terminated, a waiting one canceled.
func (w instanceWrites) endShards(r *record, st uint8) {
	why := fmt.Sprintf("instance %s ended %s", model.FormatID(r.ID), name(stateNames, st))
	for i := uint64(0); i < uint64(r.Shards); i++ {
		c, ok := w.loadRecord(r.FirstShard + i)
		if w.err != nil {
			return
		}
		if !ok || !isActive(c.State) {
			continue
		}
		c.FinishedAt = w.cmd.Now
		if c.State == stRunning || c.State == stApproval && c.Flags&flagMidRunApproval != 0 {
			w.attempts().stopAttempt(c, model.OutcomeTerminated, why)
			w.event(c.ID, "terminated", why)
			w.finish(c, stTerm)
			continue
		}
		w.event(c.ID, "canceled", why)
		w.finish(c, stCanceled)
	}
}

// pruneShards deletes the shards of r, which retention deletes.
func (w instanceWrites) pruneShards(r *record) {
	for i := uint64(0); i < uint64(r.Shards); i++ {
		id := r.FirstShard + i
		w.del(bktInstances, u64key(id))
		w.del(bktActive, u64key(id)) // none: r ended, and so did they
		for _, b := range [][]byte{bktAttempts, bktLogs, bktInstEvents} {
			w.delPrefix(b, u64key(id))
		}
	}
}

// shardSummary counts r's shards by state.
func shardSummary(tx *bolt.Tx, r *record) *model.ShardSummary {
	s := &model.ShardSummary{Total: int(r.Shards), ByState: map[string]int{}}
	b := tx.Bucket(bktInstances)
	for i := uint64(0); i < uint64(r.Shards); i++ {
		v := b.Get(u64key(r.FirstShard + i))
		if len(v) < 2 {
			continue
		}
		s.ByState[name(stateNames, v[1])]++
	}
	return s
}

// Shards returns the shards of instance id, in order (nil for an
// instance that is not sharded or not fanned out yet).
func (q instanceReads) Shards(id uint64) ([]model.Instance, error) {
	var out []model.Instance
	err := q.f.view(func(tx *bolt.Tx) error {
		r, err := readRecord(tx, id)
		if err != nil {
			return err
		}
		if r.FirstShard == 0 {
			return nil
		}
		out = make([]model.Instance, 0, r.Shards)
		for i := uint64(0); i < uint64(r.Shards); i++ {
			v := tx.Bucket(bktInstances).Get(u64key(r.FirstShard + i))
			if v == nil {
				continue
			}
			c, err := decodeRecord(r.FirstShard+i, v)
			if err != nil {
				return err
			}
			out = append(out, c.toModel())
		}
		return nil
	})
	return out, err
}
