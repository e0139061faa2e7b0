package fsm

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/ax-scheduler/ax/fsm/command"
	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/model/calendar"
	"github.com/ax-scheduler/ax/trigger"
)

// Exclusion calendars live in bktCalendars and blackout windows in
// bktWindows (protocol 8), name → the definition's JSON with its version
// and times. Each put or delete bumps its bucket's sequence, which the
// compiled definitions cached for fire and the reads are keyed by.
//
// A trigger may name only calendars that exist, and a calendar a task
// names cannot be deleted, so every stored task's calendars resolve.
// fire refuses a fire at a time its task's calendars exclude, and a fire
// that became due inside a blackout window holding the task at the
// leader's time (the leader does not propose either; a stale proposal
// is ignored, and the task noted so that the leader reloads it).

// defs is the compiled contents of one of the two buckets at a sequence.
type defs[T any] struct {
	seq   uint64
	items []T
}

// compiledCalendar and compiledWindow pair a definition with its
// compiled form.
type compiledCalendar struct {
	def calendar.Calendar
	cal *trigger.Calendar
}

type compiledWindow struct {
	def calendar.Window
	b   *trigger.Blackout
}

// defCache caches the compiled buckets. A cached value is used only
// while its bucket is at the same sequence, so it never changes what an
// apply or a read answers.
type defCache struct {
	cals  atomic.Pointer[defs[compiledCalendar]]
	wins  atomic.Pointer[defs[compiledWindow]]
	pools atomic.Pointer[defs[model.Pool]]
}

// loadDefs returns the compiled contents of bucket bkt in tx, from cache
// when it is at the cached sequence. A definition that no longer
// compiles (a zone database without its timezone) is left out, as if it
// were not there.
func loadDefs[T any](tx *bolt.Tx, bkt []byte, cache *atomic.Pointer[defs[T]], compile func(v []byte) (T, bool)) []T {
	b := tx.Bucket(bkt)
	if b == nil {
		return nil
	}
	seq := b.Sequence()
	if d := cache.Load(); d != nil && d.seq == seq {
		return d.items
	}
	d := &defs[T]{seq: seq}
	_ = b.ForEach(func(_, v []byte) error {
		if it, ok := compile(v); ok {
			d.items = append(d.items, it)
		}
		return nil
	})
	cache.Store(d)
	return d.items
}

func (f *FSM) calendars(tx *bolt.Tx) []compiledCalendar {
	return loadDefs(tx, bktCalendars, &f.defs.cals, func(v []byte) (compiledCalendar, bool) {
		var c compiledCalendar
		if json.Unmarshal(v, &c.def) != nil {
			return c, false
		}
		var err error
		c.cal, err = c.def.Compile()
		return c, err == nil
	})
}

func (f *FSM) windows(tx *bolt.Tx) []compiledWindow {
	return loadDefs(tx, bktWindows, &f.defs.wins, func(v []byte) (compiledWindow, bool) {
		var w compiledWindow
		if json.Unmarshal(v, &w.def) != nil {
			return w, false
		}
		var err error
		w.b, err = w.def.Compile()
		return w, err == nil
	})
}

// resolved returns what t's firing depends on in tx (model.Resolved),
// nil when nothing does.
func (f *FSM) resolved(tx *bolt.Tx, t *model.Task) *model.Resolved {
	var r model.Resolved
	if len(t.Trigger.Calendars) > 0 {
		cals := f.calendars(tx)
		for _, n := range t.Trigger.Calendars {
			if i := slices.IndexFunc(cals, func(c compiledCalendar) bool { return c.def.Name == n }); i >= 0 {
				r.Calendars = append(r.Calendars, cals[i].cal)
			}
		}
	}
	for _, w := range f.windows(tx) {
		if w.def.Matches(t.Labels) {
			r.Blackouts = append(r.Blackouts, w.b)
		}
	}
	if len(r.Calendars) == 0 && len(r.Blackouts) == 0 {
		return nil
	}
	return &r
}

// fireRefusedAt says why fire ignores a fire of t at at, due at
// at+jitter, at the leader's time now ("" when it may fire): a calendar
// of its trigger excludes at, or a blackout window holds t at now and
// held it since before the fire was due.
func (w instanceWrites) fireRefusedAt(t *model.Task, at, jitter int64) string {
	r := w.f.resolved(w.tx, t)
	if r == nil {
		return ""
	}
	if c := trigger.Excluding(r.Calendars, time.UnixMilli(at)); c != nil {
		return "excluded by calendar " + c.Name()
	}
	if h, held := trigger.Held(r.Blackouts, time.UnixMilli(w.cmd.Now)); held && h.From.UnixMilli() <= at+jitter {
		return "held back by window " + h.Window
	}
	return ""
}

// putCalendarCheck is put_calendar's check: IfVersion, when set, must be
// the stored version.
func (w calendarWrites) putCalendarCheck(p *command.PutCalendar) (*calendar.Calendar, *Result) {
	return putCheck[calendar.Calendar](w.tx, bktCalendars, "calendar", p.Calendar.Name, p.IfVersion)
}

