package fsm

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"

	bolt "go.etcd.io/bbolt"

	"github.com/ax-scheduler/ax/fsm/command"
	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/trigger"
)

// dueBucketMs groups the due-time index coarsely: keys are (minute, id),
// so a batch of submissions appends at the end of a few minute ranges
// instead of dirtying one random leaf page per instance.
const dueBucketMs = 60_000

// maxTimeMs is the latest time a command may name: the due index keeps
// minutes in 32 bits.
const maxTimeMs = command.MaxTimeMs

var _ [0]struct{} = [maxTimeMs - (1<<32*dueBucketMs - 1)]struct{}{}

func dueKey(dueMs int64, id uint64) []byte {
	k := make([]byte, 12)
	binary.BigEndian.PutUint32(k, uint32(dueMs/dueBucketMs))
	binary.BigEndian.PutUint64(k[4:], id)
	return k
}

func taskInstKey(task string, id uint64) []byte {
	k := make([]byte, 0, len(task)+9)
	k = append(k, task...)
	k = append(k, 0)
	return binary.BigEndian.AppendUint64(k, id)
}

func idemKey(task, key string) []byte {
	k := make([]byte, 0, len(task)+1+len(key))
	k = append(k, task...)
	k = append(k, 0)
	return append(k, key...)
}

// taskState is the per-task scheduling state: the watermark is the latest
// fire time the state machine has accounted for (fired or recorded as
// missed); a fire at or before it is a duplicate and is ignored.
type taskState struct {
	Watermark    int64
	LastInstance uint64
	Misfires     uint64
	EventSeq     uint64
	Version      uint64 // the task's current version (0: no such task)
	Inflight     uint64 // instances holding a concurrency slot
	Blocked      uint64 // BLOCKED instances waiting for a slot
	// Runs counts the instances the trigger created and did not skip
	// (protocol 7: window.go); stored only once it is not zero, so a
	// state that never counted one is byte for byte as before.
	Runs uint64
}

// loadState returns a task's scheduling state. Within one command the
// state is cached and written back once by flushStates, so a command that
// fires thousands of instances of a task updates its record once.
func (w *writer) loadState(name string) taskState {
	if st, ok := w.states[name]; ok {
		return *st
	}
	var s taskState
	v := w.tx.Bucket(bktTaskState).Get([]byte(name))
	if len(v) >= 48 {
		s.Watermark = int64(binary.BigEndian.Uint64(v))
		s.LastInstance = binary.BigEndian.Uint64(v[8:])
		s.Misfires = binary.BigEndian.Uint64(v[16:])
		s.EventSeq = binary.BigEndian.Uint64(v[24:])
		s.Version = binary.BigEndian.Uint64(v[32:])
		s.Inflight = binary.BigEndian.Uint64(v[40:])
	}
	if len(v) >= 56 {
		s.Blocked = binary.BigEndian.Uint64(v[48:])
	}
	if len(v) >= 64 {
		s.Runs = binary.BigEndian.Uint64(v[56:])
	}
	return s
}

func (w *writer) saveState(name string, s taskState) {
	if w.states == nil {
		w.states = map[string]*taskState{}
	}
	w.states[name] = &s
}

func (w *writer) dropState(name string) {
	delete(w.states, name)
	w.del(bktTaskState, []byte(name))
}

// flushStates writes the task states a command changed, in name order.
func (w *writer) flushStates() {
	names := make([]string, 0, len(w.states))
	for n := range w.states {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		s := w.states[n]
		v := make([]byte, 56, 64)
		binary.BigEndian.PutUint64(v, uint64(s.Watermark))
		binary.BigEndian.PutUint64(v[8:], s.LastInstance)
		binary.BigEndian.PutUint64(v[16:], s.Misfires)
		binary.BigEndian.PutUint64(v[24:], s.EventSeq)
		binary.BigEndian.PutUint64(v[32:], s.Version)
		binary.BigEndian.PutUint64(v[40:], s.Inflight)
		binary.BigEndian.PutUint64(v[48:], s.Blocked)
		if s.Runs != 0 {
			v = binary.BigEndian.AppendUint64(v, s.Runs)
		}
		w.put(bktTaskState, []byte(n), v)
	}
	w.states = nil
}

