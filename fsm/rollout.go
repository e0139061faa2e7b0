package fsm

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"maps"
	"slices"

	bolt "go.etcd.io/bbolt"

	"github.com/ax-scheduler/ax/fsm/command"
	"github.com/ax-scheduler/ax/model"
)

// Canary rollouts (protocol 8). A put_task with a rollout (RolloutSpec)
// keeps the stored task (the stable version) and writes the new
// definition to the history only, as version C (op "canary"); bktRollouts
// holds the task's latest rollout. While it progresses, each instance the
// task gets is a canary or not by a hash of the task's name and its fire
// time (CanaryPick): a canary records version C and the canary flag, and
// runs C's action and policy on executors carrying the rollout's
// testLabels beside C's executorLabels (Jobs, CanaryTask). Its end, in
// the apply of the finish that causes it, counts: promoteAfter successes
// promote C (a new version with C's definition, op "promote"); a failure
// rolls back (the stable version stays; a rollback event and alert)
// unless abortOnFailure is false. promote_rollout and abort_rollout end
// it by hand. A new task has no stable version: every fire is a canary,
// and a rollback or an abort pauses it. A put_task without a rollout is
// refused while one progresses; one with a rollout replaces the canary.

// bktRollouts: task name -> model.Rollout JSON, its latest rollout.
var bktRollouts = []byte("rollouts")

// Task history operations of a rollout.
const (
	OpCanary  = "canary"
	OpPromote = "promote"
)

// rolloutAlertRule is the rule of the alert a rollback raises.
const rolloutAlertRule = model.RuleRollback

// loadRollout returns the task's latest rollout (nil: none), read once
// per command: a caller that changes it saves it (saveRollout).
func (w *writer) loadRollout(task string) *model.Rollout {
	if ro, ok := w.rollouts[task]; ok {
		return ro
	}
	var out *model.Rollout
	if v := w.tx.Bucket(bktRollouts).Get([]byte(task)); v != nil {
		out = &model.Rollout{}
		if err := json.Unmarshal(v, out); err != nil {
			w.err = err
			return nil
		}
	}
	if w.rollouts == nil {
		w.rollouts = map[string]*model.Rollout{}
	}
	w.rollouts[task] = out
	return out
}

func (w *writer) saveRollout(ro *model.Rollout) {
	b, err := json.Marshal(ro)
	if err != nil {
		w.err = err
		return
	}
	w.put(bktRollouts, []byte(ro.Task), b)
	if w.rollouts == nil {
		w.rollouts = map[string]*model.Rollout{}
	}
	w.rollouts[ro.Task] = ro
}

// dropRollout deletes the task's rollout record (its task is deleted).
func (w *writer) dropRollout(task string) {
	w.del(bktRollouts, []byte(task))
	delete(w.rollouts, task)
}

// activeRollout is the task's rollout while canary fires run (nil:
// none, or the state is below protocol 8, which has none).
func (w *writer) activeRollout(task string) *model.Rollout {
	if w.protoAt() < proto8 {
		return nil
	}
	if ro := w.loadRollout(task); ro.Active() {
		return ro
	}
	return nil
}

// CanaryPick says whether the fire of task at (Unix ms) is one of the
// percent that run the canary: a hash of both, the same on every replica
// (exported for tests that check which instances were canaries).
func CanaryPick(task string, at int64, percent int) bool {
	h := fnv.New64a()
	h.Write([]byte(task))
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(at))
	h.Write(b[:])
	x := h.Sum64()
	// splitmix64's finalizer: fire times a second apart differ in few bits.
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return int(x%100) < percent
}

// pickCanary makes a new instance a canary if its task's rollout picks
// its fire time: it records the canary version.
func (w instanceWrites) pickCanary(r *record) {
	ro := w.activeRollout(r.Task)
	if ro == nil || (ro.Stable != 0 && !CanaryPick(r.Task, r.ScheduledAt, ro.Percent)) {
		return
	}
	r.Canary, r.TaskVersion = true, ro.Canary
	ro.Fires++
	w.saveRollout(ro)
}

// historyTask reads version v of a task from its history (nil: none).
func historyTask(tx *bolt.Tx, name string, v uint64) (*model.Task, error) {
	b := tx.Bucket(bktHistory).Get(historyKey(name, v))
	if b == nil {
		return nil, nil
	}
	var tv model.TaskVersion
	if err := json.Unmarshal(b, &tv); err != nil {
		return nil, err
	}
	return tv.Task, nil
}