func (w calendarWrites) putCalendar(p *command.PutCalendar, cur *calendar.Calendar) *Result {
	c := p.Calendar
	c.Meta = w.stamp(metaOf(cur))
	if !w.putDef(bktCalendars, c.Name, &c) {
		return nil
	}
	w.noteTasks(func(t *model.Task) bool { return slices.Contains(t.Trigger.Calendars, c.Name) })
	return okResult(&c)
}

// namedCalendar is delete_calendar's check: the calendar exists and no
// task's trigger names it.
func (w calendarWrites) namedCalendar(ref *command.TaskRef) (*calendar.Calendar, *Result) {
	cur, ok := readDef[calendar.Calendar](w.tx, bktCalendars, ref.Name)
	if !ok {
		return nil, errResult(&model.Error{Code: model.CodeNotFound, Field: "name", Message: "no calendar named " + ref.Name})
	}
	if users := calendarUsers(w.tx, ref.Name); len(users) > 0 {
		return nil, errResult(&model.Error{Code: model.CodePrecondition, Field: "name",
			Message: fmt.Sprintf("calendar %s is used by task(s) %s: remove it from their trigger.calendars first", ref.Name, strings.Join(users, ", "))})
	}
	return cur, nil
}

func (w calendarWrites) deleteCalendar(ref *command.TaskRef, cur *calendar.Calendar) *Result {
	w.del(bktCalendars, []byte(ref.Name))
	w.bump(bktCalendars)
	return okResult(cur)
}

// putWindowCheck is put_window's check (IfVersion).
func (w calendarWrites) putWindowCheck(p *command.PutWindow) (*calendar.Window, *Result) {
	return putCheck[calendar.Window](w.tx, bktWindows, "window", p.Window.Name, p.IfVersion)
}

func (w calendarWrites) putWindow(p *command.PutWindow, cur *calendar.Window) *Result {
	win := p.Window
	win.Meta = w.stamp(metaOf(cur))
	if !w.putDef(bktWindows, win.Name, &win) {
		return nil
	}
	// The tasks it held or holds now reload their timers.
	w.noteTasks(func(t *model.Task) bool { return win.Matches(t.Labels) || cur != nil && cur.Matches(t.Labels) })
	return okResult(&win)
}

// stamped is a stored definition that carries the server's fields
// (calendar.Meta): a calendar or a window.
type stamped[T any] interface {
	*T
	Stored() *calendar.Meta
}

// putCheck reads the definition of kind that a put of name replaces (nil:
// none), and refuses the put, a conflict, when ifVersion is set and the
// stored definition is not at that version.
func putCheck[T any, P stamped[T]](tx *bolt.Tx, bkt []byte, kind, name string, ifVersion uint64) (P, *Result) {
	cur, ok := readDef[T](tx, bkt, name)
	if ifVersion != 0 && (!ok || P(cur).Stored().Version != ifVersion) {
		return nil, errResult(&model.Error{Code: model.CodeConflict, Field: "version", Message: kind + " " + name + " changed since"})
	}
	return cur, nil
}

// metaOf returns the server's fields of a stored definition, nil for none.
func metaOf[T any, P stamped[T]](cur P) *calendar.Meta {
	if cur == nil {
		return nil
	}
	return cur.Stored()
}

// namedWindow is delete_window's check: the window exists.
func (w calendarWrites) namedWindow(ref *command.TaskRef) (*calendar.Window, *Result) {
	cur, ok := readWindow(w.tx, ref.Name)
	if !ok {
		return nil, errResult(&model.Error{Code: model.CodeNotFound, Field: "name", Message: "no window named " + ref.Name})
	}
	return cur, nil
}

func (w calendarWrites) deleteWindow(ref *command.TaskRef, cur *calendar.Window) *Result {
	w.del(bktWindows, []byte(ref.Name))
	w.bump(bktWindows)
	w.noteTasks(func(t *model.Task) bool { return cur.Matches(t.Labels) })
	return okResult(cur)
}

// stamp returns what the server sets on a definition put over one with
// meta cur (nil: a new one).
func (w calendarWrites) stamp(cur *calendar.Meta) calendar.Meta {
	now := model.UnixMilli(w.cmd.Now)
	m := calendar.Meta{Version: 1, CreatedAt: &now, UpdatedAt: &now, UpdatedBy: w.cmd.Actor}
	if cur != nil {
		m.Version = cur.Version + 1
		if cur.CreatedAt != nil {
			created := *cur.CreatedAt
			m.CreatedAt = &created
		}
	}
	return m
}

// putDef stores a definition and bumps its bucket's sequence.
func (w calendarWrites) putDef(bkt []byte, name string, v any) bool {
	b, err := json.Marshal(v)
	if err != nil {
		w.err = err
		return false
	}
	w.put(bkt, []byte(name), b)
	w.bump(bkt)
	return w.err == nil
}

