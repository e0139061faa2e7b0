package fsm

import (
	"bytes"
	"encoding/binary"
	"encoding/json"

	bolt "go.etcd.io/bbolt"

	"github.com/ax-scheduler/ax/fsm/command"
	"github.com/ax-scheduler/ax/model"
)

// Task history operations.
const (
	OpCreate = "create"
	OpUpdate = "update"
	OpPause  = "pause"
	OpResume = "resume"
	OpDelete = "delete"
)

// storedTask is a task's record in the tasks bucket: the definition plus
// the server-kept fields. It is also the body of its history entries.
type storedTask struct {
	model.Task
	Deleted bool `json:"deleted,omitempty"`
}

func historyKey(name string, version uint64) []byte {
	k := make([]byte, 0, len(name)+9)
	k = append(k, name...)
	k = append(k, 0)
	return binary.BigEndian.AppendUint64(k, version)
}

func (w taskWrites) loadTask(name string) (*storedTask, bool) {
	v := w.tx.Bucket(bktTasks).Get([]byte(name))
	if v == nil {
		return nil, false
	}
	var t storedTask
	if err := json.Unmarshal(v, &t); err != nil {
		w.err = err
		return nil, false
	}
	return &t, true
}

// lastVersion returns the highest version in the task's history, so a task
// deleted and created again continues its version sequence.
func lastVersion(tx *bolt.Tx, name string) uint64 {
	c := tx.Bucket(bktHistory).Cursor()
	prefix := append([]byte(name), 0)
	k, _ := c.Seek(historyKey(name, ^uint64(0)))
	if k == nil || !bytes.HasPrefix(k, prefix) {
		k, _ = c.Prev()
	} else if binary.BigEndian.Uint64(k[len(prefix):]) != ^uint64(0) {
		k, _ = c.Prev()
	}
	if k == nil || !bytes.HasPrefix(k, prefix) {
		return 0
	}
	return binary.BigEndian.Uint64(k[len(prefix):])
}

func (w taskWrites) saveTask(t *model.Task, op string) {
	t.UpdatedAt = model.UnixMilli(w.cmd.Now)
	t.UpdatedBy = w.cmd.Actor
	t.NextFireTimes, t.Runs, t.Completed = nil, 0, ""
	b, err := json.Marshal(t)
	if err != nil {
		w.err = err
		return
	}
	w.put(bktTasks, []byte(t.Name), b)
	h, err := json.Marshal(model.TaskVersion{
		Version: t.Version, Op: op, Actor: w.cmd.Actor, Time: model.UnixMilli(w.cmd.Now), Task: t,
	})
	if err != nil {
		w.err = err
		return
	}
	w.put(bktHistory, historyKey(t.Name, t.Version), h)
	st := w.loadState(t.Name)
	st.Version = t.Version
	w.saveState(t.Name, st)
}

// protoKeepPaused is the protocol from which put_task honors
// PutTask.KeepPaused and answers WriteResult.Created.
const protoKeepPaused = 5

// putPlan is what a put_task would do: next is the task as it would be
// stored (its Version and stamps not yet set), cur the stored task (nil
// when the put creates it).
type putPlan struct {
	next    model.Task
	cur     *storedTask
	changed bool
	rollout *rolloutPlan // a rollout of next as a canary (rollout.go)
}

