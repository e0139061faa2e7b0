package dispatch

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/ax-scheduler/ax/model"
)

// route is what an executor needs to run a task's instances: the action
// kind (and sdk handler) and the task's executorLabels.
type route struct {
	kind    string // model.ActionShell, ActionHTTP, ActionSDK; "" for anyone (the task is gone)
	handler string
	labels  map[string]string
	// priority is the tasks' policy.priority: a queue holds one
	// priority, so its head is its best (its oldest, aged the most).
	priority int
	// pin is the one executor a broadcast shard's queue is for ("": any).
	pin string
	key string // kind, handler, labels, priority and pin, as a map key
	// sharded says the task's instances fan out into shards
	// (policy.shards or broadcast): the dispatcher proposes the fan-out
	// instead of leasing them. Not part of the key: shards are queued.
	sharded bool
}

// routeOf is the route of a task (nil: the task is gone or unreadable,
// and any executor may lease its instances, as before routing existed;
// the state machine cancels a deleted task's instances anyway).
func routeOf(t *model.Task) route {
	if t == nil {
		return route{}
	}
	r := route{kind: t.Action.Type, labels: t.Policy.ExecutorLabels, priority: t.Policy.Priority, sharded: t.Policy.Sharded()}
	if r.kind == model.ActionSDK {
		r.handler = t.Action.Handler
	}
	var b strings.Builder
	b.WriteString(r.kind + "\x00" + r.handler)
	if r.priority != 0 {
		b.WriteString("\x00priority=" + strconv.Itoa(r.priority))
	}
	keys := make([]string, 0, len(r.labels))
	for k := range r.labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		b.WriteString("\x00" + k + "=" + r.labels[k])
	}
	r.key = b.String()
	return r
}

// pinned is r for the broadcast shards pinned to executor.
func (r route) pinned(executor string) route {
	r.pin, r.key = executor, r.key+"\x00@"+executor
	return r
}

// servedBy reports whether executor, with capabilities c (nil: an old
// executor, shell and http) and labels, can run the route's instances.
func (r *route) servedBy(executor string, c *model.Capabilities, labels map[string]string) bool {
	if r.pin != "" && r.pin != executor {
		return false
	}
	if r.kind != "" && !c.Runs(&model.Action{Type: r.kind, Handler: r.handler}) {
		return false
	}
	return model.LabelsMatch(r.labels, labels)
}

// labelString is the route's executor labels as "k=v,k2=v2", sorted.
func (r *route) labelString() string {
	keys := make([]string, 0, len(r.labels))
	for k, v := range r.labels {
		keys = append(keys, k+"="+v)
	}
	sort.Strings(keys)
	return strings.Join(keys, ",")
}

// String says what the route needs, for humans.
func (r *route) String() string {
	var s string
	switch r.kind {
	case model.ActionSDK:
		s = fmt.Sprintf("the sdk handler %q", r.handler)
	case "":
		s = "nothing in particular"
	default:
		s = "running " + r.kind + " actions"
	}
	if len(r.labels) > 0 {
		keys := make([]string, 0, len(r.labels))
		for k := range r.labels {
			keys = append(keys, k+"="+r.labels[k])
		}
		sort.Strings(keys)
		s += " and the labels " + strings.Join(keys, ",")
	}
	return s
}

// queued is one READY instance in a queue; seq orders all queues (FIFO
// by the time the dispatcher learned the instance was READY). An item
// whose seq is not its instance's current entry's is stale.
type queued struct {
	id    uint64
	seq   uint64
	since int64 // when it became READY (readyEntry.since), for aging
}

// queue holds the READY instances of one route, oldest first.
type queue struct {
	route route
	items []queued
	n     int // current (not stale) items: the route's READY depth
	// noted is the seq up to which items were looked at for the "no
	// executor can run it" event.
	noted uint64
}

// readyEntry is what the index knows of one READY instance.
type readyEntry struct {
	task string
	seq  uint64
	// since is when it became READY (Unix ms): the committed change's
	// time, or when this dispatcher learned of it if that is unknown
	// (loaded when the term started; then loaded is set).
	since  int64
	q      *queue
	noted  bool
	loaded bool
}