// event appends an event to an instance's event log. Creation,
// firing, start and finish are not stored as events: they are derived from
// the instance's times when it is read.
func (w instanceWrites) event(id uint64, typ, msg string) {
	w.putEvent(id, model.Event{Time: model.UnixMilli(w.cmd.Now), Type: typ, Node: w.cmd.Node, Actor: w.cmd.Actor, Message: msg})
}

// putEvent appends e to an instance's event log.
func (w instanceWrites) putEvent(id uint64, e model.Event) {
	c := w.tx.Bucket(bktInstEvents).Cursor()
	seq := uint32(0)
	prefix := u64key(id)
	if k, _ := c.Seek(append(u64key(id), 0xff, 0xff, 0xff, 0xff)); k != nil {
		if k2, _ := c.Prev(); k2 != nil && bytes.HasPrefix(k2, prefix) {
			seq = binary.BigEndian.Uint32(k2[8:]) + 1
		}
	} else if k2, _ := c.Last(); k2 != nil && bytes.HasPrefix(k2, prefix) {
		seq = binary.BigEndian.Uint32(k2[8:]) + 1
	}
	b, err := json.Marshal(e)
	if err != nil {
		w.err = err
		return
	}
	w.put(bktInstEvents, binary.BigEndian.AppendUint32(prefix, seq), b)
}

// maxEntryInstances is how many instances one log entry can create: an
// instance id is the entry's index << 20 | a sequence number. A variable
// for the tests.
var maxEntryInstances = command.MaxEntryInstances

// command.MaxEntryInstances is this id layout's: 20 bits of sequence.
var _ [0]struct{} = [command.MaxEntryInstances - 1<<20]struct{}{}

// MaxEntryInstances is how many instances the commands of one log entry
// may create together; the leader's group commit packs no more.
func MaxEntryInstances() int { return maxEntryInstances }

// reserve answers an error, before the command writes anything, when the
// entry has no ids left for n more instances. The leader's group commit
// does not pack more than an entry holds, so only a hand-made log meets it.
func (w instanceWrites) reserve(n int) *Result {
	if left := maxEntryInstances - int(w.es.seq); n > left {
		return errResult(model.Errorf(model.CodeUnavailable, "this log entry has room for %d more instances, the command needs up to %d; retry", left, n))
	}
	return nil
}

// newID allocates the next instance id of this log entry.
func (w instanceWrites) newID() (uint64, bool) {
	if int(w.es.seq) >= maxEntryInstances {
		return 0, false
	}
	id := w.index<<20 | uint64(w.es.seq)
	w.es.seq++
	return id, true
}

func (w instanceWrites) putRecord(r *record) {
	w.put(bktInstances, u64key(r.ID), r.encode())
}

func (w instanceWrites) loadRecord(id uint64) (*record, bool) {
	v := w.tx.Bucket(bktInstances).Get(u64key(id))
	if v == nil {
		return nil, false
	}
	r, err := decodeRecord(id, v)
	if err != nil {
		w.err = err
		return nil, false
	}
	return r, true
}

// create stores a new instance and its index entries. countPending says
// whether to count a SCHEDULED one now (Submit counts its batch once). An
// instance without a state yet is about to be admitted, which stores it.
func (w instanceWrites) create(r *record, countPending bool) {
	w.pickCanary(r)
	if r.State != 0 {
		w.putRecord(r)
	}
	if countPending {
		// A lone instance is its own range; Submit indexes its whole
		// batch as one range.
		w.indexRange(r.Task, r.ID, r.ID)
	}
	if r.IdemKey != "" {
		w.put(bktIdem, idemKey(r.Task, r.IdemKey), u64key(r.ID))
	}
	if r.State == code(stateNames, model.StateScheduled) {
		w.put(bktDue, dueKey(r.ScheduledAt, r.ID), u64key(uint64(r.ScheduledAt)))
		if countPending {
			w.pending(1)
		}
		w.notes.ids = append(w.notes.ids, r.ID)
		w.notes.dues = append(w.notes.dues, r.ScheduledAt)
	}
}