// planPut decides a put_task from the state, writing nothing: the checks
// of the state's protocol, the version precondition, the pinning of a
// relative one-shot to the command's time, paused kept when asked (from
// protocol 5), and whether anything changes. A nil error with w.err set
// is a storage failure.
func (w taskWrites) planPut(p *command.PutTask) (*putPlan, *model.Error) {
	check := p.Storable
	if stateProto(w.tx) >= 2 {
		check = p.StrictStatic
	}
	if e := check(); e != nil {
		return nil, e
	}
	if sp := stateProto(w.tx); sp >= 2 && sp < 4 {
		// As a replica of protocol 2 or 3 decides (notifyNamesRefusal).
		if e := notifyNamesRefusal(&p.Task, true); e != nil {
			return nil, e
		}
	}
	if proto := w.protoAt(); proto >= protoPolicies || p.Task.Policy.UsesProto4() != "" {
		// Protocol 4: its fields only once every member knows them, and
		// no dependsOn or onSuccess cycle.
		if e := policyRefusal(w.tx, proto, &p.Task); e != nil {
			return nil, e
		}
	}
	if e := windowRefusal(w.protoAt(), &p.Task); e != nil {
		return nil, e // protocol 7's trigger fields
	}
	if e := proto8Refusal(w.protoAt(), &p.Task); e != nil {
		return nil, e
	}
	if e := calendarsRefusal(w.tx, &p.Task); e != nil {
		return nil, e // a calendar exists only from protocol 8: no older entry names one
	}
	if e := w.f.poolRefusal(w.tx, &p.Task); e != nil {
		return nil, e // the same for a pool
	}
	in := p.Task // normalized and validated
	if in.Trigger.Type == model.TriggerOnce && in.Trigger.Delay != 0 {
		// A relative one-shot is pinned to leader time when it is written,
		// so every replica and every later leader sees the same fire time.
		at := model.UnixMilli(w.cmd.Now + in.Trigger.Delay.Std().Milliseconds())
		in.Trigger.At, in.Trigger.Delay = &at, 0
	}
	cur, exists := w.loadTask(in.Name)
	if w.err != nil {
		return nil, nil
	}
	if in.Version != 0 {
		if !exists || cur.Version != in.Version {
			have := uint64(0)
			if exists {
				have = cur.Version
			}
			return nil, versionConflict(have, in.Version)
		}
	}
	if p.KeepPaused && w.protoAt() >= protoKeepPaused {
		in.Paused = exists && cur.Paused
	}
	in.Version, in.CreatedAt, in.UpdatedAt, in.UpdatedBy, in.NextFireTimes = 0, model.Time{}, model.Time{}, "", nil
	in.Runs, in.Completed = 0, ""
	rp, canaryChanged, e := w.planRollout(&in, exists)
	switch {
	case e != nil:
		return nil, e
	case w.err != nil:
		return nil, nil
	case !exists:
		return &putPlan{next: in, changed: true, rollout: rp}, nil
	case rp != nil && rp.replaces != nil:
		// Judged against the canary it would replace.
		return &putPlan{next: in, cur: cur, changed: canaryChanged, rollout: rp}, nil
	}
	return &putPlan{next: in, cur: cur, changed: !sameSpec(&cur.Task, &in), rollout: rp}, nil
}

// proposePut holds a new put_task to this version's rules whatever the
// state's protocol (apply holds an entry to its protocol's: planPut): the
// static checks; channel names in policy.notify and the protocol 4
// fields only once the cluster is at protocol 4, saying why; no dependsOn
// or onSuccess cycle.
func (w taskWrites) proposePut(p *command.PutTask) *model.Error {
	if e := p.StrictStatic(); e != nil {
		return e
	}
	proto := stateProto(w.tx)
	if proto < protoPolicies {
		if e := notifyNamesRefusal(&p.Task, false); e != nil {
			return e
		}
		if e := policyRefusal(w.tx, proto, &p.Task); e != nil {
			return e
		}
	}
	if e := windowRefusal(proto, &p.Task); e != nil {
		return e
	}
	if e := proto8Refusal(proto, &p.Task); e != nil {
		return e
	}
	return policyRefusal(w.tx, protoPolicies, &p.Task)
}

// putCheck is put_task's check: planPut's refusal, or the answer to a
// definition equal to the stored one (unchanged: nothing to write).
func (w taskWrites) putCheck(p *command.PutTask) (*putPlan, *Result) {
	pl, e := w.planPut(p)
	switch {
	case e != nil:
		return nil, errResult(e)
	case w.err != nil:
		return nil, nil
	case pl.cur != nil && !pl.changed:
		return nil, okResult(model.WriteResult{Name: pl.next.Name, Version: pl.cur.Version, Changed: false})
	}
	return pl, nil
}