// readyIndex holds the READY instances by route, so that a poll looks only
// at the queues its executor can serve (never at every READY instance)
// and picks from them oldest first. Not safe for concurrent use: the
// dispatcher holds its lock.
type readyIndex struct {
	entries map[uint64]*readyEntry
	pins    map[uint64]string // broadcast shards' executors
	queues  map[string]*queue
	routes  map[string]route // task -> route (cache)
	dirty   map[string]bool  // tasks whose definition changed
	seq     uint64
	lookup  func(task string) route
	// aging is how long (ms) an instance waits READY for its priority to
	// rise by one (0: no aging).
	aging int64
}

func newReadyIndex(lookup func(string) route) *readyIndex {
	return &readyIndex{entries: map[uint64]*readyEntry{}, pins: map[uint64]string{}, queues: map[string]*queue{},
		routes: map[string]route{}, dirty: map[string]bool{}, lookup: lookup}
}

func (x *readyIndex) len() int { return len(x.entries) }

// route returns a task's route, cached until its definition changes.
func (x *readyIndex) route(task string) route {
	if x.dirty[task] {
		x.reroute(task)
	}
	r, ok := x.routes[task]
	if !ok {
		r = x.lookup(task)
		x.routes[task] = r
	}
	return r
}

// add records that id became READY at at (Unix ms; the committed
// change's time) or, when at is 0 (unknown), at now; an id already READY
// keeps its place. A broadcast shard is queued for its executor (pin).
func (x *readyIndex) add(id uint64, task, pin string, now, at int64) bool {
	if _, ok := x.entries[id]; ok {
		return false
	}
	r := x.route(task)
	if pin != "" {
		r = r.pinned(pin)
		x.pins[id] = pin
	}
	q := x.queues[r.key]
	if q == nil {
		q = &queue{route: r}
		x.queues[r.key] = q
	}
	x.seq++
	e := &readyEntry{task: task, seq: x.seq, since: at, q: q}
	if at == 0 {
		e.since, e.loaded = now, true
	}
	x.entries[id] = e
	q.items = append(q.items, queued{id: id, seq: x.seq, since: e.since})
	q.n++
	return true
}

// remove forgets id (it left READY) and returns its entry (nil if it was
// not READY); its queue item goes stale.
func (x *readyIndex) remove(id uint64) *readyEntry {
	e := x.entries[id]
	if e != nil {
		e.q.n--
		delete(x.entries, id)
		delete(x.pins, id)
	}
	return e
}

func (x *readyIndex) current(it queued) bool {
	e := x.entries[it.id]
	return e != nil && e.seq == it.seq
}

// trim drops stale items from the front of q, and q itself once empty.
func (x *readyIndex) trim(q *queue) bool {
	i := 0
	for i < len(q.items) && !x.current(q.items[i]) {
		i++
	}
	q.items = q.items[i:]
	if len(q.items) == 0 {
		delete(x.queues, q.route.key)
		return false
	}
	return true
}

// taskChanged marks a task's route for a fresh look before it is used.
func (x *readyIndex) taskChanged(task string) { x.dirty[task] = true }

// reroute reads a changed task's route again and moves its READY
// instances to the right queue if it changed.
func (x *readyIndex) reroute(task string) {
	delete(x.dirty, task)
	old, had := x.routes[task]
	r := x.lookup(task)
	x.routes[task] = r
	if !had || old.key == r.key {
		return
	}
	// The task's queues: the plain one, and its broadcast shards' pinned
	// ones.
	var froms []*queue
	for _, q := range x.queues {
		if q.route.key == old.key || q.route.pin != "" && q.route.key == old.pinned(q.route.pin).key {
			froms = append(froms, q)
		}
	}
	slices.SortFunc(froms, func(a, b *queue) int { return cmp.Compare(a.route.key, b.route.key) })
	for _, from := range froms {
		var keep, moved []queued
		for _, it := range from.items {
			if e := x.entries[it.id]; e != nil && e.seq == it.seq && e.task == task {
				moved = append(moved, it)
			} else {
				keep = append(keep, it)
			}
		}
		if len(moved) == 0 {
			continue
		}
		from.items = keep
		from.n -= len(moved)
		nr := r
		if from.route.pin != "" {
			nr = r.pinned(from.route.pin)
		}
		to := x.queues[nr.key]
		if to == nil {
			to = &queue{route: nr}
			x.queues[nr.key] = to
		}
		to.items = append(to.items, moved...)
		to.n += len(moved)
		slices.SortFunc(to.items, func(a, b queued) int { return cmp.Compare(a.seq, b.seq) })
		for _, it := range moved {
			x.entries[it.id].q = to
		}
	}
}