// pending adjusts the count of SCHEDULED instances kept in meta (written
// when the entry ends).
func (w instanceWrites) pending(delta int64) { w.es.pending += delta }

// metaU64 reads a u64 from the meta bucket (0 when absent).
func metaU64(tx *bolt.Tx, key []byte) uint64 {
	if v := tx.Bucket(bktMeta).Get(key); len(v) == 8 {
		return binary.BigEndian.Uint64(v)
	}
	return 0
}

// indexRange records that the task's instances include ids first..last.
// The ids a command creates are consecutive, so one entry indexes a whole
// submitted batch instead of one entry per instance.
func (w instanceWrites) indexRange(task string, first, last uint64) {
	w.put(bktTaskInst, taskInstKey(task, first), u64key(last))
}

// eachTaskInstance calls fn for the task's instance ids, oldest first.
func eachTaskInstance(tx *bolt.Tx, task string, fn func(id uint64)) {
	prefix := append([]byte(task), 0)
	c := tx.Bucket(bktTaskInst).Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		first := binary.BigEndian.Uint64(k[len(prefix):])
		last := binary.BigEndian.Uint64(v)
		for id := first; id <= last; id++ {
			fn(id)
		}
	}
}

func (w instanceWrites) existing(task, key string) (uint64, bool) {
	if key == "" {
		return 0, false
	}
	v := w.tx.Bucket(bktIdem).Get(idemKey(task, key))
	if len(v) != 8 {
		return 0, false
	}
	return binary.BigEndian.Uint64(v), true
}

func notFoundTask(name string) *Result { return errResult(taskNotFound(name)) }

// taskNotFound and instanceNotFound are the not_found errors naming the
// missing task or instance.
func taskNotFound(name string) *model.Error {
	return &model.Error{Code: model.CodeNotFound, Field: "name", Message: "task " + name + " not found"}
}

func instanceNotFound(id uint64) *model.Error {
	return &model.Error{Code: model.CodeNotFound, Field: "id", Message: "instance " + model.FormatID(id) + " not found"}
}

// readRecord reads an instance record in a read transaction.
func readRecord(tx *bolt.Tx, id uint64) (*record, error) {
	v := tx.Bucket(bktInstances).Get(u64key(id))
	if v == nil {
		return nil, instanceNotFound(id)
	}
	return decodeRecord(id, v)
}

// submitCheck is submit's check: the task must exist. Its binary state
// carries the version, so the hot path does not decode the task's JSON
// definition.
func (w instanceWrites) submitCheck(s *command.Submit) (taskState, *Result) {
	ts := w.loadState(s.Task)
	if ts.Version == 0 {
		return ts, notFoundTask(s.Task)
	}
	if _, e := w.tasks().instanceParams(s.Task, nil); e != nil {
		return ts, errResult(e) // a required parameter: a submission passes none
	}
	return ts, nil
}