// putTask creates or updates a task as planned (putCheck).
func (w taskWrites) putTask(_ *command.PutTask, pl *putPlan) *Result {
	in := pl.next
	if cur := pl.cur; cur != nil {
		if pl.rollout != nil {
			return w.startRollout(&in, cur, pl.rollout)
		}
		// The history's last version is the task's but after a rollout,
		// whose canary version the task may never have had.
		in.Version = lastVersion(w.tx, in.Name) + 1
		in.CreatedAt = cur.CreatedAt
		w.saveTask(&in, OpUpdate)
		if !sameTrigger(&cur.Task.Trigger, &in.Trigger) {
			// A new schedule starts now: fire times of the new schedule
			// before the change were never due.
			w.advanceWatermark(in.Name, w.cmd.Now)
		}
		if cur.Policy.RateLimit != nil || in.Policy.RateLimit != nil {
			w.slots().rateChanged("t" + in.Name) // a changed rate limit applies at once
		}
		w.notes.tasks = append(w.notes.tasks, in.Name)
		return okResult(model.WriteResult{Name: in.Name, Version: in.Version, Changed: true})
	}
	in.Version = lastVersion(w.tx, in.Name) + 1
	in.CreatedAt = model.UnixMilli(w.cmd.Now)
	w.saveTask(&in, OpCreate)
	fresh := taskState{Watermark: w.cmd.Now, Version: in.Version}
	if w.protoAt() >= protoSlots {
		// Attempts of a deleted task of this name still hold their slots.
		fresh.Inflight = w.loadState(in.Name).Inflight
	}
	w.saveState(in.Name, fresh)
	w.notes.tasks = append(w.notes.tasks, in.Name)
	if pl.rollout != nil {
		return w.startRollout(&in, nil, pl.rollout)
	}
	// The answer is remembered with the request id: what it says may
	// change only with the protocol.
	created := w.protoAt() >= protoKeepPaused
	return okResult(model.WriteResult{Name: in.Name, Version: in.Version, Changed: true, Created: created})
}

// versionConflict is the error of a put whose version precondition fails.
func versionConflict(have, want uint64) *model.Error {
	return &model.Error{Code: model.CodeConflict, Field: "version",
		Message: "version precondition failed: task is at version " + uitoa(have) + ", request expected " + uitoa(want)}
}