// refresh rereads every changed task's route.
func (x *readyIndex) refresh() {
	for task := range x.dirty {
		x.reroute(task)
	}
}

// pick returns up to n READY ids from the queues an executor with
// capabilities c and labels serves, skipping those skip says are taken:
// the highest effective priority first (policy.priority plus one for
// each aging step, at now in Unix ms, the instance has waited READY),
// the oldest first among equals, so without priorities oldest first. A
// queue holds one priority in FIFO order, so only its head competes. It
// costs the number of queues plus what it picks and skips, never a scan
// of all READY instances.
func (x *readyIndex) pick(executor string, c *model.Capabilities, labels map[string]string, n int, now int64, skip func(uint64) bool, took func(uint64)) []uint64 {
	x.refresh()
	type cursor struct {
		q *queue
		i int
	}
	var cs []cursor
	for _, q := range x.queues {
		if x.trim(q) && q.route.servedBy(executor, c, labels) {
			cs = append(cs, cursor{q: q})
		}
	}
	var out []uint64
	for len(out) < n && len(cs) > 0 {
		best := -1
		for k := 0; k < len(cs); k++ {
			c := &cs[k]
			for c.i < len(c.q.items) && (!x.current(c.q.items[c.i]) || skip(c.q.items[c.i].id)) {
				c.i++
			}
			if c.i == len(c.q.items) {
				cs[k] = cs[len(cs)-1]
				cs = cs[:len(cs)-1]
				k--
				continue
			}
			if best < 0 || x.before(c.q, c.q.items[c.i], cs[best].q, cs[best].q.items[cs[best].i], now) {
				best = k
			}
		}
		if best < 0 {
			break
		}
		c := &cs[best]
		out = append(out, c.q.items[c.i].id)
		if took != nil {
			took(c.q.items[c.i].id)
		}
		c.i++
	}
	return out
}

// before reports whether item a of queue qa goes before item b of qb at
// now: a higher effective priority, else the older.
func (x *readyIndex) before(qa *queue, a queued, qb *queue, b queued, now int64) bool {
	if qa.route.priority == qb.route.priority {
		return a.seq < b.seq
	}
	pa, pb := x.effective(qa, a, now), x.effective(qb, b, now)
	if pa != pb {
		return pa > pb
	}
	return a.seq < b.seq
}

// effective is an item's priority at now: its route's plus one for each
// aging step it has waited READY.
func (x *readyIndex) effective(q *queue, it queued, now int64) int64 {
	p := int64(q.route.priority)
	if x.aging > 0 && now > it.since {
		p += (now - it.since) / x.aging
	}
	return p
}

// unrunnable collects, per queue that no executor serves (served says),
// the instances READY since before cutoff (Unix ms) not yet noted, and
// marks them noted. Each item is looked at once per queue.
func (x *readyIndex) unrunnable(cutoff int64, served func(*route) bool) map[*queue][]uint64 {
	x.refresh()
	out := map[*queue][]uint64{}
	for _, q := range x.queues {
		if !x.trim(q) || q.route.kind == "" || served(&q.route) {
			continue
		}
		i := sort.Search(len(q.items), func(i int) bool { return q.items[i].seq > q.noted })
		for ; i < len(q.items); i++ {
			it := q.items[i]
			e := x.entries[it.id]
			if e == nil || e.seq != it.seq {
				continue
			}
			if e.since > cutoff {
				break
			}
			q.noted = it.seq
			if !e.noted {
				e.noted = true
				out[q] = append(out[q], it.id)
			}
		}
	}
	return out
}

// unnote lets ids be noted again (their event could not be recorded).
func (x *readyIndex) unnote(ids []uint64) {
	for _, id := range ids {
		if e := x.entries[id]; e != nil {
			e.noted = false
			if e.q != nil && e.seq <= e.q.noted {
				e.q.noted = e.seq - 1
			}
		}
	}
}
