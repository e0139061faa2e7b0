// Package dispatch is the leader's side of the executor protocol: it keeps
// the READY instances in a queue, hands them to polling executors by
// committing a Lease through Raft, renews leases on heartbeats, and fails
// attempts whose lease ran out ("lost") so the retry policy can act. Like
// the scheduler it lives for one leadership term and rebuilds its state
// from the state machine when a term starts.
package dispatch

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ax-scheduler/ax/fsm"
	"github.com/ax-scheduler/ax/fsm/command"
	"github.com/ax-scheduler/ax/model"
)

// Store is what the dispatcher reads from the state machine.
type Store interface {
	ActiveInstances(fn func(fsm.Active)) error
	// Jobs builds the jobs of the attempts a lease committed.
	Jobs(refs []command.AttemptRef) ([]model.Job, error)
	// Proto is the protocol the cluster has reached.
	Proto() int
	// Running says which attempt of instance id runs (RUNNING or in a
	// mid-run approval), ok false if none does.
	Running(id uint64) (attempt int, ok bool)
	// Overlap says whether attempt of instance id, reported to have run
	// for ranMs after it was fenced, outlived the start of the next
	// attempt: how (detail, "" if it did not), and the instance's task.
	Overlap(id uint64, attempt int, ranMs int64) (task, detail string)
	// GetTask returns a task's definition (its action and
	// executorLabels route its instances).
	GetTask(name string) (*model.Task, error)
}

// Proposer commits a command through Raft and returns its result. It
// proposes on this node as the leader of the dispatcher's term and never
// forwards: a node that no longer leads fails the proposal, so it never
// hands out work, and a result is always one this node's state machine
// applied.
type Proposer func(ctx context.Context, cmd *command.Command) (*fsm.Result, error)

// Config configures a Dispatcher.
type Config struct {
	// Lease is how long an attempt stays RUNNING without a heartbeat.
	// Default 10s; executors heartbeat every Lease/4.
	Lease time.Duration
	// Now is the cluster's time base (the leader's wall clock): what the
	// dispatcher stamps and reads committed times against.
	Now func() time.Time
	// Mono is a monotonic clock (time.Now; default Now): leases are
	// expired on it, so a step of the wall clock never expires one early.
	Mono   func() time.Time
	Logger hclog.Logger
	// Prepare, when set, completes each leased job before it is handed
	// out (the agent adds the values of the secrets it references).
	Prepare func(*model.Job)
	// ExpireGrace is how long past its lease an attempt is still
	// counted as running: the executor stops an attempt it could not
	// renew within the lease (SIGTERM, SIGKILL after at most a quarter
	// lease), so it is gone before the instance can be leased again.
	// Default half a lease.
	ExpireGrace time.Duration
	// NoteAfter is how long an instance waits READY with no executor
	// able to run it before the dispatcher records an event saying so
	// (once). Default 3 leases.
	NoteAfter time.Duration
	// Started, when set, is told how long an instance waited READY
	// before an attempt of it started (both ends are committed times):
	// the dispatch latency. It is called with the dispatcher's lock held,
	// from the state machine's observer, and must be quick. Instances
	// that were READY when the term started are not reported.
	Started func(task string, waited time.Duration)
	// MaxSkew is how far the clocks of two leaders may differ (the
	// agent's -max-clock-skew): a lease stamped by an earlier leader is
	// expired that much later. Default 1s.
	MaxSkew time.Duration
	// Overlapped, when set, is told of each fenced attempt found to have
	// outlived the start of the next one (see Store.Overlap).
	Overlapped func(task string)
	// PriorityAging is how long an instance waits READY for its
	// policy.priority to count one higher when executors are handed work
	// (default 1s): low priorities never starve.
	PriorityAging time.Duration
}