func (w instanceWrites) submit(s *command.Submit, ts taskState) *Result {
	if e := w.reserve(len(s.Items)); e != nil {
		return e
	}
	out := make([]submitted, len(s.Items))
	params, _ := w.tasks().instanceParams(s.Task, nil) // the defaults, checked
	scheduled := code(stateNames, model.StateScheduled)
	delay := code(sourceNames, model.SourceDelay)
	newPending := int64(0)
	var first, last uint64
	for i, it := range s.Items {
		if id, ok := w.existing(s.Task, it.Key); ok {
			r, _ := w.loadRecord(id)
			if w.err != nil {
				return nil
			}
			out[i] = submitted{id: id, due: r.ScheduledAt, state: r.State, existing: true}
			continue
		}
		id, _ := w.newID() // reserved above
		due := w.cmd.Now + it.DelayMs
		if it.AtMs != 0 {
			due = it.AtMs
		}
		r := &record{ID: id, Source: delay, CreatedAt: w.cmd.Now, ScheduledAt: due,
			TaskVersion: ts.Version, Task: s.Task, IdemKey: it.Key, Node: w.cmd.Node, Payload: it.Payload, Params: params,
			Link: w.link(s.Link)}
		if due <= w.cmd.Now {
			r.FiredAt = w.cmd.Now
		} else {
			r.State = scheduled
			newPending++
		}
		w.create(r, false)
		if r.State == 0 {
			w.stats().fired(r)
			w.slots().admit(r)
			w.put(bktMeta, keyLastFired, u64key(id))
		}
		if first == 0 {
			first = id
		}
		last = id
		out[i] = submitted{id: id, due: due, state: r.State}
	}
	if newPending > 0 {
		w.pending(newPending)
	}
	if first != 0 {
		w.indexRange(s.Task, first, last)
	}
	return &Result{Data: encodeSubmitResult(out)}
}

// link is the trace link a created instance records: the command's,
// from protocol 8 (an older replica drops it).
func (w instanceWrites) link(l []byte) []byte {
	if len(l) == 0 || w.protoAt() < proto8 {
		return nil
	}
	return l
}

// triggerCheck is trigger's check: the task must exist, and take the
// params (instanceParams).
func (w instanceWrites) triggerCheck(tr *command.Trigger) (*storedTask, *Result) {
	t, res := w.tasks().taskCheck(tr.Task)
	if res != nil || w.err != nil {
		return t, res
	}
	if _, e := w.tasks().instanceParams(tr.Task, tr.Params); e != nil {
		return nil, errResult(e)
	}
	return t, nil
}

func (w instanceWrites) trigger(tr *command.Trigger, t *storedTask) *Result {
	if id, ok := w.existing(tr.Task, tr.Key); ok {
		r, _ := w.loadRecord(id)
		if w.err != nil {
			return nil
		}
		return okResult(model.Submitted{ID: model.FormatID(id), ScheduledAt: model.UnixMilli(r.ScheduledAt), State: name(stateNames, r.State), Existing: true})
	}
	if e := w.reserve(1); e != nil {
		return e
	}
	id, _ := w.newID()
	src := tr.Source
	if src == "" {
		src = model.SourceAPI
	}
	params, _ := w.tasks().instanceParams(tr.Task, tr.Params) // checked
	r := &record{ID: id, Source: code(sourceNames, src),
		CreatedAt: w.cmd.Now, ScheduledAt: w.cmd.Now, FiredAt: w.cmd.Now, TaskVersion: t.Version,
		Task: tr.Task, IdemKey: tr.Key, Node: w.cmd.Node, Params: params, Date: tr.Date, Link: w.link(tr.Link)}
	w.create(r, true)
	w.stats().fired(r)
	w.slots().admit(r)
	w.put(bktMeta, keyLastFired, u64key(id))
	return okResult(model.Submitted{ID: model.FormatID(id), ScheduledAt: model.UnixMilli(w.cmd.Now), State: name(stateNames, r.State)})
}

// FireResult counts what a Fire did; duplicates and stale fires are
// ignored by design (exactly once per fire time).
type FireResult struct {
	Created   []string `json:"created,omitempty"`
	Fired     int      `json:"fired"`
	Ignored   int      `json:"ignored"`
	Misfires  int64    `json:"misfires,omitempty"`
	Retried   int      `json:"retried,omitempty"`
	StaleTask []string `json:"staleTasks,omitempty"`
}

func sourceOf(triggerType string) string {
	switch triggerType {
	case model.TriggerInterval:
		return model.SourceInterval
	case model.TriggerOnce:
		return model.SourceOnce
	default:
		return model.SourceCron
	}
}

