package fsm

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strings"

	bolt "go.etcd.io/bbolt"

	"github.com/ax-scheduler/ax/model"
)

// Protocol 4 policies (DESIGN.md, "Protocol 4 policies"): dependsOn and
// onSuccess cycles refused, onUpstreamFailure, onSuccess chains and the
// overlap=queue bound maxQueued. Every rule here applies inside apply only
// from the entry after set_proto 4, so that an entry an older release
// logged replays as it was first applied; Precheck applies the put_task
// rules to every new proposal.

// protoPolicies is the protocol that adds the rules of this file.
const protoPolicies = 4

// protoAt returns the protocol the state had when this command began.
func (w *writer) protoAt() int {
	if w.proto == 0 {
		w.proto = stateProto(w.tx)
	}
	return w.proto
}

// policyRefusal is what put_task refuses at protocol proto beyond the
// static checks: a protocol-4 field before the cluster reached it, or a
// dependsOn or onSuccess cycle through the task (reading the stored
// tasks, with t in place of the stored definition of its name).
func policyRefusal(tx *bolt.Tx, proto int, t *model.Task) *model.Error {
	if proto < protoPolicies {
		if f := t.Policy.UsesProto4(); f != "" {
			return &model.Error{Code: model.CodePrecondition, Field: f,
				Message: fmt.Sprintf("%s needs protocol %d, the cluster is at protocol %d: upgrade every member first", f, protoPolicies, proto)}
		}
		return nil
	}
	deps := func(p *model.Policy) []string { return p.DependsOn }
	if path := findCycle(tx, t, deps); path != nil {
		return model.FieldErrorf("policy.dependsOn", "dependsOn cycle: %s", strings.Join(path, " -> "))
	}
	chain := func(p *model.Policy) []string {
		out := make([]string, len(p.OnSuccess))
		for i, c := range p.OnSuccess {
			out[i] = c.Task
		}
		return out
	}
	if path := findCycle(tx, t, chain); path != nil {
		return model.FieldErrorf("policy.onSuccess", "onSuccess cycle: %s", strings.Join(path, " -> "))
	}
	return nil
}

// findCycle returns a path t -> ... -> t along the edges next gives (the
// stored definitions of the other tasks, t's own), or nil. It explores
// edges in list order, depth first, so every replica names the same
// cycle; each task is expanded once.
func findCycle(tx *bolt.Tx, t *model.Task, next func(*model.Policy) []string) []string {
	seen := map[string]bool{}
	var path []string
	var walk func(name string, p *model.Policy) bool
	walk = func(name string, p *model.Policy) bool {
		path = append(path, name)
		for _, n := range next(p) {
			if n == t.Name {
				path = append(path, n)
				return true
			}
			if seen[n] {
				continue
			}
			seen[n] = true
			v := tx.Bucket(bktTasks).Get([]byte(n))
			if v == nil {
				continue
			}
			var st storedTask
			if json.Unmarshal(v, &st) != nil {
				continue
			}
			if walk(n, &st.Policy) {
				return true
			}
		}
		path = path[:len(path)-1]
		return false
	}
	seen[t.Name] = true
	if walk(t.Name, &t.Policy) {
		return path
	}
	return nil
}

// queueFull skips r instead of queueing it when its task's queue holds
// maxQueued BLOCKED instances already (protocol 4), and reports whether
// it did. Delayed submissions and backfills are never dropped: each is
// work a caller asked for by name.
func (w *writer) queueFull(r *record, t *model.Task, st taskState) bool {
	if w.protoAt() < protoPolicies {
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
	w.setState(r, stSkipped)
	w.notes.changes[len(w.notes.changes)-1].Reason = "queue_full"
	w.instanceEvent(r.ID, "queue_full", fmt.Sprintf("%d instances already queued (maxQueued %d)", st.Blocked, limit))
	return true
}

func failedDepKey(task, date string) []byte { return depKey(task, date) }

// upstreamFailed applies onUpstreamFailure when r, an instance with a
// scheduled date, ends FAILED or TERMINATED (protocol 4): it records the
// failure for the date, and the instances waiting for r's task on that
// date whose task says skip or fail end SKIPPED or FAILED.
func (w *writer) upstreamFailed(r *record) {
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
		nr, ok := w.loadRecord(id)
		if !ok || nr.State != stBlocked || nr.Flags&flagWaitingDeps == 0 {
			continue
		}
		t, ok := w.taskPolicy(nr.Task)
		if !ok || (t.Policy.OnUpstreamFailure != "skip" && t.Policy.OnUpstreamFailure != "fail") {
			continue
		}
		w.giveUpDeps(nr, t, r.Task, r.ID, name(stateNames, r.State))
	}
}