// Dispatcher runs for one leadership term.
type Dispatcher struct {
	cfg     Config
	store   Store
	propose Proposer
	log     hclog.Logger
	started time.Time

	mu      sync.Mutex
	ready   *readyIndex     // READY instances by route
	taken   map[uint64]bool // being leased right now
	wake    chan struct{}   // closed when work arrives
	waiting int             // polls waiting on wake
	leases  map[uint64]lease
	live    map[uint64]*liveLog
	seen    map[string]*model.ExecutorStatus // executor -> last poll or heartbeat
	lost    map[string]int                   // executor -> leases expired while it was silent (lost.go)
	// sessions is each executor's latest process (PollRequest.Session).
	sessions map[string]string
	// Sharded execution (shards.go).
	shards shardState

	done chan struct{} // closed when Run returns: the term is over
}

// executorTTL is how long an executor that stopped polling and heartbeating
// stays listed.
const executorTTL = time.Minute

type lease struct {
	attempt  int
	until    int64 // Unix ms
	executor string
	// inherited: last renewed under an earlier leader (loaded when the
	// term started, not renewed since).
	inherited bool
	// session is the executor process the lease went to (its poll's
	// Session), "" when not known.
	session string
	// deadline is when this leader may expire the lease, on its
	// monotonic clock (Config.Mono): a lease length plus the expiry grace
	// after this node applied the lease or its last renewal (a moment
	// after the stamp), or for one an earlier leader stamped, what was
	// left of it when the term began plus the grace and MaxSkew.
	deadline time.Time
}

type liveLog struct {
	attempt int
	offset  int64 // position of buf[0] in the attempt's output
	buf     []byte
}

const liveMax = 64 << 10

// DefaultLease is Config.Lease's default.
const DefaultLease = 10 * time.Second

