package fsm

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/ax-scheduler/ax/fsm/command"
	"github.com/ax-scheduler/ax/model"
)

func (r *record) toModel() model.Instance {
	in := model.Instance{
		ID: model.FormatID(r.ID), Task: r.Task, TaskVersion: r.TaskVersion,
		Source: name(sourceNames, r.Source), State: name(stateNames, r.State),
		IdempotencyKey: r.IdemKey, Attempts: int(r.Attempts),
		CreatedAt: model.UnixMilli(r.CreatedAt), ScheduledAt: model.UnixMilli(r.ScheduledAt),
		FiredAt: model.UnixMilli(r.FiredAt), StartedAt: model.UnixMilli(r.StartedAt), FinishedAt: model.UnixMilli(r.FinishedAt),
		Canary: r.Canary,
	}
	if in.IdempotencyKey == "" && r.Source != code(sourceNames, model.SourceDelay) && r.Source != code(sourceNames, model.SourceAPI) {
		in.IdempotencyKey = r.Task + "@" + in.ScheduledAt.UTC().Format(model.TimeLayout)
	}
	in.Executor, in.LastError, in.RetryAt = r.Executor, r.LastError, model.UnixMilli(r.RetryAt)
	if len(r.Params) > 0 {
		_ = json.Unmarshal(r.Params, &in.Params)
	}
	if len(r.Payload) > 0 {
		in.Payload = json.RawMessage(r.Payload)
	}
	if r.Parent != 0 {
		in.Parent = model.FormatID(r.Parent)
		in.Shard = &model.ShardRef{Index: int(r.ShardIndex), Total: int(r.Shards), Executor: r.Pin}
	} else if r.FirstShard != 0 {
		in.Shards = &model.ShardSummary{Total: int(r.Shards)}
	}
	return in
}

// firedEvent is the event of r's firing, derived from its record: the
// latest (a re-run's, whose first firing is a stored event).
func firedEvent(r *record) model.Event {
	msg := firedMessage(r)
	if r.Flags&flagRerun != 0 {
		msg = "re-run"
	}
	return model.Event{Time: model.UnixMilli(r.FiredAt), Type: "fired", Node: r.Node, Message: msg}
}

// firedMessage words an instance's fired event: how late it fired, after
// the time its jitter moved it to if it has one.
func firedMessage(r *record) string {
	late := "late by " + (time.Duration(r.FiredAt-r.ScheduledAt-r.Jitter) * time.Millisecond).String()
	if r.Jitter != 0 {
		late = JitterNote(r.ScheduledAt, r.Jitter) + "; " + late
	}
	if n := CalendarNote(r.Moved, r.Held); n != "" {
		late = n + "; " + late
	}
	return late
}

// CalendarNote says how calendars and blackout windows moved a fire
// ("" when they did not): "moved from 2026-01-31T17:00:00.000Z by its
// calendars", "held back by blackout window freeze".
func CalendarNote(moved int64, held string) string {
	var parts []string
	if moved != 0 {
		parts = append(parts, "moved from "+model.UnixMilli(moved).Format(model.TimeLayout)+" (a day its calendars exclude)")
	}
	if held != "" {
		parts = append(parts, "held back by blackout window "+held+" until it ended")
	}
	return strings.Join(parts, "; ")
}

// JitterNote says how a task's jitter moved a fire: "fire at
// 2026-03-08T10:00:00.000Z moved +37.5s by jitter".
func JitterNote(scheduledAt, jitter int64) string {
	return fmt.Sprintf("fire at %s moved +%s by jitter", model.UnixMilli(scheduledAt).Format(model.TimeLayout),
		time.Duration(jitter)*time.Millisecond)
}

