package dispatch

import (
	"context"
	"errors"
	"sort"
	"time"

	"github.com/ax-scheduler/ax/fsm"
	"github.com/ax-scheduler/ax/fsm/command"
	"github.com/ax-scheduler/ax/model"
)

// Sharded execution on the leader (fsm/shards.go has the rules): a READY
// instance of a sharded task is not leased but fanned out (the shard
// command: policy.shards' count, or a broadcast's executors); its shards
// are queued like any READY instance, a broadcast shard for its executor
// only, and spread (spreader): an executor takes at most its share of an
// instance's unfinished shards, divided evenly among the executors with
// free slots that could run them, so while free executors remain no
// executor runs two shards of one instance, and 100 shards over 4 idle
// executors go 25 to each. An executor that stops polling and
// heartbeating for executorTTL has left: its broadcast shards that wait
// to run end FAILED (shardsLeft).

// shardState is what the dispatcher keeps of sharded execution, under
// its lock.
type shardState struct {
	fan     map[uint64]*fanItem       // READY sharded instances to fan out
	parent  map[uint64]uint64         // READY or running shard -> its instance
	active  map[uint64]int            // instance -> its shards in parent
	on      map[uint64]string         // running shard -> the executor counted in running
	running map[uint64]map[string]int // instance -> executor -> its shards running there
	pinned  map[uint64]pin            // READY broadcast shards
	waiting map[string]*pollWait      // executors waiting in a poll now
	polled  map[string]time.Time      // executor -> when its latest poll ended
	kick    chan struct{}             // a fan-out is due
}

type fanItem struct {
	task   string
	canary bool      // a canary instance: its rollout's canary says how it fans out
	shards int       // the count it had (a re-run), 0 before its first fan-out
	next   time.Time // not before (after a refusal to retry)
	noted  bool      // "no executor to broadcast to" logged
}

type pin struct {
	parent   uint64
	executor string
}

type pollWait struct {
	caps   *model.Capabilities
	labels map[string]string
	n      int // its polls waiting
}

func newShardState() shardState {
	return shardState{fan: map[uint64]*fanItem{}, parent: map[uint64]uint64{}, active: map[uint64]int{}, on: map[uint64]string{},
		running: map[uint64]map[string]int{}, pinned: map[uint64]pin{}, waiting: map[string]*pollWait{}, polled: map[string]time.Time{},
		kick: make(chan struct{}, 1)}
}

// shardChanged keeps the shard state in step with a change, under d's
// lock, and reports whether c is a sharded instance to fan out (which
// is not queued).
func (d *Dispatcher) shardChanged(c fsm.InstanceChange) bool {
	s := &d.shards
	if c.Parent == 0 {
		if c.State == model.StateReady && (c.Shards > 0 || d.ready.route(routeName(c.Task, c.Canary)).sharded) {
			s.fan[c.ID] = &fanItem{task: c.Task, canary: c.Canary, shards: c.Shards}
			select {
			case s.kick <- struct{}{}:
			default:
			}
			return true
		}
		delete(s.fan, c.ID)
		return false
	}
	switch c.State {
	case model.StateReady:
		s.track(c.ID, c.Parent, true)
		if c.Pin != "" {
			s.pinned[c.ID] = pin{parent: c.Parent, executor: c.Pin}
		}
		s.count(c.ID, c.Parent, "")
	case model.StateRunning, model.StateWaitingApproval:
		s.track(c.ID, c.Parent, true)
		delete(s.pinned, c.ID)
		s.count(c.ID, c.Parent, c.Executor)
	default:
		s.track(c.ID, c.Parent, false)
		delete(s.pinned, c.ID)
		s.count(c.ID, c.Parent, "")
	}
	return false
}

// track records whether shard id of instance parent is READY or running
// (on), keeping the instance's count of such shards.
func (s *shardState) track(id, parent uint64, on bool) {
	_, had := s.parent[id]
	switch {
	case on && !had:
		s.parent[id] = parent
		s.active[parent]++
	case !on && had:
		delete(s.parent, id)
		if s.active[parent]--; s.active[parent] <= 0 {
			delete(s.active, parent)
		}
	}
}