// New returns a dispatcher; Run starts it.
func New(cfg Config, store Store, propose Proposer) *Dispatcher {
	if cfg.Lease == 0 {
		cfg.Lease = DefaultLease
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Mono == nil {
		cfg.Mono = cfg.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	if cfg.ExpireGrace == 0 {
		cfg.ExpireGrace = cfg.Lease / 2
	}
	if cfg.NoteAfter == 0 {
		cfg.NoteAfter = 3 * cfg.Lease
	}
	if cfg.PriorityAging <= 0 {
		cfg.PriorityAging = time.Second
	}
	if cfg.MaxSkew == 0 {
		cfg.MaxSkew = time.Second
	}
	d := &Dispatcher{
		cfg: cfg, store: store, propose: propose, log: cfg.Logger.Named("dispatch"),
		taken: map[uint64]bool{}, wake: make(chan struct{}),
		leases: map[uint64]lease{}, live: map[uint64]*liveLog{},
		seen: map[string]*model.ExecutorStatus{}, lost: map[string]int{}, sessions: map[string]string{}, done: make(chan struct{}),
		shards: newShardState(),
	}
	d.ready = newReadyIndex(d.taskRoute)
	d.ready.aging = cfg.PriorityAging.Milliseconds()
	return d
}

// InstanceChanged feeds the dispatcher from the state machine's observer.
func (d *Dispatcher) InstanceChanged(c fsm.InstanceChange) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.apply(c)
}

func (d *Dispatcher) apply(c fsm.InstanceChange) {
	if d.shardChanged(c) {
		return // a sharded instance to fan out
	}
	switch c.State {
	case model.StateReady:
		var now int64
		if c.At == 0 {
			now = d.cfg.Now().UnixMilli()
		}
		if d.ready.add(c.ID, routeName(c.Task, c.Canary), c.Pin, now, c.At) {
			d.wakeAll()
		}
		delete(d.leases, c.ID)
		return
	case model.StateRunning, model.StateWaitingApproval:
		if e := d.ready.remove(c.ID); e != nil && !e.loaded && c.At >= e.since && d.cfg.Started != nil && c.State == model.StateRunning {
			d.cfg.Started(c.Task, time.Duration(c.At-e.since)*time.Millisecond)
		}
		if c.LeaseUntil != 0 {
			length := d.cfg.Lease.Milliseconds()
			if c.At > 0 && c.LeaseUntil > c.At {
				length = c.LeaseUntil - c.At
			}
			l := lease{attempt: c.Attempt, until: c.LeaseUntil, executor: c.Executor,
				deadline: d.cfg.Mono().Add(time.Duration(length)*time.Millisecond + d.cfg.ExpireGrace)}
			if old, ok := d.leases[c.ID]; ok && old.attempt == c.Attempt {
				l.session = old.session
			}
			d.leases[c.ID] = l
		}
		return
	}
	d.ready.remove(c.ID)
	delete(d.leases, c.ID)
	if c.State != model.StateRetrying {
		if l, ok := d.live[c.ID]; ok && l.attempt <= c.Attempt {
			delete(d.live, c.ID)
		}
	}
}

// Run loads the active instances and reaps expired leases until ctx ends.
// When it returns, every poll waiting on the dispatcher is answered at
// once (Released, no jobs), and so is every later one: the term is over.
//
// A lease's deadline is the replicated one, whichever leader stamped it:
// a new term does not restart it, so however often leadership moves an
// attempt whose executor went silent is reaped within its lease, the
// expiry grace and MaxSkew (for a deadline an earlier leader stamped).
func (d *Dispatcher) Run(ctx context.Context) error {
	defer close(d.done)
	d.started = d.cfg.Now()
	wall, mono := d.started.UnixMilli(), d.cfg.Mono()
	n := 0
	err := d.store.ActiveInstances(func(a fsm.Active) {
		n++
		d.InstanceChanged(fsm.InstanceChange{ID: a.ID, Task: a.Task, State: a.State, Attempt: a.Attempt, LeaseUntil: a.LeaseUntil, Executor: a.Executor,
			Parent: a.Parent, Shards: a.Shards, Pin: a.Pin, Canary: a.Canary})
		d.mu.Lock()
		if l, ok := d.leases[a.ID]; ok && l.until == a.LeaseUntil {
			l.inherited = true
			left := time.Duration(a.LeaseUntil-wall) * time.Millisecond
			l.deadline = mono.Add(left + d.cfg.ExpireGrace + d.cfg.MaxSkew)
			d.leases[a.ID] = l
		}
		d.mu.Unlock()
	})
	if err != nil {
		return fmt.Errorf("dispatch: load active instances: %w", err)
	}
	d.mu.Lock()
	ready, running := d.ready.len(), len(d.leases)
	d.mu.Unlock()
	d.log.Info("dispatcher started", "active", n, "ready", ready, "running", running)
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for n := 1; ; n++ {
		select {
		case <-ctx.Done():
			return nil
		case <-d.shards.kick:
			d.fanOut(ctx)
		case <-tick.C:
			d.reap(ctx)
			d.fanOut(ctx)
			if n%noteEvery == 0 {
				d.note(ctx)
				d.shardsLeft(ctx)
			}
		}
	}
}

// saw records that an executor was heard from, updating it with set.
func (d *Dispatcher) saw(name string, set func(*model.ExecutorStatus)) {
	now := model.Time{Time: d.cfg.Now().UTC()}
	d.mu.Lock()
	defer d.mu.Unlock()
	e := d.seen[name]
	if e == nil {
		e = &model.ExecutorStatus{Name: name}
		d.seen[name] = e
	}
	e.LastSeen = now
	delete(d.lost, name)
	if set != nil {
		set(e)
	}
}

// Executors lists the executors heard from within executorTTL, by name,
// with the attempts leased to each.
func (d *Dispatcher) Executors() []model.ExecutorStatus {
	cutoff := d.cfg.Now().Add(-executorTTL)
	d.mu.Lock()
	defer d.mu.Unlock()
	running := map[string]int{}
	for _, l := range d.leases {
		running[l.executor]++
	}
	out := make([]model.ExecutorStatus, 0, len(d.seen))
	for name, e := range d.seen {
		if e.LastSeen.Before(cutoff) {
			if d.lost[name] == 0 { // a lost one's last sighting is kept for its alert
				delete(d.seen, name)
			}
			continue
		}
		s := *e
		s.Running = running[name]
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// reap ends the attempts whose lease has run out more than the expiry
// grace ago (see ExpireGrace). A lease stays known until the state
// machine has answered the Expire: a proposal that fails (leadership
// lost, a timeout) leaves it for the next tick. Once the Expire applied,
// the state machine's changes have already updated the leases it touched
// (the instance ended the attempt, or a renewal that raced it won); one
// it left alone is not a running attempt there, so it is dropped.
//
// A lease last renewed under an earlier leader (inherited) is expired
// MaxSkew later, as the two leaders' clocks may differ by that much, and
// is marked Interrupted: its executor may have been unable to reach this
// leader, so the state machine does not charge it to maxRetries. A lease
// whose executor has polled as a new process since it was granted is
// marked Restarted: if the executor never confirmed it, the attempt may
// have crashed it, and the state machine charges it.
func (d *Dispatcher) reap(ctx context.Context) {
	now := d.cfg.Mono()
	interrupts := d.store.Proto() >= 6
	var items []command.ExpireItem
	var proposed []lease
	d.mu.Lock()
	for id, l := range d.leases {
		if !now.Before(l.deadline) {
			cur := d.sessions[l.executor]
			restarted := l.session != "" && cur != "" && cur != l.session
			items = append(items, command.ExpireItem{ID: id, Attempt: l.attempt, Interrupted: interrupts && l.inherited,
				Restarted: interrupts && !l.inherited && restarted})
		}
	}
	sort.Slice(items, func(i, j int) bool { return items[i].ID < items[j].ID })
	for _, it := range items {
		proposed = append(proposed, d.leases[it.ID])
	}
	d.mu.Unlock()
	if len(items) == 0 {
		return
	}
	cmd, err := command.New(command.TypeExpire, "", "dispatcher", command.Expire{Items: items})
	if err != nil {
		return
	}
	res, err := d.propose(ctx, cmd)
	if err == nil && res.Err != nil {
		err = res.Err
	}
	if err != nil {
		if ctx.Err() == nil {
			d.log.Warn("expiring lost attempts failed; retrying", "count", len(items), "error", err)
		}
		return
	}
	var out struct {
		Expired int `json:"expired"`
	}
	_ = res.Decode(&out)
	d.mu.Lock()
	d.noteLost(proposed, d.cfg.Now())
	for i, it := range items {
		if l, ok := d.leases[it.ID]; ok && l == proposed[i] {
			if attempt, running := d.store.Running(it.ID); running && attempt == it.Attempt {
				// Left alone, still running: the stamp of this term's
				// clock is not past the replicated deadline yet (the
				// clock stepped back, or an earlier leader's ran ahead).
				l.deadline = now.Add(time.Second)
				d.leases[it.ID] = l
				continue
			}
			delete(d.leases, it.ID)
		}
	}
	d.mu.Unlock()
	d.log.Info("attempts lost: leases expired", "count", out.Expired, "proposed", len(items))
}

// taskRoute reads a task's route from the store: for the canary
// instances of a task (routeName), what its rollout's canary runs.
func (d *Dispatcher) taskRoute(task string) route {
	t, err := d.definition(task)
	if err != nil {
		return routeOf(nil)
	}
	return routeOf(t)
}

// definition reads what the instances of a ready index's task name
// (routeName) run: the task, or for its canary instances its rollout's
// canary.
func (d *Dispatcher) definition(task string) (*model.Task, error) {
	if name, ok := strings.CutSuffix(task, canarySuffix); ok {
		if cs, ok := d.store.(canaryStore); ok {
			return cs.CanaryTask(name)
		}
		task = name
	}
	return d.store.GetTask(task)
}

// canaryStore is a Store that knows canary rollouts (fsm.FSM).
type canaryStore interface {
	// CanaryTask returns what the task's canary instances run: its
	// canary version with the rollout's testLabels while one
	// progresses, else the task.
	CanaryTask(name string) (*model.Task, error)
}

// canarySuffix marks the ready index's name of a task's canary
// instances: they have a route of their own.
const canarySuffix = "\x00canary"

// routeName is the ready index's name of the task's canary or other
// instances.
func routeName(task string, canary bool) string {
	if canary {
		return task + canarySuffix
	}
	return task
}

// TaskChanged makes the dispatcher read a task's route again (and its
// canary instances').
func (d *Dispatcher) TaskChanged(task string) {
	d.mu.Lock()
	d.ready.taskChanged(task)
	if _, ok := d.ready.routes[task+canarySuffix]; ok {
		d.ready.taskChanged(task + canarySuffix) // else read when first used
	}
	d.mu.Unlock()
}

// pick reserves up to n READY instances that an executor with
// capabilities c and labels can run, oldest first. It looks only at the
// queues of the routes the executor serves, so a poll costs the number of
// routes plus what it picks (and skips of instances other polls are
// leasing right now), however many instances wait for other executors.
func (d *Dispatcher) pick(c *model.Capabilities, labels map[string]string, n int) ([]uint64, <-chan struct{}) {
	return d.pickFor("", c, labels, n)
}

// pickFor is pick for a named executor: it also gets the broadcast
// shards pinned to it, and the shards of an instance are spread (spread).
func (d *Dispatcher) pickFor(executor string, c *model.Capabilities, labels map[string]string, n int) ([]uint64, <-chan struct{}) {
	d.mu.Lock()
	defer d.mu.Unlock()
	sp := d.spread(executor)
	out := d.ready.pick(executor, c, labels, n, d.cfg.Now().UnixMilli(), func(id uint64) bool { return d.taken[id] || sp.skip(id) }, sp.took)
	for _, id := range out {
		d.taken[id] = true
	}
	if len(out) == 0 {
		d.waiting++
	}
	return out, d.wake
}

// RouteDepth is how many instances wait READY for one route: an action
// kind (and sdk handler) and a set of executor labels.
type RouteDepth struct {
	Action  string // "" for instances of deleted tasks (any executor)
	Handler string // the sdk handler, "" for other kinds
	Labels  string // the task's executorLabels, "k=v,k2=v2" sorted; "" for none
	Ready   int
}

// ReadyDepth returns the READY depth of every route with READY instances,
// sorted by route. It costs the number of routes.
func (d *Dispatcher) ReadyDepth() []RouteDepth {
	d.mu.Lock()
	out := make([]RouteDepth, 0, len(d.ready.queues))
	for _, q := range d.ready.queues {
		if q.n > 0 {
			out = append(out, RouteDepth{Action: q.route.kind, Handler: q.route.handler, Labels: q.route.labelString(), Ready: q.n})
		}
	}
	d.mu.Unlock()
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Action != b.Action {
			return a.Action < b.Action
		}
		if a.Handler != b.Handler {
			return a.Handler < b.Handler
		}
		return a.Labels < b.Labels
	})
	return out
}

// Done is closed when Run has returned.
func (d *Dispatcher) Done() <-chan struct{} { return d.done }

// Poll implements the long-poll: it returns as soon as there is work for
// the executor, or empty-handed after WaitMs, or at once, Released, when
// the dispatcher's term ends.
func (d *Dispatcher) Poll(ctx context.Context, req model.PollRequest) (*model.PollResponse, error) {
	d.saw(req.Executor, func(e *model.ExecutorStatus) {
		e.Host, e.Labels, e.Free, e.Capabilities, e.Capacity = req.Host, req.Labels, req.Free, req.Capabilities, req.Capacity
		if req.Session != "" {
			d.sessions[req.Executor] = req.Session
		}
		d.shards.polled[req.Executor] = d.cfg.Now()
	})
	arrived := time.Now()
	resp := &model.PollResponse{Jobs: []model.Job{}, LeaseMs: d.cfg.Lease.Milliseconds(), HeartbeatMs: (d.cfg.Lease / 4).Milliseconds(),
		Protocol: d.store.Proto()}
	wait := time.Duration(req.WaitMs) * time.Millisecond
	if wait <= 0 || wait > 30*time.Second {
		wait = 20 * time.Second
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		select {
		case <-d.done:
			resp.Released = true
			return resp, nil
		default:
		}
		ids, wake := d.pickFor(req.Executor, req.Capabilities, req.Labels, req.Free)
		if len(ids) > 0 {
			// The lease starts after this moment (it is stamped when
			// committed): the executor counts from here.
			held := max(time.Since(arrived).Milliseconds(), 1)
			jobs, err := d.lease(ctx, req, ids)
			if err != nil {
				return nil, err
			}
			if len(jobs) > 0 && ctx.Err() != nil {
				// The poll's caller went away while its lease committed
				// (the executor shut down, or gave up on this server):
				// the answer cannot reach it, so the jobs go back at once.
				d.giveBack(req.Executor, jobs)
				return resp, nil
			}
			if len(jobs) > 0 {
				// The protocol now, not at the poll's arrival: the
				// executor reports these jobs by it.
				resp.Jobs, resp.HeldMs, resp.Protocol = jobs, held, d.store.Proto()
				return resp, nil
			}
			continue
		}
		d.polling(req, true)
		select {
		case <-wake:
			d.polling(req, false)
		case <-d.done:
			d.polling(req, false)
			resp.Released = true
			return resp, nil
		case <-timer.C:
			d.polling(req, false)
			return resp, nil
		case <-ctx.Done():
			d.polling(req, false)
			return resp, nil
		}
	}
}

func (d *Dispatcher) lease(ctx context.Context, req model.PollRequest, ids []uint64) ([]model.Job, error) {
	defer func() {
		d.mu.Lock()
		for _, id := range ids {
			delete(d.taken, id)
		}
		d.mu.Unlock()
	}()
	cmd, err := command.New(command.TypeLease, "", "executor:"+req.Executor,
		command.Lease{Executor: req.Executor, Host: req.Host, IDs: ids, LeaseMs: d.cfg.Lease.Milliseconds()})
	if err != nil {
		return nil, err
	}
	res, err := d.propose(ctx, cmd)
	if err != nil {
		return nil, err
	}
	var lr fsm.LeaseResult
	if err := res.Decode(&lr); err != nil {
		return nil, err
	}
	// The observer has recorded the leases (the state machine applied
	// them before answering): note which executor process they went to.
	d.mu.Lock()
	for _, ref := range lr.Refs() {
		if l, ok := d.leases[ref.ID]; ok && l.attempt == ref.Attempt {
			l.session = req.Session
			d.leases[ref.ID] = l
		}
	}
	d.mu.Unlock()
	// The jobs are the attempts the state machine recorded for this
	// lease, read from this node's state, which applied it.
	jobs, err := d.store.Jobs(lr.Refs())
	if err != nil {
		return nil, err
	}
	if len(jobs) != len(lr.IDs) {
		d.log.Warn("some leased attempts have no job (task deleted, or the attempt ended already)", "leased", len(lr.IDs), "jobs", len(jobs))
	}
	if d.cfg.Prepare != nil {
		for i := range jobs {
			d.cfg.Prepare(&jobs[i])
		}
	}
	return jobs, nil
}

// giveBack ends the just-leased attempts of jobs, which never reached
// executor, as interrupted (the instances are READY again, no retry
// used). Before protocol 6 they are left to lapse.
func (d *Dispatcher) giveBack(executor string, jobs []model.Job) {
	if d.store.Proto() < 6 {
		return
	}
	items := make([]command.Complete, 0, len(jobs))
	for _, j := range jobs {
		id, err := model.ParseID(j.InstanceID)
		if err != nil {
			continue
		}
		items = append(items, command.Complete{ID: id, Attempt: j.Attempt, Report: model.CompleteRequest{
			Executor: executor, Canceled: true, Retryable: true, Interrupted: true, ExitCode: -1,
			Error: "not delivered: the poll that leased it ended before its answer (the executor stopped or moved to another server)"}})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	cmd := &command.Command{Type: command.TypeCompleteBatch, Actor: "dispatcher", Body: command.EncodeCompleteBatch(items)}
	res, err := d.propose(ctx, cmd)
	if err == nil && res.Err != nil {
		err = res.Err
	}
	if err != nil {
		d.log.Warn("giving back attempts whose poll went away failed; they lapse instead", "executor", executor, "count", len(items), "error", err)
		return
	}
	d.log.Info("gave back attempts whose poll went away before its answer", "executor", executor, "count", len(items))
}

// Heartbeat renews the executor's leases and records streamed output.
func (d *Dispatcher) Heartbeat(ctx context.Context, req model.HeartbeatRequest) (*model.HeartbeatResponse, error) {
	d.saw(req.Executor, nil)
	h := command.Heartbeat{Executor: req.Executor, LeaseMs: d.cfg.Lease.Milliseconds()}
	for _, r := range req.Running {
		id, err := model.ParseID(r.InstanceID)
		if err != nil {
			return nil, err
		}
		h.Items = append(h.Items, command.AttemptRef{ID: id, Attempt: r.Attempt, Unstarted: r.NotStarted})
		if r.Output != "" {
			d.appendLive(id, r.Attempt, r.Output)
		}
	}
	out := &model.HeartbeatResponse{Stop: []model.StopAttempt{}}
	if len(h.Items) == 0 {
		return out, nil
	}
	cmd, err := command.New(command.TypeHeartbeat, "", "executor:"+req.Executor, h)
	if err != nil {
		return nil, err
	}
	res, err := d.propose(ctx, cmd)
	if err != nil {
		return nil, err
	}
	var hr fsm.HeartbeatResult
	if err := res.Decode(&hr); err != nil {
		return nil, err
	}
	if hr.Stop != nil {
		out.Stop = hr.Stop
	}
	return out, nil
}

func (d *Dispatcher) appendLive(id uint64, attempt int, chunk string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	l, ok := d.live[id]
	if !ok || l.attempt != attempt {
		l = &liveLog{attempt: attempt}
		d.live[id] = l
	}
	l.buf = append(l.buf, chunk...)
	if over := len(l.buf) - liveMax; over > 0 {
		l.buf = append(l.buf[:0], l.buf[over:]...)
		l.offset += int64(over)
	}
}

// Live returns the output streamed so far by the running attempt of an
// instance, from offset on.
func (d *Dispatcher) Live(id uint64, offset int64) (attempt int, start int64, out string, ok bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	l, ok := d.live[id]
	if !ok {
		return 0, 0, "", false
	}
	skip := max(offset-l.offset, 0)
	if skip > int64(len(l.buf)) {
		skip = int64(len(l.buf))
	}
	return l.attempt, l.offset + skip, string(l.buf[skip:]), true
}

// ParseExecutionID splits "<instanceId>-<attempt>".
func ParseExecutionID(s string) (uint64, int, error) {
	i := strings.LastIndexByte(s, '-')
	if i < 0 {
		return 0, 0, model.FieldErrorf("executionId", "%q is not <instanceId>-<attempt>", s)
	}
	id, err := model.ParseID(s[:i])
	if err != nil {
		return 0, 0, model.FieldErrorf("executionId", "%q is not <instanceId>-<attempt>", s)
	}
	n, err := strconv.Atoi(s[i+1:])
	if err != nil || n < 1 {
		return 0, 0, model.FieldErrorf("executionId", "%q is not <instanceId>-<attempt>", s)
	}
	return id, n, nil
}

// CompleteBatch records the ends of several attempts in one command.
func (d *Dispatcher) CompleteBatch(ctx context.Context, reqID string, reports []model.CompleteItem) ([]model.CompleteOutcome, error) {
	var items []command.Complete
	out := make([]model.CompleteOutcome, len(reports))
	idx := make([]int, 0, len(reports))
	proto := d.store.Proto()
	for i, r := range reports {
		out[i].ExecutionID = r.ExecutionID
		id, attempt, err := ParseExecutionID(r.ExecutionID)
		if err != nil {
			out[i].Error = err.Error()
			continue
		}
		items = append(items, command.Complete{ID: id, Attempt: attempt, Report: logged(r.Report, proto)})
		idx = append(idx, i)
	}
	if len(items) == 0 {
		return out, nil
	}
	executor := reports[0].Report.Executor
	cmd := &command.Command{Type: command.TypeCompleteBatch, ReqID: reqID, Actor: "executor:" + executor, Body: command.EncodeCompleteBatch(items)}
	res, err := d.propose(ctx, cmd)
	if err != nil {
		return nil, err
	}
	var states []model.CompleteOutcome
	if err := res.Decode(&states); err != nil {
		return nil, err
	}
	for j, i := range idx {
		if j < len(states) {
			out[i].State, out[i].Error, out[i].Code = states[j].State, states[j].Error, states[j].Code
			if states[j].Code == model.CodeConflict {
				d.checkOverlap(ctx, items[j].ID, items[j].Attempt, reports[i].Report.RanMs)
			}
		}
	}
	return out, nil
}

// logged is the report as the log records it: without what the state
// machine does not use (RanMs), without Interrupted before the cluster
// reaches protocol 6 and without a result before protocol 8 (its members
// would not all apply them; an older one could not decode the result).
func logged(r model.CompleteRequest, proto int) model.CompleteRequest {
	r.RanMs = 0
	if proto < 6 {
		r.Interrupted = false
	}
	if proto < 8 {
		r.Result = nil
	}
	return r
}

// checkOverlap records, on the instance, that a fenced attempt ran on
// after the next attempt started, if its report (refused: not current)
// says it ran that long (ranMs). It should never happen while stalls
// stay within the bound of docs/execution.md; when one does, the event
// names both attempts.
func (d *Dispatcher) checkOverlap(ctx context.Context, id uint64, attempt int, ranMs int64) {
	if ranMs <= 0 || d.store.Proto() < 6 {
		return
	}
	task, msg := d.store.Overlap(id, attempt, ranMs)
	if msg == "" {
		return
	}
	d.log.Error("two attempts of an instance ran at once", "instance", model.FormatID(id), "detail", msg)
	cmd, err := command.New(command.TypeNote, "", "dispatcher", command.Note{IDs: []uint64{id}, Type: command.NoteOverlap, Message: msg})
	if err != nil {
		return
	}
	if d.cfg.Overlapped != nil {
		d.cfg.Overlapped(task)
	}
	res, err := d.propose(ctx, cmd)
	if err == nil && res.Err != nil {
		err = res.Err
	}
	if err != nil {
		d.log.Warn("recording an overlap failed", "instance", model.FormatID(id), "error", err)
	}
}

// Complete records the end of an attempt.
// reqID makes a retried report idempotent.
func (d *Dispatcher) Complete(ctx context.Context, reqID, executionID string, req model.CompleteRequest) (string, error) {
	id, attempt, err := ParseExecutionID(executionID)
	if err != nil {
		return "", err
	}
	cmd, err := command.New(command.TypeComplete, reqID, "executor:"+req.Executor, command.Complete{ID: id, Attempt: attempt, Report: logged(req, d.store.Proto())})
	if err != nil {
		return "", err
	}
	res, err := d.propose(ctx, cmd)
	if err != nil {
		return "", err
	}
	if res.Err != nil && res.Err.Code == model.CodeConflict {
		d.checkOverlap(ctx, id, attempt, req.RanMs)
	}
	var out struct {
		State string `json:"state"`
	}
	if err := res.Decode(&out); err != nil {
		return "", err
	}
	return out.State, nil
}