// bump advances a bucket's sequence: the cached compiled contents are
// stale.
func (w calendarWrites) bump(bkt []byte) {
	if w.err == nil {
		_, w.err = w.tx.Bucket(bkt).NextSequence()
	}
}

// noteTasks tells the scheduler that the tasks match selects changed:
// what they fire depends on the definition just written.
func (w calendarWrites) noteTasks(match func(t *model.Task) bool) {
	_ = w.tx.Bucket(bktTasks).ForEach(func(k, v []byte) error {
		var t storedTask
		if json.Unmarshal(v, &t) == nil && !t.Deleted && match(&t.Task) {
			w.notes.tasks = append(w.notes.tasks, string(k))
		}
		return nil
	})
}

// calendarUsers lists the tasks whose trigger names calendar name.
func calendarUsers(tx *bolt.Tx, name string) []string {
	var out []string
	_ = tx.Bucket(bktTasks).ForEach(func(k, v []byte) error {
		var t storedTask
		if json.Unmarshal(v, &t) == nil && !t.Deleted && slices.Contains(t.Trigger.Calendars, name) {
			out = append(out, string(k))
		}
		return nil
	})
	return out
}

// readDef reads the definition stored under name in bkt (a calendar, a
// window, a pool); false when there is none or it does not decode.
func readDef[T any](tx *bolt.Tx, bkt []byte, name string) (*T, bool) {
	v := tx.Bucket(bkt).Get([]byte(name))
	if v == nil {
		return nil, false
	}
	d := new(T)
	if json.Unmarshal(v, d) != nil {
		return nil, false
	}
	return d, true
}

func readWindow(tx *bolt.Tx, name string) (*calendar.Window, bool) {
	return readDef[calendar.Window](tx, bktWindows, name)
}

// calendarsRefusal is put_task's check of trigger.calendars: each must
// exist.
func calendarsRefusal(tx *bolt.Tx, t *model.Task) *model.Error {
	b := tx.Bucket(bktCalendars)
	for i, n := range t.Trigger.Calendars {
		if b == nil || b.Get([]byte(n)) == nil {
			return &model.Error{Code: model.CodeInvalid, Field: fmt.Sprintf("trigger.calendars[%d]", i),
				Message: "no calendar named " + n + ": put it first (PUT /v1/calendars/" + n + ")"}
		}
	}
	return nil
}

// Calendars lists the calendars by name, each with the tasks that name
// it.
func (q taskReads) Calendars() (*calendar.List, error) {
	out := &calendar.List{Calendars: []calendar.Calendar{}}
	err := q.f.view(func(tx *bolt.Tx) error {
		for _, c := range q.f.calendars(tx) {
			d := c.def
			d.UsedBy = calendarUsers(tx, d.Name)
			out.Calendars = append(out.Calendars, d)
		}
		return nil
	})
	return out, err
}

// Calendar returns one calendar with the tasks that name it.
func (q taskReads) Calendar(name string) (*calendar.Calendar, error) {
	var out *calendar.Calendar
	err := q.f.view(func(tx *bolt.Tx) error {
		c, ok := readDef[calendar.Calendar](tx, bktCalendars, name)
		if !ok {
			return &model.Error{Code: model.CodeNotFound, Field: "name", Message: "no calendar named " + name}
		}
		c.UsedBy, out = calendarUsers(tx, name), c
		return nil
	})
	return out, err
}

// Windows lists the blackout windows by name, without their status.
func (q taskReads) Windows() ([]calendar.Window, error) {
	out := []calendar.Window{}
	err := q.f.view(func(tx *bolt.Tx) error {
		for _, w := range q.f.windows(tx) {
			out = append(out, w.def)
		}
		return nil
	})
	return out, err
}

// Window returns one blackout window, without its status.
func (q taskReads) Window(name string) (*calendar.Window, error) {
	var out *calendar.Window
	err := q.f.view(func(tx *bolt.Tx) error {
		w, ok := readWindow(tx, name)
		if !ok {
			return &model.Error{Code: model.CodeNotFound, Field: "name", Message: "no window named " + name}
		}
		out = w
		return nil
	})
	return out, err
}

// fireMoved is the moved-from time a fire keeps on its instance: what
// the leader says, when t's trigger moves excluded fires and the move is
// one it could make (else 0).
func fireMoved(t *model.Task, tf command.TaskFire) int64 {
	switch m := tf.Moved; {
	case m == 0 || m == tf.At || len(t.Trigger.Calendars) == 0:
		return 0
	case t.Trigger.OnExcluded == trigger.OnExcludedNext && m < tf.At && tf.At-m <= shiftMs,
		t.Trigger.OnExcluded == trigger.OnExcludedPrevious && m > tf.At && m-tf.At <= shiftMs:
		return m
	}
	return 0
}

// shiftMs is how far a calendar moves a fire at most (trigger.MaxShift
// days and a day for DST).
const shiftMs = (trigger.MaxShift + 1) * 24 * 3600 * 1000