// PlanPutTask answers what applying c, a put_task command stamped with a
// time, would do now, writing nothing: the refusal a proposal of it would
// get (as Precheck, then apply, decide), or the plan. It is the dry run of
// PUT /v1/tasks/{name}: the definition is normalized and judged exactly as
// the write would be, so "unchanged" means the write would change nothing.
func (q taskReads) PlanPutTask(c *command.Command) (*model.TaskPlan, error) {
	if c.Type != command.TypePutTask {
		return nil, model.Errorf(model.CodeInvalid, "plan of a %s command: only put_task has one", c.Type)
	}
	if e := c.ValidateHeader(); e != nil {
		return nil, e
	}
	var out *model.TaskPlan
	err := q.f.view(func(tx *bolt.Tx) error {
		w := &writer{f: q.f, tx: tx, cmd: c}
		p, e := command.JSONBody[command.PutTask](c)
		if e == nil {
			e = w.tasks().proposePut(p)
		}
		if e != nil {
			return e
		}
		pl, e := w.tasks().planPut(p)
		switch {
		case e != nil:
			return e
		case w.err != nil:
			return w.err
		}
		next := pl.next
		out = &model.TaskPlan{Name: next.Name, Op: model.PlanCreate, Task: &next}
		if pl.cur != nil {
			cur := pl.cur.Task
			out.Version, out.Current, out.Op = cur.Version, &cur, model.PlanUpdate
			if !pl.changed {
				out.Op = model.PlanUnchanged
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// sameSpec reports whether two definitions are equal in every user field.
func sameSpec(a, b *model.Task) bool {
	x, y := *a, *b
	for _, t := range []*model.Task{&x, &y} {
		t.Version, t.CreatedAt, t.UpdatedAt, t.UpdatedBy, t.NextFireTimes = 0, model.Time{}, model.Time{}, "", nil
		t.Runs, t.Completed = 0, ""
	}
	ja, _ := json.Marshal(x)
	jb, _ := json.Marshal(y)
	return bytes.Equal(ja, jb)
}

// namedTask is the check of the commands on a named task: it must exist.
func (w taskWrites) namedTask(r *command.TaskRef) (*storedTask, *Result) { return w.taskCheck(r.Name) }

// taskCheck is existingTask for a check whose apply needs the task but
// whose answer depends only on whether it exists: in a Precheck (w.dry),
// a record that is there is not decoded (a decoding error would leave
// the decision to the apply all the same).
func (w taskWrites) taskCheck(name string) (*storedTask, *Result) {
	if w.dry && w.tx.Bucket(bktTasks).Get([]byte(name)) != nil {
		return nil, nil
	}
	return w.existingTask(name)
}

// existingTask returns the stored task, or the not_found answer.
func (w taskWrites) existingTask(name string) (*storedTask, *Result) {
	t, ok := w.loadTask(name)
	if ok || w.err != nil {
		return t, nil
	}
	return nil, notFoundTask(name)
}

func (w taskWrites) deleteTask(r *command.TaskRef, cur *storedTask) *Result {
	cur.Version = lastVersion(w.tx, r.Name) + 1 // past a canary version (rollout.go)
	if w.protoAt() >= proto8 {
		w.dropRollout(r.Name) // its rollout ends with it
	}
	h, err := json.Marshal(model.TaskVersion{Version: cur.Version, Op: OpDelete, Actor: w.cmd.Actor, Time: model.UnixMilli(w.cmd.Now)})
	if err != nil {
		w.err = err
		return nil
	}
	w.del(bktTasks, []byte(r.Name))
	if w.f != nil {
		// The cached definition goes with the row: what the rest of the
		// delete reads of the task (admitting a queued instance as its
		// rate limiter lets its waiters go) must not depend on whether
		// this replica had it cached, which depends on its batches.
		delete(w.f.taskCache, r.Name)
	}
	w.put(bktHistory, historyKey(r.Name, cur.Version), h)
	w.instances().cancelScheduled(r.Name)
	w.slots().dropLimiter("t" + r.Name)
	busy := w.loadState(r.Name).Inflight
	w.dropState(r.Name)
	if busy > 0 && w.protoAt() >= protoSlots {
		// Its running attempts still hold their slots (slots.go).
		w.saveState(r.Name, taskState{Inflight: busy})
	}
	w.notes.tasks = append(w.notes.tasks, r.Name)
	return okResult(model.WriteResult{Name: r.Name, Version: cur.Version, Changed: true})
}

// setPaused is the apply of pause_task (paused) and resume_task.
func setPaused(paused bool) func(w taskWrites, r *command.TaskRef, cur *storedTask) *Result {
	return func(w taskWrites, r *command.TaskRef, cur *storedTask) *Result { return w.setPaused(paused, r, cur) }
}

func (w taskWrites) setPaused(paused bool, r *command.TaskRef, cur *storedTask) *Result {
	if cur.Paused == paused {
		return okResult(model.WriteResult{Name: r.Name, Version: cur.Version, Changed: false})
	}
	t := cur.Task
	t.Paused = paused
	t.Version = lastVersion(w.tx, r.Name) + 1 // past a canary version (rollout.go)
	if ro := w.activeRollout(r.Name); ro != nil && ro.Stable != 0 {
		ro.Stable = t.Version // a rollout goes on across a pause
		w.saveRollout(ro)
	}
	op := OpResume
	if paused {
		op = OpPause
	}
	w.saveTask(&t, op)
	if !paused {
		// Resuming does not replay the paused span.
		w.advanceWatermark(r.Name, w.cmd.Now)
	}
	w.notes.tasks = append(w.notes.tasks, r.Name)
	return okResult(model.WriteResult{Name: r.Name, Version: t.Version, Changed: true})
}

func (w taskWrites) advanceWatermark(name string, to int64) {
	st := w.loadState(name)
	if to > st.Watermark {
		st.Watermark = to
		w.saveState(name, st)
	}
}

func sameTrigger(a, b *model.Trigger) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return bytes.Equal(ja, jb)
}

func uitoa(v uint64) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + v%10)
		v /= 10
		if v == 0 {
			return string(b[i:])
		}
	}
}

// GetTask returns a copy of the named task.
func (q taskReads) GetTask(name string) (*model.Task, error) {
	var t storedTask
	err := q.f.view(func(tx *bolt.Tx) error {
		v := tx.Bucket(bktTasks).Get([]byte(name))
		if v == nil {
			return taskNotFound(name)
		}
		if err := json.Unmarshal(v, &t); err != nil {
			return err
		}
		t.Runs = taskRuns(tx, name)
		t.Resolved = q.f.resolved(tx, &t.Task)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &t.Task, nil
}

// taskRuns is the number of fires the task's trigger made (Task.Runs).
func taskRuns(tx *bolt.Tx, name string) uint64 {
	return (&writer{tx: tx}).loadState(name).Runs
}

// ListTasks returns tasks in name order that match the filter, at most
// filter.Limit (default 100, max 1000), and the cursor of the next page.
func (q taskReads) ListTasks(filter model.TaskFilter) (*model.TaskList, error) {
	var out *model.TaskList
	err := q.f.view(func(tx *bolt.Tx) (err error) {
		if out, err = listTasks(tx, filter); err != nil {
			return err
		}
		for i := range out.Tasks {
			out.Tasks[i].Resolved = q.f.resolved(tx, &out.Tasks[i])
		}
		return err
	})
	return out, err
}

// listTasks is ListTasks in a read transaction.
func listTasks(tx *bolt.Tx, filter model.TaskFilter) (*model.TaskList, error) {
	limit := filter.Limit
	if limit <= 0 {
		limit = 100
	}
	if limit > 1000 {
		limit = 1000
	}
	out := &model.TaskList{Tasks: []model.Task{}}
	c := tx.Bucket(bktTasks).Cursor()
	var k, v []byte
	if filter.Cursor != "" {
		k, v = c.Seek([]byte(filter.Cursor))
		if k != nil && string(k) == filter.Cursor {
			k, v = c.Next()
		}
	} else {
		k, v = c.First()
	}
	for ; k != nil; k, v = c.Next() {
		var t storedTask
		if err := json.Unmarshal(v, &t); err != nil {
			return nil, err
		}
		if !matches(&t.Task, filter) {
			continue
		}
		if len(out.Tasks) == limit {
			out.NextCursor = out.Tasks[len(out.Tasks)-1].Name
			return out, nil
		}
		t.Runs = taskRuns(tx, t.Name)
		out.Tasks = append(out.Tasks, t.Task)
	}
	return out, nil
}

func matches(t *model.Task, f model.TaskFilter) bool {
	if f.Paused != nil && t.Paused != *f.Paused {
		return false
	}
	for k, v := range f.Labels {
		if got, ok := t.Labels[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// CountTasks returns the number of tasks.
func (q taskReads) CountTasks() int {
	n := 0
	_ = q.f.view(func(tx *bolt.Tx) error {
		n = tx.Bucket(bktTasks).Stats().KeyN
		return nil
	})
	return n
}

// TaskHistory returns every version of the named task, oldest first. A
// deleted task keeps its history.
func (q taskReads) TaskHistory(name string) (*model.TaskHistory, error) {
	h := &model.TaskHistory{Name: name, Versions: []model.TaskVersion{}}
	err := q.f.view(func(tx *bolt.Tx) error {
		prefix := append([]byte(name), 0)
		c := tx.Bucket(bktHistory).Cursor()
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			var tv model.TaskVersion
			if err := json.Unmarshal(v, &tv); err != nil {
				return err
			}
			h.Versions = append(h.Versions, tv)
		}
		if len(h.Versions) == 0 {
			return &model.Error{Code: model.CodeNotFound, Field: "name", Message: "task " + name + " has no history"}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return h, nil
}

// definition returns the task's current definition (cached by version).
func (w taskWrites) definition(task string) (*model.Task, bool) {
	st := w.loadState(task)
	if st.Version == 0 {
		return nil, false
	}
	if w.f != nil {
		if c, ok := w.f.taskCache[task]; ok && c.Version == st.Version {
			return c, true
		}
	}
	t, ok := w.loadTask(task)
	if !ok {
		return nil, false
	}
	if w.f != nil {
		w.f.taskCache[task] = &t.Task
	}
	return &t.Task, true
}

// event appends an event to a task's event log.
func (w taskWrites) event(name string, st *taskState, typ, msg string) {
	st.EventSeq++
	b, err := json.Marshal(model.Event{Time: model.UnixMilli(w.cmd.Now), Type: typ, Node: w.cmd.Node, Actor: w.cmd.Actor, Message: msg})
	if err != nil {
		w.err = err
		return
	}
	w.put(bktTaskEvents, taskInstKey(name, st.EventSeq), b)
}