// count records that shard id of instance parent runs on executor (""
// for none).
func (s *shardState) count(id, parent uint64, executor string) {
	old := s.on[id]
	if old == executor {
		return
	}
	if old != "" {
		if m := s.running[parent]; m != nil {
			if m[old]--; m[old] <= 0 {
				delete(m, old)
			}
			if len(m) == 0 {
				delete(s.running, parent)
			}
		}
		delete(s.on, id)
	}
	if executor != "" {
		m := s.running[parent]
		if m == nil {
			m = map[string]int{}
			s.running[parent] = m
		}
		m[executor]++
		s.on[id] = executor
	}
}

// polling records that req's executor waits in a poll (on) or no longer,
// and when it was last seen polling.
func (d *Dispatcher) polling(req model.PollRequest, on bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	w := d.shards.waiting[req.Executor]
	d.shards.polled[req.Executor] = d.cfg.Now()
	switch {
	case on && w == nil:
		d.shards.waiting[req.Executor] = &pollWait{caps: req.Capabilities, labels: req.Labels, n: 1}
	case on:
		w.caps, w.labels, w.n = req.Capabilities, req.Labels, w.n+1
	case w != nil:
		if w.n--; w.n <= 0 {
			delete(d.shards.waiting, req.Executor)
		}
	}
}

// spreader is one pick's view of the shards it hands executor.
type spreader struct {
	d        *Dispatcher
	executor string
	picked   map[uint64]int // instance -> its shards this pick took
	free     map[uint64]int // instance -> executors with free slots that may run its shards (counted once)
}

func (d *Dispatcher) spread(executor string) *spreader {
	return &spreader{d: d, executor: executor}
}

// freshPoll is how recently an executor's poll must have ended for it to
// count as free while it is between two polls (one with no free slot
// does not poll).
const freshPoll = time.Second

// skip reports whether the pick passes over shard id: its executor runs
// (or this pick took) its share of the instance's unfinished shards
// already, the share being those shards divided among the executors
// with free slots that could run them: those waiting in a poll or whose
// poll ended within freshPoll, and this one.
func (sp *spreader) skip(id uint64) bool {
	s := &sp.d.shards
	p := s.parent[id]
	if p == 0 || sp.executor == "" {
		return false
	}
	mine := s.running[p][sp.executor] + sp.picked[p]
	if mine == 0 {
		return false
	}
	e := sp.d.ready.entries[id]
	if e == nil {
		return false
	}
	free := sp.free[p]
	if free == 0 {
		free = 1 // this one
		cutoff := sp.d.cfg.Now().Add(-freshPoll)
		for name, st := range sp.d.seen {
			if name == sp.executor {
				continue
			}
			_, waiting := s.waiting[name]
			if (waiting || s.polled[name].After(cutoff)) && e.q.route.servedBy(name, st.Capabilities, st.Labels) {
				free++
			}
		}
		if sp.free == nil {
			sp.free = map[uint64]int{}
		}
		sp.free[p] = free
	}
	share := (s.active[p] + free - 1) / free
	return mine >= share
}

func (sp *spreader) took(id uint64) {
	if p := sp.d.shards.parent[id]; p != 0 {
		if sp.picked == nil {
			sp.picked = map[uint64]int{}
		}
		sp.picked[p]++
	}
}

// fanOut proposes the fan-out of every sharded instance waiting READY
// for one (the shard command), oldest first.
func (d *Dispatcher) fanOut(ctx context.Context) {
	now := d.cfg.Now()
	d.mu.Lock()
	ids := make([]uint64, 0, len(d.shards.fan))
	for id, it := range d.shards.fan {
		if !now.Before(it.next) {
			ids = append(ids, id)
		}
	}
	d.mu.Unlock()
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	for _, id := range ids {
		if ctx.Err() != nil {
			return
		}
		d.mu.Lock()
		it, ok := d.shards.fan[id]
		var item fanItem
		if ok {
			item = *it
		}
		d.mu.Unlock()
		if !ok {
			continue
		}
		body, ok := d.shardBody(id, item)
		if !ok {
			continue
		}
		d.proposeShard(ctx, id, body)
	}
}