func (w instanceWrites) fire(f *command.Fire) *Result {
	var res FireResult
	for _, tf := range f.Tasks {
		t, ok := w.tasks().loadTask(tf.Task)
		if w.err != nil {
			return nil
		}
		if !ok || t.Version != tf.Version || t.Paused {
			res.Ignored++
			if ok {
				res.StaleTask = append(res.StaleTask, tf.Task)
			}
			continue
		}
		st := w.loadState(tf.Task)
		if tf.Missed > 0 && tf.MissedLast > st.Watermark {
			st.Misfires += uint64(tf.Missed)
			res.Misfires += tf.Missed
			count := strconv.FormatInt(tf.Missed, 10)
			if tf.MissedMore {
				count = "more than " + count
			}
			msg := fmt.Sprintf("%s fire time(s) from %s to %s not fired (catchup %s, window %s)",
				count, model.UnixMilli(tf.MissedFirst).Format(model.TimeLayout), model.UnixMilli(tf.MissedLast).Format(model.TimeLayout),
				t.Policy.Catchup, t.Policy.CatchupWindow.Std())
			if tf.Held != "" {
				msg += "; held back by blackout window " + tf.Held
			}
			w.tasks().event(tf.Task, &st, "misfire", msg)
			w.stats().misfire(tf.Task, st.EventSeq, msg)
			st.Watermark = tf.MissedLast
		}
		windows := w.protoAt() >= protoWindows
		if tf.At != 0 {
			counted := false
			if tf.At <= st.Watermark || (windows && fireRefused(&t.Task, &st, tf.At) != "") {
				res.Ignored++
			} else if why := w.fireRefusedAt(&t.Task, tf.At, tf.Jitter); why != "" {
				// A calendar or window changed after the leader read the
				// task: it reloads it (the fire is still unaccounted for).
				res.Ignored++
				w.notes.tasks = append(w.notes.tasks, tf.Task)
			} else if _, dup := w.existing(tf.Task, tf.Key); dup {
				res.Ignored++
				st.Watermark = tf.At
			} else {
				id, ok := w.newID()
				if !ok {
					res.Ignored++
					continue
				}
				r := &record{ID: id, Source: code(sourceNames, sourceOf(t.Trigger.Type)),
					CreatedAt: w.cmd.Now, ScheduledAt: tf.At, FiredAt: w.cmd.Now, TaskVersion: t.Version,
					Task: tf.Task, IdemKey: tf.Key, Node: w.cmd.Node, Date: tf.Date}
				if len(t.Params) > 0 {
					r.Params, _ = w.tasks().instanceParams(tf.Task, nil) // defaults; put_task refused a required one
				}
				if windows {
					r.Jitter = fireJitter(&t.Task, tf.Jitter)
				}
				r.Moved, r.Held = fireMoved(&t.Task, tf), tf.Held
				w.create(r, true)
				st.Watermark, st.LastInstance = tf.At, id
				w.saveState(tf.Task, st) // admit reads and updates the same record
				w.stats().fired(r)
				w.slots().admit(r)
				st = w.loadState(tf.Task)
				if windows && r.State != stSkipped {
					st.Runs++
					counted = true
				}
				w.put(bktMeta, keyLastFired, u64key(id))
				res.Created = append(res.Created, model.FormatID(id))
			}
			if windows && t.Trigger.MaxRuns > 0 && (!counted || trigger.RunsLeft(t.Trigger.MaxRuns, st.Runs) == 0) {
				// The leader's scheduler counts the fires it proposes: it
				// rereads the count, which the state machine alone keeps
				// exactly, when a fire was not counted, and the task is
				// shown completed when its last run is.
				w.notes.tasks = append(w.notes.tasks, tf.Task)
			}
		}
		w.saveState(tf.Task, st)
	}
	var lastFired uint64
	fired := 0
	for _, id := range f.Instances {
		r, ok := w.loadRecord(id)
		if w.err != nil {
			return nil
		}
		switch {
		case ok && r.State == stScheduled:
			w.del(bktDue, dueKey(r.ScheduledAt, id))
			r.State, r.FiredAt, r.Node = 0, w.cmd.Now, w.cmd.Node
			w.stats().fired(r)
			w.slots().admit(r)
			lastFired = id
			fired++
		case ok && r.State == stRetrying && r.RetryAt <= w.cmd.Now:
			// Its concurrency slot is still held.
			w.setState(r, stReady)
			res.Retried++
		case ok && r.State == stBlocked && r.Flags&flagWaitingRate != 0 && r.RetryAt <= w.cmd.Now:
			// Its turn under a rate limit: its slots are still held.
			w.slots().rateWake(r)
			res.Retried++
		default:
			res.Ignored++
		}
	}
	if lastFired != 0 {
		w.put(bktMeta, keyLastFired, u64key(lastFired))
		w.pending(-int64(fired))
	}
	res.Fired += fired
	res.Fired += len(res.Created)
	return okResult(res)
}