// canaryDefinition is what a canary instance r runs while its rollout
// progresses: the canary version with the testLabels added to its
// executorLabels. ok is false when r is not a canary of a progressing
// rollout: it runs the task's current definition.
func canaryDefinition(tx *bolt.Tx, r *record) (t *model.Task, ok bool, err error) {
	if !r.Canary {
		return nil, false, nil
	}
	ro := (&writer{tx: tx}).loadRollout(r.Task)
	if !ro.Active() || ro.Canary != r.TaskVersion {
		return nil, false, nil
	}
	t, err = historyTask(tx, r.Task, ro.Canary)
	if t == nil || err != nil {
		return nil, false, err
	}
	if len(ro.TestLabels) > 0 {
		labels := maps.Clone(t.Policy.ExecutorLabels)
		if labels == nil {
			labels = map[string]string{}
		}
		maps.Copy(labels, ro.TestLabels)
		t.Policy.ExecutorLabels = labels
	}
	return t, true, nil
}

// rolloutPlan is put_task's rollout: its spec and the rollout it
// replaces (nil: none progresses).
type rolloutPlan struct {
	spec     *model.RolloutSpec
	replaces *model.Rollout
}

// planRollout takes the rollout out of a put_task's definition and
// decides what it does with the task's progressing rollout: a put
// without one is refused while one progresses; with one, changed says
// whether it differs from the progressing canary.
func (w taskWrites) planRollout(in *model.Task, exists bool) (*rolloutPlan, bool, *model.Error) {
	spec := in.Rollout
	in.Rollout = nil
	var ro *model.Rollout
	if exists {
		ro = w.activeRollout(in.Name)
	}
	if ro == nil {
		if spec == nil {
			return nil, false, nil
		}
		return &rolloutPlan{spec: spec}, false, nil
	}
	if spec == nil {
		return nil, false, &model.Error{Code: model.CodeConflict, Field: "rollout",
			Message: fmt.Sprintf("task %s has a rollout in progress (canary version %d): promote or abort it first, or PUT with a rollout to replace the canary", in.Name, ro.Canary)}
	}
	canary, err := historyTask(w.tx, in.Name, ro.Canary)
	if err != nil {
		w.err = err
		return nil, false, nil
	}
	same := canary != nil && sameSpec(canary, in) && ro.Percent == spec.Percent && ro.PromoteAfter == spec.PromoteAfter &&
		maps.Equal(ro.TestLabels, spec.TestLabels) && ro.AbortOnFailure == abortOnFailure(spec)
	return &rolloutPlan{spec: spec, replaces: ro}, !same, nil
}

func abortOnFailure(s *model.RolloutSpec) bool { return s.AbortOnFailure == nil || *s.AbortOnFailure }

// startRollout writes in, a changed definition of cur, as the canary of
// a new rollout (or, for a new task created with a rollout, cur nil and
// in already stored, the rollout alone).
func (w taskWrites) startRollout(in *model.Task, cur *storedTask, rp *rolloutPlan) *Result {
	now := model.UnixMilli(w.cmd.Now)
	ro := &model.Rollout{Task: in.Name, Phase: model.RolloutProgressing, Canary: in.Version, Percent: rp.spec.Percent,
		PromoteAfter: rp.spec.PromoteAfter, TestLabels: rp.spec.TestLabels, AbortOnFailure: abortOnFailure(rp.spec),
		StartedAt: now, StartedBy: w.cmd.Actor}
	msg := fmt.Sprintf("new task: its first %d successful fires run as canaries", ro.PromoteAfter)
	switch {
	case cur != nil && rp.replaces != nil && rp.replaces.Stable == 0:
		// A new task's canary is the task itself: it is replaced.
		in.Version = lastVersion(w.tx, in.Name) + 1
		in.CreatedAt, in.Paused = cur.CreatedAt, cur.Paused
		w.saveTask(in, OpCanary)
		if !sameTrigger(&cur.Trigger, &in.Trigger) {
			w.advanceWatermark(in.Name, w.cmd.Now)
		}
		ro.Canary = in.Version
		w.notes.tasks = append(w.notes.tasks, in.Name)
	case cur != nil:
		in.Version = lastVersion(w.tx, in.Name) + 1
		in.CreatedAt, in.UpdatedAt, in.UpdatedBy, in.Paused = cur.CreatedAt, now, w.cmd.Actor, cur.Paused
		h, err := json.Marshal(model.TaskVersion{Version: in.Version, Op: OpCanary, Actor: w.cmd.Actor, Time: now, Task: in})
		if err != nil {
			w.err = err
			return nil
		}
		w.put(bktHistory, historyKey(in.Name, in.Version), h)
		ro.Stable, ro.Canary = cur.Version, in.Version
		msg = fmt.Sprintf("canary version %d takes %d%% of the fires of stable version %d until %d succeed", ro.Canary, ro.Percent, ro.Stable, ro.PromoteAfter)
		w.notes.tasks = append(w.notes.tasks, in.Name)
	}
	if len(ro.TestLabels) > 0 {
		msg += ", on executors labelled " + labelList(ro.TestLabels)
	}
	if rp.replaces != nil {
		msg += fmt.Sprintf("; replaces canary version %d", rp.replaces.Canary)
	}
	w.saveRollout(ro)
	st := w.loadState(in.Name)
	w.event(in.Name, &st, "rollout_started", msg)
	w.saveState(in.Name, st)
	return okResult(model.WriteResult{Name: in.Name, Version: in.Version, Changed: true, Created: cur == nil && w.protoAt() >= protoKeepPaused})
}

