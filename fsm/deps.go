package fsm

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/ax-scheduler/ax/model"
)

// Dependencies between tasks: dependsOn (a scheduled instance waits
// BLOCKED until its upstream tasks succeeded for its date), and from
// protocol 4 onUpstreamFailure and onSuccess chains (DESIGN.md,
// "Protocol 4 policies").

// present is the value of set-like buckets that are probed with Get: bbolt
// answers Get with nil for an empty value written in the same transaction,
// so a key must carry a byte to be seen.
var present = []byte{1}

func depKey(task, date string) []byte { return []byte(task + "\x00" + date) }

func scheduledSource(r *record) bool {
	switch name(sourceNames, r.Source) {
	case model.SourceCron, model.SourceInterval, model.SourceOnce, model.SourceBackfill:
		return true
	}
	return false
}

// waitForDeps holds a scheduled instance BLOCKED until every dependsOn
// task has succeeded for the same scheduled date, and reports whether it
// did. Manual and delayed instances do not wait (they have no schedule).
func (w depWrites) waitForDeps(r *record, t *model.Task) bool {
	if len(t.Policy.DependsOn) == 0 || r.Date == "" || r.Flags&flagDepsMet != 0 || !scheduledSource(r) {
		return false
	}
	var missing, why []string
	for _, dep := range t.Policy.DependsOn {
		if w.tx.Bucket(bktSucceeded).Get(depKey(dep, r.Date)) == nil {
			missing = append(missing, dep)
			if w.tx.Bucket(bktTasks).Get([]byte(dep)) == nil {
				dep += " (no such task yet)"
			}
			why = append(why, dep)
		}
	}
	if len(missing) == 0 {
		r.Flags |= flagDepsMet
		return false
	}
	if p := t.Policy.OnUpstreamFailure; (p == "skip" || p == "fail") && w.protoAt() >= protoPolicies {
		if dep, id, failed := w.failedUpstream(missing, r.Date); failed {
			state := "FAILED or TERMINATED"
			if ur, ok := w.instances().loadRecord(id); ok {
				state = name(stateNames, ur.State)
			}
			w.giveUpDeps(r, t, dep, id, state)
			return true
		}
	}
	for _, dep := range missing {
		w.put(bktWaitDeps, binary.BigEndian.AppendUint64(append(depKey(dep, r.Date), 0), r.ID), nil)
	}
	r.Flags |= flagWaitingDeps
	w.instances().setState(r, stBlocked)
	w.instances().event(r.ID, "blocked", fmt.Sprintf("dependsOn: waiting for %s to succeed for %s", strings.Join(why, ", "), r.Date))
	return true
}

// succeeded records r's success for its date and admits the instances
// that waited for it and now have all their dependencies.
func (w depWrites) succeeded(r *record) {
	if w.protoAt() >= proto8 {
		// The instance, for its result (upstreamResults).
		w.put(bktSucceeded, depKey(r.Task, r.Date), u64key(r.ID))
	} else {
		w.put(bktSucceeded, depKey(r.Task, r.Date), present)
	}
	prefix := append(depKey(r.Task, r.Date), 0)
	var keys [][]byte
	c := w.tx.Bucket(bktWaitDeps).Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		keys = append(keys, append([]byte(nil), k...))
	}
	for _, k := range keys {
		w.del(bktWaitDeps, k)
		id := binary.BigEndian.Uint64(k[len(k)-8:])
		nr, ok := w.instances().loadRecord(id)
		if !ok || nr.State != stBlocked || nr.Flags&flagWaitingDeps == 0 {
			continue
		}
		t, ok := w.tasks().definition(nr.Task)
		if !ok {
			continue
		}
		all := true
		for _, dep := range t.Policy.DependsOn {
			all = all && w.tx.Bucket(bktSucceeded).Get(depKey(dep, nr.Date)) != nil
		}
		if !all {
			continue
		}
		nr.Flags = nr.Flags&^flagWaitingDeps | flagDepsMet
		w.instances().event(id, "unblocked", "dependsOn satisfied for "+nr.Date)
		w.slots().admit(nr)
	}
}

func failedDepKey(task, date string) []byte { return depKey(task, date) }