// failedUpstream returns the first task of missing (in order) that has an
// instance FAILED or TERMINATED for date, and that instance's id.
func (w *writer) failedUpstream(missing []string, date string) (string, uint64, bool) {
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
func (w *writer) giveUpDeps(r *record, t *model.Task, upTask string, upID uint64, upState string) {
	if r.Flags&flagWaitingDeps != 0 {
		// The flag stays on the finished record: finish must not look
		// for r in the concurrency queue.
		for _, dep := range t.Policy.DependsOn {
			w.del(bktWaitDeps, binary.BigEndian.AppendUint64(append(depKey(dep, r.Date), 0), r.ID))
		}
	}
	why := fmt.Sprintf("upstream %s instance %s ended %s for %s", upTask, model.FormatID(upID), upState, r.Date)
	if t.Policy.OnUpstreamFailure == "skip" {
		w.finish(r, stSkipped)
		w.instanceEvent(r.ID, "upstream_failed", why+"; onUpstreamFailure=skip")
		return
	}
	r.LastError = "dependsOn: " + why
	w.finish(r, stFailed)
	w.instanceEvent(r.ID, "upstream_failed", why+"; onUpstreamFailure=fail")
}

// chain creates the onSuccess instances of r, which just succeeded
// (protocol 4): one of each listed task, due now, source dependency,
// with the entry's params plus parent_task and parent_instance, and r's
// scheduled date. A listed task that does not exist is an event on r.
func (w *writer) chain(r *record) {
	if w.protoAt() < protoPolicies {
		return
	}
	t, ok := w.taskPolicy(r.Task)
	if !ok || len(t.Policy.OnSuccess) == 0 {
		return
	}
	chains := t.Policy.OnSuccess // t may be replaced in the cache below
	for _, c := range chains {
		tv := w.loadState(c.Task).Version
		if tv == 0 {
			w.instanceEvent(r.ID, "on_success", fmt.Sprintf("onSuccess: task %s does not exist; nothing created", c.Task))
			continue
		}
		id, ok := w.newID()
		if !ok {
			w.instanceEvent(r.ID, "on_success", fmt.Sprintf("onSuccess: no instance ids left in this log entry; %s not created", c.Task))
			continue
		}
		params := make(map[string]string, len(c.Params)+2)
		for k, v := range c.Params {
			params[k] = v
		}
		params[model.ParamParentTask] = r.Task
		params[model.ParamParentInstance] = model.FormatID(r.ID)
		pj, err := json.Marshal(params) // sorted keys: deterministic
		if err != nil {
			w.err = err
			return
		}
		nr := &record{ID: id, Source: code(sourceNames, model.SourceDependency), CreatedAt: w.cmd.Now, ScheduledAt: w.cmd.Now,
			FiredAt: w.cmd.Now, TaskVersion: tv, Task: c.Task, Node: w.cmd.Node, Params: pj, Date: r.Date}
		w.create(nr, true)
		w.fired(nr)
		w.instanceEvent(id, "chained", fmt.Sprintf("created by onSuccess of %s instance %s", r.Task, model.FormatID(r.ID)))
		w.admit(nr)
		w.put(bktMeta, keyLastFired, u64key(id))
		w.instanceEvent(r.ID, "on_success", fmt.Sprintf("onSuccess: created %s instance %s (%s)", c.Task, model.FormatID(id), name(stateNames, nr.State)))
	}
}