func labelList(m map[string]string) string {
	s := ""
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if s != "" {
			s += ","
		}
		s += k + "=" + m[k]
	}
	return s
}

// rolloutCheck is the check of promote_rollout and abort_rollout: the
// task must exist and have a rollout in progress.
func (w taskWrites) rolloutCheck(r *command.TaskRef) (*storedTask, *Result) {
	t, res := w.existingTask(r.Name)
	if res != nil || w.err != nil {
		return nil, res
	}
	if w.activeRollout(r.Name) == nil {
		return nil, errResult(&model.Error{Code: model.CodePrecondition, Field: "name",
			Message: "task " + r.Name + " has no rollout in progress"})
	}
	return t, nil
}

// promoteRollout is the apply of promote_rollout.
func (w taskWrites) promoteRollout(r *command.TaskRef, cur *storedTask) *Result {
	ro := w.activeRollout(r.Name)
	who := w.cmd.Actor
	if who == "" {
		who = "an operator"
	}
	v := w.promote(ro, cur, "promoted by "+who)
	if w.err != nil {
		return nil
	}
	return okResult(model.WriteResult{Name: r.Name, Version: v, Changed: true})
}

// promote ends a rollout by making the canary the task: a new version
// with the canary's definition (keeping paused as it is), or for a new
// task the definition it has. It returns the task's version.
func (w taskWrites) promote(ro *model.Rollout, cur *storedTask, why string) uint64 {
	v := cur.Version
	if ro.Stable != 0 {
		def, err := historyTask(w.tx, ro.Task, ro.Canary)
		if err != nil || def == nil {
			w.err = fmt.Errorf("fsm: canary version %d of task %s: %w", ro.Canary, ro.Task, err)
			return 0
		}
		in := *def
		in.Paused, in.CreatedAt = cur.Paused, cur.CreatedAt
		in.Version = lastVersion(w.tx, ro.Task) + 1
		w.saveTask(&in, OpPromote)
		if !sameTrigger(&cur.Trigger, &in.Trigger) {
			w.advanceWatermark(ro.Task, w.cmd.Now)
		}
		v = in.Version
	}
	w.endRollout(ro, model.RolloutPromoted, "promoted", why)
	ro.Promoted = v
	w.saveRollout(ro)
	if a, ok := w.alerts().loadAlert(rolloutAlertRule + ":" + ro.Task); ok {
		// The task's last rollback is behind it.
		w.alerts().resolve(a, w.alerts().activeSilences(w.cmd.Now))
	}
	return v
}

// abortRollout is the apply of abort_rollout: the stable version stays
// (a new task, which has none, is paused).
func (w taskWrites) abortRollout(r *command.TaskRef, cur *storedTask) *Result {
	ro := w.activeRollout(r.Name)
	who := w.cmd.Actor
	if who == "" {
		who = "an operator"
	}
	w.endRollout(ro, model.RolloutAborted, "rollout_aborted", "aborted by "+who)
	w.saveRollout(ro)
	v := cur.Version
	if ro.Stable == 0 {
		v = w.pauseUnpromoted(cur)
	}
	return okResult(model.WriteResult{Name: r.Name, Version: v, Changed: true})
}