// shardBody is the fan-out of instance id: the count it had (a re-run),
// the task's shards, or the executors a broadcast runs on now; ok false
// when there is none to propose now.
func (d *Dispatcher) shardBody(id uint64, it fanItem) (command.Shard, bool) {
	body := command.Shard{ID: id, Total: it.shards}
	if it.shards > 0 {
		return body, true
	}
	t, err := d.definition(routeName(it.task, it.canary))
	if err != nil || !t.Policy.Sharded() {
		// Not sharded (any more, or its task is gone): it runs as it is.
		d.mu.Lock()
		if _, ok := d.shards.fan[id]; ok {
			delete(d.shards.fan, id)
			if d.ready.add(id, routeName(it.task, it.canary), "", d.cfg.Now().UnixMilli(), 0) {
				d.wakeAll()
			}
		}
		d.mu.Unlock()
		return body, false
	}
	if !t.Policy.Broadcast {
		body.Total = t.Policy.Shards
		return body, true
	}
	body.Executors = d.liveExecutors(routeOf(t))
	if len(body.Executors) == 0 {
		d.mu.Lock()
		if f := d.shards.fan[id]; f != nil && !f.noted {
			f.noted = true
			d.log.Info("a broadcast waits for an executor that can run it", "instance", model.FormatID(id), "task", it.task)
		}
		d.mu.Unlock()
		return body, false
	}
	return body, true
}

// proposeShard proposes body; a refusal that may pass later (a shard
// still stopping) is retried after a second, one that will not (the
// instance moved on) drops the item.
func (d *Dispatcher) proposeShard(ctx context.Context, id uint64, body command.Shard) {
	cmd, err := command.New(command.TypeShard, "", "dispatcher", body)
	if err != nil {
		return
	}
	res, err := d.propose(ctx, cmd)
	if err == nil && res.Err != nil {
		err = res.Err
	}
	if err == nil {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	it := d.shards.fan[id]
	if it == nil {
		return
	}
	var me *model.Error
	if errors.As(err, &me) && me.Code != model.CodeUnavailable {
		delete(d.shards.fan, id)
		d.log.Warn("fan-out into shards refused", "instance", model.FormatID(id), "error", err)
		return
	}
	it.next = d.cfg.Now().Add(time.Second)
	if ctx.Err() == nil {
		d.log.Info("fan-out into shards not applied yet; retrying", "instance", model.FormatID(id), "error", err)
	}
}

// liveExecutors lists, by name, the executors that serve r and are
// there now: waiting in a poll, or heard from within a lease.
func (d *Dispatcher) liveExecutors(r route) []string {
	cutoff := d.cfg.Now().Add(-d.cfg.Lease)
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []string
	for name, e := range d.seen {
		_, polling := d.shards.waiting[name]
		if (polling || e.LastSeen.After(cutoff)) && r.servedBy(name, e.Capabilities, e.Labels) {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	if len(out) > model.MaxShards {
		d.log.Warn("a broadcast runs on the first executors only", "executors", len(out), "max", model.MaxShards)
		out = out[:model.MaxShards]
	}
	return out
}

// shardsLeft ends the waiting broadcast shards of executors that left:
// not heard from for executorTTL (once this leader has led that long,
// so that every executor had the time to find it).
func (d *Dispatcher) shardsLeft(ctx context.Context) {
	now := d.cfg.Now()
	if now.Sub(d.started) < executorTTL {
		return
	}
	d.mu.Lock()
	gone := map[pin]bool{}
	for _, p := range d.shards.pinned {
		if _, polling := d.shards.waiting[p.executor]; polling {
			continue
		}
		if e := d.seen[p.executor]; e == nil || now.Sub(e.LastSeen.Time) > executorTTL {
			gone[p] = true
		}
	}
	d.mu.Unlock()
	list := make([]pin, 0, len(gone))
	for p := range gone {
		list = append(list, p)
	}
	sort.Slice(list, func(i, j int) bool {
		if list[i].parent != list[j].parent {
			return list[i].parent < list[j].parent
		}
		return list[i].executor < list[j].executor
	})
	for _, p := range list {
		cmd, err := command.New(command.TypeShard, "", "dispatcher", command.Shard{ID: p.parent, Left: p.executor})
		if err != nil {
			continue
		}
		res, err := d.propose(ctx, cmd)
		if err == nil && res.Err != nil {
			err = res.Err
		}
		if err != nil {
			d.log.Warn("ending the broadcast shards of an executor that left failed", "instance", model.FormatID(p.parent), "executor", p.executor, "error", err)
			continue
		}
		d.log.Warn("broadcast shards failed: their executor left", "instance", model.FormatID(p.parent), "executor", p.executor)
	}
}

// wakeAll wakes every waiting poll (d's lock held).
func (d *Dispatcher) wakeAll() {
	if d.waiting > 0 {
		close(d.wake)
		d.wake = make(chan struct{})
		d.waiting = 0
	}
}