// cancelScheduled cancels the instances of a deleted task that have not
// started: SCHEDULED, READY, BLOCKED, WAITING_APPROVAL (before the run)
// and RETRYING. Running attempts finish normally.
func (w instanceWrites) cancelScheduled(task string) int {
	var ids []uint64
	eachTaskInstance(w.tx, task, func(id uint64) { ids = append(ids, id) })
	n := 0
	for _, id := range ids {
		r, ok := w.loadRecord(id)
		if !ok {
			continue
		}
		switch {
		case r.State == stScheduled, r.State == stReady, r.State == stBlocked, r.State == stRetrying,
			r.State == stApproval && r.Flags&flagMidRunApproval == 0:
		default:
			continue
		}
		w.finish(r, stCanceled)
		w.event(id, "canceled", "task deleted")
		n++
	}
	return n
}

// BackfillResult lists the created instances and counts the skipped times.
type BackfillResult struct {
	Created  []string `json:"created"`
	Existing int      `json:"existing"`
}

// backfillConflict is the error of a backfill planned for another version
// of its task.
func backfillConflict(have, planned uint64) *model.Error {
	return &model.Error{Code: model.CodeConflict, Field: "version",
		Message: fmt.Sprintf("task changed while the backfill was planned (version %d, planned for %d); retry", have, planned)}
}

// backfillCheck is backfill's check: the task must exist, at the
// version the backfill was planned for.
func (w instanceWrites) backfillCheck(b *command.Backfill) (*storedTask, *Result) {
	t, res := w.tasks().existingTask(b.Task)
	if t != nil && t.Version != b.Version {
		return nil, errResult(backfillConflict(t.Version, b.Version))
	}
	if t != nil {
		if _, e := w.tasks().instanceParams(b.Task, nil); e != nil {
			return nil, errResult(e) // a required parameter: a backfill passes none
		}
	}
	return t, res
}

func (w instanceWrites) backfill(b *command.Backfill, t *storedTask) *Result {
	if e := w.reserve(len(b.At)); e != nil {
		return e
	}
	out := BackfillResult{Created: []string{}}
	params, _ := w.tasks().instanceParams(b.Task, nil) // the defaults, checked
	for i, at := range b.At {
		if _, dup := w.existing(b.Task, b.Keys[i]); dup {
			out.Existing++
			continue
		}
		id, _ := w.newID() // reserved above
		r := &record{ID: id, Source: code(sourceNames, model.SourceBackfill), CreatedAt: w.cmd.Now, ScheduledAt: at,
			FiredAt: w.cmd.Now, TaskVersion: t.Version, Task: b.Task, IdemKey: b.Keys[i], Node: w.cmd.Node, Params: params}
		if i < len(b.Dates) {
			r.Date = b.Dates[i]
		}
		w.create(r, true)
		w.stats().fired(r)
		w.slots().admit(r)
		out.Created = append(out.Created, model.FormatID(id))
	}
	return okResult(out)
}