// pauseUnpromoted pauses a new task whose first rollout did not promote
// it (it has no stable version to fall back to).
func (w taskWrites) pauseUnpromoted(cur *storedTask) uint64 {
	if cur.Paused {
		return cur.Version
	}
	t := cur.Task
	t.Paused = true
	t.Version = lastVersion(w.tx, t.Name) + 1
	w.saveTask(&t, OpPause)
	return t.Version
}

// endRollout records a rollout's end: its phase, when, by whom, why, and
// the task event.
func (w taskWrites) endRollout(ro *model.Rollout, phase, event, why string) {
	at := model.UnixMilli(w.cmd.Now)
	ro.Phase, ro.EndedAt, ro.EndedBy, ro.Reason = phase, &at, w.cmd.Actor, why
	st := w.loadState(ro.Task)
	w.event(ro.Task, &st, event, fmt.Sprintf("canary version %d: %s", ro.Canary, why))
	w.saveState(ro.Task, st)
	w.notes.tasks = append(w.notes.tasks, ro.Task)
}

// canaryFinished counts a canary instance's end against its rollout:
// promoteAfter successes promote it, a failure rolls it back unless
// abortOnFailure is false. Run by finish, once per instance end.
func (w taskWrites) canaryFinished(r *record, st uint8) {
	if st != stSuccess && st != stFailed {
		return
	}
	ro := w.activeRollout(r.Task)
	if ro == nil || ro.Canary != r.TaskVersion {
		return
	}
	cur, ok := w.loadTask(r.Task)
	if !ok {
		return
	}
	id := model.FormatID(r.ID)
	if st == stSuccess {
		ro.Successes++
		if ro.Successes >= uint64(ro.PromoteAfter) {
			w.promote(ro, cur, fmt.Sprintf("%d canary fires succeeded (the last: instance %s)", ro.Successes, id))
			return
		}
		w.saveRollout(ro)
		return
	}
	ro.Failures++
	if !ro.AbortOnFailure {
		w.saveRollout(ro)
		return
	}
	why := "canary instance " + id + " failed"
	if r.LastError != "" {
		why += ": " + r.LastError
	}
	w.endRollout(ro, model.RolloutRolledBack, "rollback", why)
	w.saveRollout(ro)
	summary := fmt.Sprintf("task %s: canary version %d rolled back to stable version %d: %s", ro.Task, ro.Canary, ro.Stable, why)
	if ro.Stable == 0 {
		w.pauseUnpromoted(cur)
		summary = fmt.Sprintf("task %s: new task's canary version %d failed, the task is paused: %s", ro.Task, ro.Canary, why)
	}
	w.alerts().raise(rolloutAlertRule+":"+ro.Task, rolloutAlertRule, model.SeverityCritical,
		model.AlertSubject{Task: ro.Task, Instance: id}, summary,
		map[string]string{"canaryVersion": uitoa(ro.Canary), "stableVersion": uitoa(ro.Stable)})
}

// Rollout returns the task's latest rollout.
func (q taskReads) Rollout(name string) (*model.Rollout, error) {
	var ro *model.Rollout
	err := q.f.view(func(tx *bolt.Tx) error {
		if ro = (&writer{tx: tx}).loadRollout(name); ro == nil {
			return &model.Error{Code: model.CodeNotFound, Field: "name", Message: "task " + name + " has had no rollout"}
		}
		return nil
	})
	return ro, err
}

// CanaryTask returns what the canary instances of a task run while its
// rollout progresses (the canary version, testLabels added to its
// executorLabels), else the task itself: the dispatcher routes canary
// instances by it.
func (q taskReads) CanaryTask(name string) (*model.Task, error) {
	var out *model.Task
	err := q.f.view(func(tx *bolt.Tx) error {
		ro := (&writer{tx: tx}).loadRollout(name)
		if ro.Active() {
			t, ok, err := canaryDefinition(tx, &record{Task: name, Canary: true, TaskVersion: ro.Canary})
			if err != nil || ok {
				out = t
				return err
			}
		}
		return nil
	})
	if out != nil || err != nil {
		return out, err
	}
	return q.GetTask(name)
}