// GetInstance returns an instance with its events, oldest first.
func (q instanceReads) GetInstance(id uint64) (*model.Instance, error) {
	var in model.Instance
	err := q.f.view(func(tx *bolt.Tx) error {
		r, err := readRecord(tx, id)
		if err != nil {
			return err
		}
		in = r.toModel()
		if r.FirstShard != 0 {
			in.Shards = shardSummary(tx, r)
		}
		in.Events = append(in.Events, model.Event{Time: in.CreatedAt, Type: "created", Node: r.Node, Message: "source " + in.Source + ", due " + in.ScheduledAt.Format(model.TimeLayout)})
		if !in.FiredAt.IsZero() {
			in.Events = append(in.Events, firedEvent(r))
		}
		ac := tx.Bucket(bktAttempts).Cursor()
		for k, v := ac.Seek(u64key(id)); k != nil && bytes.HasPrefix(k, u64key(id)); k, v = ac.Next() {
			a, err := decodeAttempt(id, v)
			if err != nil {
				return err
			}
			in.AttemptList = append(in.AttemptList, a)
			in.Events = append(in.Events, model.Event{Time: a.StartedAt, Type: "started",
				Message: fmt.Sprintf("attempt %d on executor %s (%s)", a.Number, a.Executor, a.Host)})
			if !a.EndedAt.IsZero() {
				msg := fmt.Sprintf("attempt %d %s", a.Number, a.Outcome)
				if a.Error != "" {
					msg += ": " + a.Error
				}
				in.Events = append(in.Events, model.Event{Time: a.EndedAt, Type: "attempt_" + a.Outcome, Message: msg})
			}
		}
		if (r.State == stRunning || r.State == stApproval) && r.AttemptStart != 0 && len(in.AttemptList) < int(r.Attempts) {
			a := currentAttempt(r)
			in.AttemptList = append(in.AttemptList, a)
			in.Events = append(in.Events, model.Event{Time: a.StartedAt, Type: "started",
				Message: fmt.Sprintf("attempt %d on executor %s (%s)", a.Number, a.Executor, a.Host)})
		}
		prefix := u64key(id)
		c := tx.Bucket(bktInstEvents).Cursor()
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			var e model.Event
			if err := json.Unmarshal(v, &e); err != nil {
				return err
			}
			in.Events = append(in.Events, e)
		}
		sort.SliceStable(in.Events, func(i, j int) bool { return in.Events[i].Time.Before(in.Events[j].Time.Time) })
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &in, nil
}

// maxScan bounds the records one listing reads, so a selective filter over
// millions of instances returns a cursor instead of stalling.
const maxScan = 200_000

// ListInstances lists instances newest first. With an unfinished state
// (READY, RUNNING, RETRYING, BLOCKED, WAITING_APPROVAL) it walks the
// active index; else with a task the task's index; otherwise all
// instances. Since stops the walk at the first instance created before
// it; Until and Source skip what they do not select.
func (q instanceReads) ListInstances(flt model.InstanceFilter) (*model.InstanceList, error) {
	limit := flt.Limit
	if limit <= 0 {
		limit = 100
	}
	limit = min(limit, 1000)
	var before uint64 = ^uint64(0)
	if flt.Cursor != "" {
		id, err := model.ParseID(flt.Cursor)
		if err != nil {
			return nil, &model.Error{Code: model.CodeInvalid, Field: "cursor", Message: err.(*model.Error).Message}
		}
		before = id
	}
	since, until := flt.Since.Millis(), flt.Until.Millis()
	out := &model.InstanceList{Instances: []model.Instance{}}
	err := q.f.view(func(tx *bolt.Tx) error {
		insts := tx.Bucket(bktInstances)
		var next func() (uint64, bool)
		switch {
		case flt.State != "" && isActive(code(stateNames, flt.State)):
			// Unfinished states are few: walk their index, not the records.
			next = activeNewestFirst(tx, before, code(stateNames, flt.State))
		case flt.Task != "":
			next = taskNewestFirst(tx, flt.Task, before)
		default:
			c := insts.Cursor()
			k, _ := c.Seek(u64key(before))
			if k == nil || binary.BigEndian.Uint64(k) >= before {
				k, _ = c.Prev()
			}
			next = func() (uint64, bool) {
				if k == nil {
					return 0, false
				}
				id := binary.BigEndian.Uint64(k)
				k, _ = c.Prev()
				return id, true
			}
		}
		for scanned := 0; ; scanned++ {
			id, ok := next()
			if !ok {
				return nil
			}
			if scanned >= maxScan || len(out.Instances) == limit {
				out.NextCursor = model.FormatID(id + 1)
				if len(out.Instances) > 0 {
					out.NextCursor = out.Instances[len(out.Instances)-1].ID
				}
				return nil
			}
			v := insts.Get(u64key(id))
			if v == nil {
				continue
			}
			r, err := decodeRecord(id, v)
			if err != nil {
				return err
			}
			if since != 0 && r.CreatedAt < since {
				return nil
			}
			if r.Parent != 0 {
				continue // a shard: listed with its instance (Shards)
			}
			if flt.State != "" && name(stateNames, r.State) != flt.State ||
				flt.Task != "" && r.Task != flt.Task ||
				flt.Source != "" && name(sourceNames, r.Source) != flt.Source ||
				until != 0 && r.CreatedAt >= until {
				continue
			}
			out.Instances = append(out.Instances, r.toModel())
		}
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// TaskEvents returns a task's events (misfires...), oldest first.
func (q taskReads) TaskEvents(task string) (*model.TaskEvents, error) {
	out := &model.TaskEvents{Task: task, Events: []model.Event{}}
	err := q.f.view(func(tx *bolt.Tx) error {
		prefix := append([]byte(task), 0)
		c := tx.Bucket(bktTaskEvents).Cursor()
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			var e model.Event
			if err := json.Unmarshal(v, &e); err != nil {
				return err
			}
			out.Events = append(out.Events, e)
		}
		return nil
	})
	return out, err
}

// TaskSchedule is what the scheduler needs to know about one task.
type TaskSchedule struct {
	Task      model.Task
	Watermark int64 // Unix ms: fire times at or before it are accounted for
}

// TaskSchedule returns one task's definition and watermark.
func (q taskReads) TaskSchedule(name string) (*TaskSchedule, error) {
	var ts *TaskSchedule
	err := q.f.view(func(tx *bolt.Tx) error {
		v := tx.Bucket(bktTasks).Get([]byte(name))
		if v == nil {
			return taskNotFound(name)
		}
		var t storedTask
		if err := json.Unmarshal(v, &t); err != nil {
			return err
		}
		st := (&writer{tx: tx}).loadState(name)
		t.Runs, t.Resolved = st.Runs, q.f.resolved(tx, &t.Task)
		ts = &TaskSchedule{Task: t.Task, Watermark: st.Watermark}
		return nil
	})
	return ts, err
}

// TaskSchedules returns every task with its watermark.
func (q taskReads) TaskSchedules() ([]TaskSchedule, error) {
	var out []TaskSchedule
	err := q.f.view(func(tx *bolt.Tx) error {
		_, err := q.eachSchedule(tx, "", -1, func(ts *TaskSchedule) { out = append(out, *ts) })
		return err
	})
	return out, err
}

// TaskSchedulePage calls fn with the tasks after the name after ("" from
// the first), at most limit of them, in name order, each with its
// watermark, in one read transaction, and returns the name to continue
// after ("" when no task is left). The scheduler loads a term's tasks a
// page at a time: one transaction over 100,000 tasks kept it from firing
// for seconds, and a long read transaction holds up a write that grows
// the file. fn must not keep ts.
func (q taskReads) TaskSchedulePage(after string, limit int, fn func(ts *TaskSchedule)) (string, error) {
	var next string
	err := q.f.view(func(tx *bolt.Tx) error {
		var err error
		next, err = q.eachSchedule(tx, after, limit, fn)
		return err
	})
	return next, err
}

// eachSchedule calls fn with the tasks after the name after ("" from the
// first), at most limit of them (-1: all), each with its watermark, and
// returns the last name if it stopped at limit ("" at the end).
func (q taskReads) eachSchedule(tx *bolt.Tx, after string, limit int, fn func(*TaskSchedule)) (string, error) {
	w := &writer{tx: tx}
	c := tx.Bucket(bktTasks).Cursor()
	k, v := c.First()
	if after != "" {
		if k, v = c.Seek([]byte(after)); k != nil && string(k) == after {
			k, v = c.Next()
		}
	}
	var last []byte // valid until the transaction ends
	for n := 0; k != nil; k, v = c.Next() {
		if n == limit {
			return string(last), nil
		}
		var t storedTask
		if err := json.Unmarshal(v, &t); err != nil {
			return "", err
		}
		st := w.loadState(string(k))
		t.Runs, t.Resolved = st.Runs, q.f.resolved(tx, &t.Task)
		last = k
		fn(&TaskSchedule{Task: t.Task, Watermark: st.Watermark})
		n++
	}
	return "", nil
}

// DueBucket returns the start (Unix ms) of the due-index bucket holding
// ms; the index is scanned a bucket at a time.
func DueBucket(ms int64) int64 { return ms / dueBucketMs * dueBucketMs }

// DueBucketSpan is the width of a due-index bucket.
const DueBucketSpan = dueBucketMs * time.Millisecond

// ScanDue calls fn for every SCHEDULED instance in the due-index buckets
// that start in [fromMs, toMs).
func (q instanceReads) ScanDue(fromMs, toMs int64, fn func(id uint64, dueMs int64)) error {
	return q.f.view(func(tx *bolt.Tx) error {
		c := tx.Bucket(bktDue).Cursor()
		start := make([]byte, 4)
		binary.BigEndian.PutUint32(start, uint32(max(fromMs, 0)/dueBucketMs))
		end := uint32(max(toMs, 0) / dueBucketMs)
		for k, v := c.Seek(start); k != nil && binary.BigEndian.Uint32(k) < end; k, v = c.Next() {
			if len(v) == 8 {
				fn(binary.BigEndian.Uint64(k[4:]), int64(binary.BigEndian.Uint64(v)))
			}
		}
		return nil
	})
}

// ActiveCount returns the number of READY, RUNNING, RETRYING, BLOCKED and
// WAITING_APPROVAL instances (a counter kept with the active index).
func (q instanceReads) ActiveCount() int { return int(q.meta(keyActive)) }

// Pending returns the number of SCHEDULED instances.
func (q instanceReads) Pending() int { return int(q.meta(keyPending)) }

func (q instanceReads) meta(key []byte) uint64 {
	var n uint64
	_ = q.f.view(func(tx *bolt.Tx) error {
		n = metaU64(tx, key)
		return nil
	})
	return n
}

// LastFired returns the id of the instance that became READY last.
func (q instanceReads) LastFired() string {
	if id := q.meta(keyLastFired); id != 0 {
		return model.FormatID(id)
	}
	return ""
}

// Active is one instance in a non-terminal state after firing.
type Active struct {
	ID         uint64
	Task       string
	State      string
	Attempt    int
	Executor   string
	LeaseUntil int64
	// ScheduledAt, FiredAt, RetryAt and AttemptStart (Unix ms) date the
	// instance's fire time and state for the watchdog; MidRun marks a
	// WAITING_APPROVAL entered from RUNNING.
	ScheduledAt  int64
	FiredAt      int64
	RetryAt      int64
	AttemptStart int64
	MidRun       bool
	// Parent, Shards and Pin: InstanceChange's.
	Parent uint64
	Shards int
	Pin    string
	// Canary: the instance runs its task's canary (fsm/rollout.go).
	Canary bool
}

// ActiveInstances calls fn for every READY, RUNNING, RETRYING, BLOCKED
// and WAITING_APPROVAL instance, oldest first (a new leader's dispatcher
// loads its queues from it).
func (q instanceReads) ActiveInstances(fn func(Active)) error {
	return q.f.view(func(tx *bolt.Tx) error {
		insts := tx.Bucket(bktInstances)
		var dec scanDecoder
		var r record
		return tx.Bucket(bktActive).ForEach(func(k, _ []byte) error {
			id := binary.BigEndian.Uint64(k)
			v := insts.Get(k)
			if v == nil {
				return nil
			}
			if err := dec.decode(&r, id, v); err != nil {
				return err
			}
			fn(Active{ID: id, Task: r.Task, State: name(stateNames, r.State), Attempt: int(r.Attempts), Executor: r.Executor, LeaseUntil: r.LeaseUntil,
				ScheduledAt: r.ScheduledAt, FiredAt: r.FiredAt, RetryAt: r.RetryAt, AttemptStart: r.AttemptStart, MidRun: r.Flags&flagMidRunApproval != 0,
				Parent: r.Parent, Shards: int(r.Shards), Pin: r.Pin, Canary: r.Canary})
			return nil
		})
	})
}

// Jobs builds the jobs of leased attempts in one read, decoding each
// task's definition once. Each job is the attempt the lease committed
// (refs, from a LeaseResult), never what the record says later: an
// instance that no longer runs that attempt (it ended, or was leased
// again) or whose task is gone gets no job.
func (q instanceReads) Jobs(refs []command.AttemptRef) ([]model.Job, error) {
	out := make([]model.Job, 0, len(refs))
	err := q.f.view(func(tx *bolt.Tx) error {
		tasks := map[string]*storedTask{}
		for _, ref := range refs {
			v := tx.Bucket(bktInstances).Get(u64key(ref.ID))
			if v == nil {
				continue
			}
			r, err := decodeRecord(ref.ID, v)
			if err != nil {
				return err
			}
			if r.State != stRunning || int(r.Attempts) != ref.Attempt || ref.Attempt < 1 {
				continue
			}
			t, ok := tasks[r.Task]
			if !ok {
				tv := tx.Bucket(bktTasks).Get([]byte(r.Task))
				if tv != nil {
					t = &storedTask{}
					if err := json.Unmarshal(tv, t); err != nil {
						return err
					}
				}
				tasks[r.Task] = t
			}
			if t == nil {
				continue
			}
			def := &t.Task
			if c, ok, err := canaryDefinition(tx, r); err != nil {
				return err
			} else if ok {
				def = c
			}
			in := r.toModel()
			out = append(out, model.Job{InstanceID: in.ID, ExecutionID: in.ID + "-" + strconv.Itoa(ref.Attempt), Task: r.Task,
				Attempt: ref.Attempt, ScheduledAt: in.ScheduledAt, Timezone: t.Trigger.Timezone, Params: in.Params,
				Payload: in.Payload, Action: def.Action, Policy: def.Policy, Shard: in.Shard, Parent: in.Parent,
				Upstream: upstreamResults(tx, r, &in, &def.Policy)})
		}
		return nil
	})
	return out, err
}

// Overlap implements the dispatcher's check of a fenced attempt's late
// report: attempt of instance id ran for ranMs, so it was alive at least
// until its start plus ranMs (it started after the lease's stamp). If
// that is after the next attempt of the instance started, the two ran at
// once: detail says so, naming both ("" otherwise).
func (q instanceReads) Overlap(id uint64, attempt int, ranMs int64) (task, detail string) {
	_ = q.f.view(func(tx *bolt.Tx) error {
		r, err := readRecord(tx, id)
		if err != nil || int(r.Attempts) <= attempt {
			return nil
		}
		task = r.Task
		var this, next model.Attempt
		if v := tx.Bucket(bktAttempts).Get(attemptKey(id, attempt)); v != nil {
			this, _ = decodeAttempt(id, v)
		}
		if v := tx.Bucket(bktAttempts).Get(attemptKey(id, attempt+1)); v != nil {
			next, _ = decodeAttempt(id, v)
		} else if int(r.Attempts) == attempt+1 {
			next = currentAttempt(r)
		}
		if this.StartedAt.IsZero() || next.StartedAt.IsZero() {
			return nil
		}
		alive := this.StartedAt.Add(time.Duration(ranMs) * time.Millisecond)
		if !alive.After(next.StartedAt.Time) {
			return nil
		}
		detail = fmt.Sprintf("attempt %d on %s (started %s, ran %s, so alive until at least %s) and attempt %d on %s (started %s) ran at once for at least %s",
			attempt, this.Executor, this.StartedAt.Format(model.TimeLayout), time.Duration(ranMs)*time.Millisecond, alive.Format(model.TimeLayout),
			attempt+1, next.Executor, next.StartedAt.Format(model.TimeLayout), alive.Sub(next.StartedAt.Time))
		return nil
	})
	return task, detail
}

// Running says which attempt of instance id runs: RUNNING, or waiting
// for a mid-run approval (its lease still held); ok is false otherwise.
func (q instanceReads) Running(id uint64) (attempt int, ok bool) {
	_ = q.f.view(func(tx *bolt.Tx) error {
		r, err := readRecord(tx, id)
		if err == nil && (r.State == stRunning || r.State == stApproval && r.Flags&flagMidRunApproval != 0) {
			attempt, ok = int(r.Attempts), true
		}
		return nil
	})
	return attempt, ok
}

// Refs pairs the instances a lease leased with their attempts.
func (l *LeaseResult) Refs() []command.AttemptRef {
	out := make([]command.AttemptRef, 0, len(l.IDs))
	for i, id := range l.IDs {
		if i < len(l.Attempts) {
			out = append(out, command.AttemptRef{ID: id, Attempt: l.Attempts[i]})
		}
	}
	return out
}

// TaskLabels returns the executor labels a task's instances need.
func (q taskReads) TaskLabels(task string) map[string]string {
	t, err := q.GetTask(task)
	if err != nil {
		return nil
	}
	return t.Policy.ExecutorLabels
}

// Log returns the kept output of an instance's latest attempt (committed
// when the attempt ended).
func (q instanceReads) Log(id uint64) (*model.InstanceLog, error) {
	var out *model.InstanceLog
	err := q.f.view(func(tx *bolt.Tx) error {
		r, err := readRecord(tx, id)
		if err != nil {
			return err
		}
		out = &model.InstanceLog{InstanceID: model.FormatID(id), Attempt: int(r.Attempts), State: name(stateNames, r.State)}
		if lv := tx.Bucket(bktLogs).Get(attemptKey(id, int(r.Attempts))); lv != nil {
			out.Output = string(lv)
		}
		return nil
	})
	return out, err
}

// PendingAlerts returns the FAILED instances whose alerts (notify,
// onFailure) the leader has not recorded as handled, oldest first.
func (q alertReads) PendingAlerts() ([]uint64, error) {
	var out []uint64
	err := q.f.view(func(tx *bolt.Tx) error {
		return tx.Bucket(bktAlerts).ForEach(func(k, _ []byte) error {
			out = append(out, binary.BigEndian.Uint64(k))
			return nil
		})
	})
	return out, err
}

// AlertPending reports whether a failure still waits for its alerts.
func (q alertReads) AlertPending(id uint64) bool {
	pending := false
	_ = q.f.view(func(tx *bolt.Tx) error {
		pending = tx.Bucket(bktAlerts).Get(u64key(id)) != nil
		return nil
	})
	return pending
}

// taskNewestFirst returns an iterator over the ids of a task's instances
// below before, newest first, walking the task's id ranges backwards.
func taskNewestFirst(tx *bolt.Tx, task string, before uint64) func() (uint64, bool) {
	prefix := append([]byte(task), 0)
	c := tx.Bucket(bktTaskInst).Cursor()
	k, v := c.Seek(taskInstKey(task, before))
	if k == nil || !bytes.HasPrefix(k, prefix) || binary.BigEndian.Uint64(k[len(prefix):]) >= before {
		k, v = c.Prev()
	}
	var cur, lo uint64
	have := false
	if k != nil && bytes.HasPrefix(k, prefix) {
		lo = binary.BigEndian.Uint64(k[len(prefix):])
		cur = min(binary.BigEndian.Uint64(v), before-1)
		have = true
	}
	return func() (uint64, bool) {
		for have {
			if cur >= lo {
				id := cur
				if cur == lo {
					have = false
					k, v = c.Prev()
					if k != nil && bytes.HasPrefix(k, prefix) {
						lo = binary.BigEndian.Uint64(k[len(prefix):])
						cur = binary.BigEndian.Uint64(v)
						have = true
					}
				} else {
					cur--
				}
				return id, true
			}
			have = false
		}
		return 0, false
	}
}

// activeNewestFirst returns an iterator over the ids below before of the
// active index whose state byte is st, newest first.
func activeNewestFirst(tx *bolt.Tx, before uint64, st uint8) func() (uint64, bool) {
	c := tx.Bucket(bktActive).Cursor()
	k, v := c.Seek(u64key(before))
	if k == nil || binary.BigEndian.Uint64(k) >= before {
		k, v = c.Prev()
	}
	return func() (uint64, bool) {
		for ; k != nil; k, v = c.Prev() {
			if len(v) == 1 && v[0] == st {
				id := binary.BigEndian.Uint64(k)
				k, v = c.Prev()
				return id, true
			}
		}
		return 0, false
	}
}

// TaskVersions calls fn for every task with its current version,
// watermark and runs (Task.Runs), from the binary task states alone (no
// definition decoded): a caller that keeps definitions by version
// re-reads only the changed.
func (q taskReads) TaskVersions(fn func(name string, version uint64, watermark int64, runs uint64)) error {
	return q.f.view(func(tx *bolt.Tx) error {
		return tx.Bucket(bktTaskState).ForEach(func(k, v []byte) error {
			if len(v) >= 48 {
				if ver := binary.BigEndian.Uint64(v[32:]); ver != 0 {
					var runs uint64
					if len(v) >= 64 {
						runs = binary.BigEndian.Uint64(v[56:])
					}
					fn(string(k), ver, int64(binary.BigEndian.Uint64(v)), runs)
				}
			}
			return nil
		})
	})
}