// upstreamFailed applies onUpstreamFailure when r, an instance with a
// scheduled date, ends FAILED or TERMINATED (protocol 4): it records the
// failure for the date, and the instances waiting for r's task on that
// date whose task says skip or fail end SKIPPED or FAILED.
func (w depWrites) upstreamFailed(r *record) {
	if r.Date == "" || w.protoAt() < protoPolicies {
		return
	}
	w.put(bktFailedDeps, failedDepKey(r.Task, r.Date), u64key(r.ID))
	prefix := append(depKey(r.Task, r.Date), 0)
	var ids []uint64
	c := w.tx.Bucket(bktWaitDeps).Cursor()
	for k, _ := c.Seek(prefix); k != nil && len(k) == len(prefix)+8 && string(k[:len(prefix)]) == string(prefix); k, _ = c.Next() {
		ids = append(ids, binary.BigEndian.Uint64(k[len(prefix):]))
	}
	for _, id := range ids {
		nr, ok := w.instances().loadRecord(id)
		if !ok || nr.State != stBlocked || nr.Flags&flagWaitingDeps == 0 {
			continue
		}
		t, ok := w.tasks().definition(nr.Task)
		if !ok || (t.Policy.OnUpstreamFailure != "skip" && t.Policy.OnUpstreamFailure != "fail") {
			continue
		}
		w.giveUpDeps(nr, t, r.Task, r.ID, name(stateNames, r.State))
	}
}

// failedUpstream returns the first task of missing (in order) that has an
// instance FAILED or TERMINATED for date, and that instance's id.
func (w depWrites) failedUpstream(missing []string, date string) (string, uint64, bool) {
	for _, dep := range missing {
		if v := w.tx.Bucket(bktFailedDeps).Get(failedDepKey(dep, date)); len(v) == 8 {
			return dep, binary.BigEndian.Uint64(v), true
		}
	}
	return "", 0, false
}

// giveUpDeps ends r, which waits (or would wait) for its dependsOn, as
// its task's onUpstreamFailure says: SKIPPED (skip) or FAILED (fail),
// naming the upstream instance that failed.
func (w depWrites) giveUpDeps(r *record, t *model.Task, upTask string, upID uint64, upState string) {
	if r.Flags&flagWaitingDeps != 0 {
		// The flag stays on the finished record: finish must not look
		// for r in the concurrency queue.
		for _, dep := range t.Policy.DependsOn {
			w.del(bktWaitDeps, binary.BigEndian.AppendUint64(append(depKey(dep, r.Date), 0), r.ID))
		}
	}
	why := fmt.Sprintf("upstream %s instance %s ended %s for %s", upTask, model.FormatID(upID), upState, r.Date)
	if t.Policy.OnUpstreamFailure == "skip" {
		w.instances().finish(r, stSkipped)
		w.instances().event(r.ID, "upstream_failed", why+"; onUpstreamFailure=skip")
		return
	}
	r.LastError = "dependsOn: " + why
	w.instances().finish(r, stFailed)
	w.instances().event(r.ID, "upstream_failed", why+"; onUpstreamFailure=fail")
}

// chain creates the onSuccess instances of r, which just succeeded
// (protocol 4): one of each listed task, due now, source dependency,
// with the entry's params plus parent_task and parent_instance, and r's
// scheduled date. A listed task that does not exist is an event on r.
func (w depWrites) chain(r *record) {
	if w.protoAt() < protoPolicies {
		return
	}
	t, ok := w.tasks().definition(r.Task)
	if !ok || len(t.Policy.OnSuccess) == 0 {
		return
	}
	chains := t.Policy.OnSuccess // t may be replaced in the cache below
	for _, c := range chains {
		tv := w.loadState(c.Task).Version
		if tv == 0 {
			w.instances().event(r.ID, "on_success", fmt.Sprintf("onSuccess: task %s does not exist; nothing created", c.Task))
			continue
		}
		params := make(map[string]string, len(c.Params)+2)
		for k, v := range c.Params {
			params[k] = v
		}
		params[model.ParamParentTask] = r.Task
		params[model.ParamParentInstance] = model.FormatID(r.ID)
		pj, e := w.tasks().instanceParams(c.Task, params) // sorted keys: deterministic
		if w.err != nil {
			return
		}
		if e != nil {
			w.instances().event(r.ID, "on_success", fmt.Sprintf("onSuccess: task %s refuses the parameters (%s: %s); nothing created", c.Task, e.Field, e.Message))
			continue
		}
		id, ok := w.instances().newID()
		if !ok {
			w.instances().event(r.ID, "on_success", fmt.Sprintf("onSuccess: no instance ids left in this log entry; %s not created", c.Task))
			continue
		}
		nr := &record{ID: id, Source: code(sourceNames, model.SourceDependency), CreatedAt: w.cmd.Now, ScheduledAt: w.cmd.Now,
			FiredAt: w.cmd.Now, TaskVersion: tv, Task: c.Task, Node: w.cmd.Node, Params: pj, Date: r.Date}
		w.instances().create(nr, true)
		w.stats().fired(nr)
		w.instances().event(id, "chained", fmt.Sprintf("created by onSuccess of %s instance %s", r.Task, model.FormatID(r.ID)))
		w.slots().admit(nr)
		w.put(bktMeta, keyLastFired, u64key(id))
		w.instances().event(r.ID, "on_success", fmt.Sprintf("onSuccess: created %s instance %s (%s)", c.Task, model.FormatID(id), name(stateNames, nr.State)))
	}
}
