package sched

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ax-scheduler/ax/fsm"
	"github.com/ax-scheduler/ax/fsm/command"
	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/trigger"
	"github.com/ax-scheduler/ax/wheel"
)

// Store is what the scheduler reads from the state machine.
type Store interface {
	// TaskSchedulePage calls fn with up to limit tasks after the name
	// after ("" from the first), in name order, and returns the name to
	// continue after ("" when none is left).
	TaskSchedulePage(after string, limit int, fn func(ts *fsm.TaskSchedule)) (string, error)
	TaskSchedule(name string) (*fsm.TaskSchedule, error)
	ScanDue(fromMs, toMs int64, fn func(id uint64, dueMs int64)) error
}

// Future is a proposal in flight.
type Future interface {
	Wait() (*fsm.Result, error)
}

// Proposer proposes a command through Raft without waiting; calls are
// appended to the log in call order. It stamps the leader's time.
type Proposer func(cmd *command.Command) Future

// Config configures a Scheduler.
type Config struct {
	Clock   wheel.Clock
	Horizon time.Duration // delayed instances due within it are kept in the wheel (default 1h)
	Logger  hclog.Logger
	// MaxBatch bounds the fires in one command (default 4096).
	MaxBatch int
	// MaxInFlight bounds proposals awaiting commit (default 8).
	MaxInFlight int
	// MaxCatchup bounds the fires of one task proposed for missed times in
	// the catch-up window with catchup "all" (default 10000); older ones
	// are recorded as misfires.
	MaxCatchup int
	// TaskPage is how many tasks the start of a term reads and arms at a
	// time, serving expiries and changes in between (default 1000).
	TaskPage int
	// OnFired, when set, is called with each committed fire result and its
	// proposal time (metrics).
	OnFired func(res *fsm.FireResult)
}

// taskBit marks wheel ids that are task timers (slot numbers) rather than
// instance ids. Instance ids are index<<20|seq and never reach it.
const taskBit = 1 << 63

// Scheduler runs for one leadership term.
type Scheduler struct {
	cfg     Config
	store   Store
	propose Proposer
	log     hclog.Logger
	driver  *wheel.Driver

	loadedUntil atomic.Int64 // due-index buckets before it are in the wheel
	expired     chan []wheel.Expired
	stopped     chan struct{} // closed when Run ends (the term is over)
	stopOnce    sync.Once
	changed     chan string
	fires       chan *command.Fire

	mu    sync.Mutex
	tasks map[string]*taskTimer
	slots []*taskTimer // slot -> timer (nil when free)
	free  []uint32

	stats Stats
}

type taskTimer struct {
	name    string
	slot    uint32
	version uint64
	sched   trigger.Schedule
	// catchup and window are the task's policy.catchup and
	// policy.catchupWindow: all a timer reads of the policy (keeping the
	// whole policy, its maps and lists, cost the leader ~0.3 KB a task).
	catchup string
	window  time.Duration
	keys    *model.KeyRenderer
	wm      int64 // last fire time accounted for (Unix ms)
	handle  wheel.Handle
	armed   bool
	// runsLeft is what the trigger's maxRuns leaves (-1: no maxRuns),
	// counted down as fires are proposed; the task state's count is the
	// one that holds, reread when the state machine notes the task (a
	// fire it did not count, the last run).
	runsLeft int
	jitter   time.Duration // trigger.jitter
	// holds are the blackout windows that apply to the task; moves says
	// its calendars move excluded fires (trigger.Moved).
	holds []*trigger.Blackout
	moves bool
}

// Stats are the scheduler's counters.
type Stats struct {
	WheelSize   int       `json:"wheelSize"`
	Tasks       int       `json:"tasks"`
	LoadedUntil time.Time `json:"loadedUntil"`
	Proposed    int64     `json:"proposed"`
	// Loaded is how long Run took to load the wheel (the pending instances
	// due within the horizon and every task's next fire) at the start of
	// the term; zero until then.
	Loaded time.Duration `json:"loaded"`
}

// New returns a scheduler; Run starts it.
func New(cfg Config, store Store, propose Proposer) *Scheduler {
	if cfg.Clock == nil {
		cfg.Clock = wheel.RealClock{}
	}
	if cfg.Horizon == 0 {
		cfg.Horizon = time.Hour
	}
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	if cfg.MaxBatch == 0 {
		cfg.MaxBatch = 4096
	}
	if cfg.MaxInFlight == 0 {
		cfg.MaxInFlight = 128
	}
	if cfg.MaxCatchup == 0 {
		cfg.MaxCatchup = 10000
	}
	if cfg.TaskPage == 0 {
		cfg.TaskPage = 1000
	}
	s := &Scheduler{
		cfg: cfg, store: store, propose: propose, log: cfg.Logger.Named("sched"),
		expired: make(chan []wheel.Expired, 64), changed: make(chan string, 1024),
		fires: make(chan *command.Fire, 256), tasks: map[string]*taskTimer{},
		stopped: make(chan struct{}),
	}
	s.loadedUntil.Store(-1 << 62)
	w := wheel.New(wheel.Config{Resolution: time.Millisecond, Start: cfg.Clock.Now()})
	s.driver = wheel.NewDriver(w, cfg.Clock, func(b []wheel.Expired) {
		// Once Run has stopped reading expiries the batch is moot (the
		// term is over); blocking here would keep the driver, and so Run,
		// from returning.
		select {
		case s.expired <- b:
		case <-s.stopped:
		}
	})
	return s
}

// TaskChanged tells the scheduler a task's definition changed. Safe from
// any goroutine; never blocks the caller for long.
func (s *Scheduler) TaskChanged(name string) {
	select {
	case s.changed <- name:
	default:
		go func() {
			select {
			case s.changed <- name:
			case <-s.stopped:
			}
		}()
	}
}

// Scheduled tells the scheduler a SCHEDULED instance exists. Those due
// beyond the loaded horizon are left for the horizon loader.
func (s *Scheduler) Scheduled(id uint64, dueMs int64) {
	if dueMs < s.loadedUntil.Load() {
		s.driver.Add(id, time.UnixMilli(dueMs))
	}
}

// ClockStepped tells the scheduler its clock's time jumped (a step of
// the wall clock the time base followed): the wheel reads the clock at
// once, and what came due fires now, each task by its catch-up policy,
// instead of at the wheel's next wake-up (up to a minute later). Safe from
// any goroutine.
func (s *Scheduler) ClockStepped() { s.driver.Wake() }

// Stats returns a snapshot of the scheduler's counters.
func (s *Scheduler) Stats() Stats {
	s.mu.Lock()
	st := s.stats
	st.Tasks = len(s.tasks)
	s.mu.Unlock()
	st.WheelSize = s.driver.Len()
	st.LoadedUntil = time.UnixMilli(s.loadedUntil.Load())
	return st
}

// Run loads the state and fires until ctx ends (the term is over). It is
// called once: a new term gets a new Scheduler.
func (s *Scheduler) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	// Cancel before waiting: on an early error return the goroutines only
	// stop once ctx is done.
	defer func() {
		cancel()
		s.stopOnce.Do(func() { close(s.stopped) })
		wg.Wait()
	}()
	wg.Add(2)
	go func() { defer wg.Done(); _ = s.driver.Run(ctx) }()
	go func() { defer wg.Done(); s.proposeLoop(ctx) }()

	start := time.Now()
	if err := s.loadHorizon(ctx); err != nil {
		return err
	}
	n, err := s.loadTasks(ctx)
	if err != nil {
		return err
	}
	took := time.Since(start)
	s.mu.Lock()
	s.stats.Loaded = took
	s.mu.Unlock()
	s.log.Info("scheduler started", "tasks", n, "wheel", s.driver.Len(),
		"loaded_until", time.UnixMilli(s.loadedUntil.Load()).UTC(), "took", took)

	// The loader runs on the injected clock, like the wheel, so that a
	// fake clock drives it too.
	load := s.cfg.Clock.NewTimer(loadInterval)
	defer load.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case batch := <-s.expired:
			s.onExpired(ctx, batch)
		case name := <-s.changed:
			s.onChanged(ctx, name)
		case <-load.C():
			if err := s.loadHorizon(ctx); err != nil {
				s.log.Error("loading due instances failed", "error", err)
			}
			load.Reset(loadInterval)
		}
	}
}

// loadTasks arms every task's timer, and proposes the fires its catch-up
// policy wants now, a page of tasks (TaskPage) at a time; between pages it serves
// what the wheel expired and what changed. So the first due fires (the
// delayed instances loadHorizon put in the wheel, the timers of tasks
// already loaded) are proposed in milliseconds, not after the whole
// reload: 100,000 tasks take seconds to read and arm, and the first fire
// after a leader change used to wait for all of them. It returns the
// number of tasks read.
//
// A change served before its task's page is read again with that page,
// a newer state; one served after it, as in steady state. An expiry is
// only ever of a task already armed.
func (s *Scheduler) loadTasks(ctx context.Context) (int, error) {
	n, after := 0, ""
	for {
		var out []command.TaskFire
		now := s.cfg.Clock.Now()
		next, err := s.store.TaskSchedulePage(after, s.cfg.TaskPage, func(ts *fsm.TaskSchedule) {
			out = s.reschedule(ts, now, out)
			n++
		})
		if err != nil {
			return n, fmt.Errorf("sched: load tasks: %w", err)
		}
		s.emit(ctx, out, nil)
		if next == "" || ctx.Err() != nil {
			return n, nil
		}
		after = next
		s.serveWaiting(ctx)
	}
}

// serveWaiting handles the expiries and changes already waiting, without
// waiting for more.
func (s *Scheduler) serveWaiting(ctx context.Context) {
	for {
		select {
		case batch := <-s.expired:
			s.onExpired(ctx, batch)
		case name := <-s.changed:
			s.onChanged(ctx, name)
		default:
			return
		}
	}
}

// loadInterval is how often Run checks whether due-index buckets have
// come within the horizon.
const loadInterval = time.Second

// loadHorizon pulls due-index buckets that have come within the horizon
// into the wheel. loadedUntil moves first, so an instance created during
// the scan reaches the wheel through Scheduled or the scan, maybe both
// (a duplicate fire is ignored by the state machine).
func (s *Scheduler) loadHorizon(ctx context.Context) error {
	from := s.loadedUntil.Load()
	until := fsm.DueBucket(s.cfg.Clock.Now().Add(s.cfg.Horizon).UnixMilli()) + fsm.DueBucketSpan.Milliseconds()
	if until <= from {
		return nil
	}
	s.loadedUntil.Store(until)
	n := 0
	err := s.store.ScanDue(max(from, 0), until, func(id uint64, dueMs int64) {
		s.driver.Add(id, time.UnixMilli(dueMs))
		n++
	})
	if err != nil {
		return fmt.Errorf("sched: scan due instances: %w", err)
	}
	if n > 0 {
		s.log.Debug("loaded due instances", "count", n, "until", time.UnixMilli(until).UTC())
	}
	return nil
}

func (s *Scheduler) onExpired(ctx context.Context, batch []wheel.Expired) {
	var tasks []command.TaskFire
	var ids []uint64
	now := s.cfg.Clock.Now()
	for _, e := range batch {
		if e.ID&taskBit == 0 {
			ids = append(ids, e.ID)
			continue
		}
		s.mu.Lock()
		slot := uint32(e.ID &^ taskBit)
		var tt *taskTimer
		if int(slot) < len(s.slots) {
			tt = s.slots[slot]
		}
		s.mu.Unlock()
		if tt == nil {
			continue
		}
		// The expiry may be stale: the task was rescheduled (and its timer
		// re-armed) after this batch was delivered. catchUp replaces
		// whatever timer is armed, so the task keeps exactly one.
		tasks = s.catchUp(tt, now, tasks)
	}
	s.emit(ctx, tasks, ids)
}

func (s *Scheduler) onChanged(ctx context.Context, name string) {
	ts, err := s.store.TaskSchedule(name)
	if errors.Is(err, model.ErrNotFound) {
		s.drop(name) // deleted
		return
	}
	if err != nil {
		// Keep the current timer; the next change or term reloads it.
		s.log.Error("reloading a changed task failed", "task", name, "error", err)
		return
	}
	out := s.reschedule(ts, s.cfg.Clock.Now(), nil)
	s.emit(ctx, out, nil)
}

func (s *Scheduler) drop(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	tt, ok := s.tasks[name]
	if !ok {
		return
	}
	if tt.armed {
		s.driver.Remove(tt.handle)
	}
	delete(s.tasks, name)
	s.slots[tt.slot] = nil
	s.free = append(s.free, tt.slot)
}

// reschedule (re)loads a task from its state-machine record: its timer is
// rebuilt from the watermark, so fire times missed while no leader
// watched are handled by the catch-up policy.
func (s *Scheduler) reschedule(ts *fsm.TaskSchedule, now time.Time, out []command.TaskFire) []command.TaskFire {
	t := &ts.Task
	sc, err := t.Schedule()
	if err != nil || sc == nil || t.Paused {
		if err != nil {
			s.log.Error("task has an unusable schedule", "task", t.Name, "error", err)
		}
		s.drop(t.Name)
		return out
	}
	s.mu.Lock()
	tt, ok := s.tasks[t.Name]
	if !ok {
		tt = &taskTimer{name: t.Name}
		if n := len(s.free); n > 0 {
			tt.slot = s.free[n-1]
			s.free = s.free[:n-1]
			s.slots[tt.slot] = tt
		} else {
			tt.slot = uint32(len(s.slots))
			s.slots = append(s.slots, tt)
		}
		s.tasks[t.Name] = tt
	}
	s.mu.Unlock()
	tt.version, tt.sched, tt.wm = t.Version, sc, ts.Watermark
	tt.catchup, tt.window = t.Policy.Catchup, t.Policy.CatchupWindow.Std()
	tt.runsLeft, tt.jitter = trigger.RunsLeft(t.Trigger.MaxRuns, t.Runs), t.Trigger.Jitter.Std()
	tt.keys, tt.holds = t.FireKeys(), nil
	if t.Resolved != nil {
		tt.holds = t.Resolved.Blackouts
	}
	tt.moves = len(t.Trigger.Calendars) > 0 && t.Trigger.OnExcluded != "" && t.Trigger.OnExcluded != trigger.OnExcludedSkip
	return s.catchUp(tt, now, out)
}

// catchUp fires the task's times in (watermark, now] according to its
// catch-up policy, then arms the timer for the next time after now. With
// a jitter a fire time t is due at t plus its jitter (trigger.Jitter):
// that moved time is what the wheel waits for and what the catch-up
// window is measured against, while the fire proposed is still t (its
// scheduled time, watermark and idempotency key). No more fires than the
// trigger's maxRuns leaves are proposed; with none left the task is not
// armed.
//
// While a blackout window holds the task (trigger.Held at now), the
// fires that became due since the hold began wait: the timer is armed
// for the hold's end, when this runs again and the task's catch-up
// policy decides what the hold held back, as after an outage.
func (s *Scheduler) catchUp(tt *taskTimer, now time.Time, out []command.TaskFire) []command.TaskFire {
	window := tt.window
	if window == 0 {
		window = time.Minute
	}
	// The window is (now-window, now]: a time exactly one window old has
	// missed it.
	windowStart := now.Add(-window)
	// At most keep due times are held; older ones are missed as newer ones
	// arrive, so a long outage never builds a long list.
	keep := 1 // latest
	switch tt.catchup {
	case "all":
		keep = max(s.cfg.MaxCatchup, 1)
	case "none":
		keep = 2 // enough to tell "one on-time fire" from "several"
	}
	type fire struct {
		at     time.Time     // scheduled
		jitter time.Duration // due at at+jitter
	}
	var due []fire
	var missed int64
	var missedFirst, missedLast time.Time
	more := false // missed more than counted
	heldBy := ""  // a window that held back one of the missed fires
	miss := func(t time.Time) {
		if missed == 0 {
			missedFirst = t
		}
		missed++
		missedLast = t
		if heldBy == "" {
			heldBy = tt.heldAt(t)
		}
	}
	t := time.Time{}
	var j time.Duration
	if tt.runsLeft != 0 {
		t = tt.sched.Next(time.UnixMilli(tt.wm))
	}
	hold, held := trigger.Held(tt.holds, now)
	for !t.IsZero() {
		var n time.Time
		n, j = tt.jitterAt(t, windowStart)
		if t.Add(j).After(now) || held && !t.Add(j).Before(hold.From) {
			break
		}
		if !t.Add(j).After(windowStart) {
			if missed >= maxCounted {
				// Pathologically far behind: stop counting; every time up
				// to the window's start is missed.
				more, missedLast = true, windowStart
				t = tt.sched.Next(windowStart)
				continue
			}
			miss(t)
		} else {
			if len(due) == keep {
				miss(due[0].at)
				due = append(due[:0], due[1:]...)
			}
			due = append(due, fire{t, j})
		}
		if n.IsZero() {
			n = tt.sched.Next(t)
		}
		t = n
	}
	// Normal operation: exactly one due time, the one just expired. At
	// the end of a hold, the fire due then is on time too.
	if tt.catchup == "none" && (len(due) > 1 || (len(due) == 1 && now.Sub(due[0].at.Add(due[0].jitter)) > firingSlack)) {
		var onTime []fire
		for _, d := range due {
			if len(tt.holds) > 0 && now.Sub(d.at.Add(d.jitter)) <= firingSlack {
				onTime = append(onTime, d)
				continue
			}
			miss(d.at)
		}
		due = onTime
	}
	if missed > 0 {
		out = append(out, command.TaskFire{Task: tt.name, Version: tt.version, Missed: missed, MissedMore: more,
			MissedFirst: missedFirst.UnixMilli(), MissedLast: missedLast.UnixMilli(), Held: heldBy})
		tt.wm = max(tt.wm, missedLast.UnixMilli())
	}
	if tt.runsLeft >= 0 && len(due) > tt.runsLeft {
		due = due[:tt.runsLeft] // the rest are past the trigger's end
	}
	for _, d := range due {
		tf := command.TaskFire{Task: tt.name, Version: tt.version, At: d.at.UnixMilli(), Key: tt.key(d.at),
			Date: tt.keys.Date(d.at), Jitter: d.jitter.Milliseconds(), Held: tt.heldAt(d.at.Add(d.jitter))}
		if tt.moves {
			if m := trigger.Moved(tt.sched, d.at); !m.IsZero() {
				tf.Moved = m.UnixMilli()
			}
		}
		out = append(out, tf)
		tt.wm = max(tt.wm, d.at.UnixMilli())
	}
	if tt.runsLeft > 0 {
		tt.runsLeft -= len(due)
	}
	if tt.armed {
		// Stale once it has fired; Remove then does nothing.
		s.driver.Remove(tt.handle)
		tt.armed = false
	}
	if !t.IsZero() && tt.runsLeft != 0 {
		due := t.Add(j)
		if held && !due.After(now) {
			due = hold.Until
		}
		tt.handle = s.driver.Add(taskBit|uint64(tt.slot), due)
		tt.armed = true
	}
	return out
}

// heldAt names the blackout window that held the task at t, a fire's
// due time ("" when none did).
func (tt *taskTimer) heldAt(t time.Time) string {
	if len(tt.holds) == 0 {
		return ""
	}
	h, _ := trigger.Held(tt.holds, t)
	return h.Window
}

// jitterAt returns the jitter of the fire at t, and the schedule's next
// fire time if it read it for that (the zero time otherwise: without a
// jitter, nothing more is computed). A time that no jitter moves past
// windowStart is missed whatever its jitter, so it is not computed.
func (tt *taskTimer) jitterAt(t, windowStart time.Time) (next time.Time, j time.Duration) {
	if tt.jitter == 0 || !t.Add(tt.jitter).After(windowStart) {
		return time.Time{}, 0
	}
	next = tt.sched.Next(t)
	return next, trigger.Jitter(tt.name, t, next, tt.jitter)
}

// maxCounted bounds the missed fire times counted one by one after an
// outage; beyond it a misfire says "more than".
const maxCounted = 1_000_000

// firingSlack is how late a fire may be and still count as on time for
// catchup "none" (a wheel wake-up is never exact).
const firingSlack = time.Second

// key is the fire's idempotency key: the state machine keeps one instance
// per key, which also stops a fire from duplicating a backfilled time.
func (tt *taskTimer) key(at time.Time) string { return tt.keys.Key(at) }

// emit queues fires for proposal, split into commands of MaxBatch.
func (s *Scheduler) emit(ctx context.Context, tasks []command.TaskFire, ids []uint64) {
	for len(tasks) > 0 || len(ids) > 0 {
		f := &command.Fire{}
		n := min(len(tasks), s.cfg.MaxBatch)
		f.Tasks, tasks = tasks[:n], tasks[n:]
		m := min(len(ids), s.cfg.MaxBatch-n)
		f.Instances, ids = ids[:m], ids[m:]
		select {
		case s.fires <- f:
		case <-ctx.Done():
			return
		}
	}
}

// proposeLoop proposes queued fires in order, merging what queued up while
// earlier proposals were in flight (group commit), with at most
// MaxInFlight proposals awaiting commit.
func (s *Scheduler) proposeLoop(ctx context.Context) {
	inflight := make(chan Future, s.cfg.MaxInFlight)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for fut := range inflight {
			res, err := fut.Wait()
			if err != nil {
				if ctx.Err() == nil {
					s.log.Warn("fire proposal failed", "error", err)
				}
				continue
			}
			var fr fsm.FireResult
			if err := res.Decode(&fr); err != nil {
				s.log.Error("fire rejected", "error", err)
				continue
			}
			if s.cfg.OnFired != nil {
				s.cfg.OnFired(&fr)
			}
		}
	}()
	defer func() { close(inflight); <-done }()
	size := func(f *command.Fire) int { return len(f.Tasks) + len(f.Instances) }
	var held *command.Fire // taken from the queue but too big to merge
	for {
		if ctx.Err() != nil {
			return
		}
		f := held
		held = nil
		if f == nil {
			select {
			case <-ctx.Done():
				return
			case f = <-s.fires:
			}
		}
	drain:
		for size(f) < s.cfg.MaxBatch {
			select {
			case g := <-s.fires:
				if size(f)+size(g) > s.cfg.MaxBatch {
					// Merging would exceed MaxBatch: g goes next, alone.
					held = g
					break drain
				}
				f.Tasks = append(f.Tasks, g.Tasks...)
				f.Instances = append(f.Instances, g.Instances...)
			default:
				break drain
			}
		}
		cmd, err := command.New(command.TypeFire, "", "scheduler", f)
		if err != nil {
			s.log.Error("encode fire", "error", err)
			continue
		}
		fut := s.propose(cmd)
		s.mu.Lock()
		s.stats.Proposed += int64(len(f.Tasks) + len(f.Instances))
		s.mu.Unlock()
		select {
		case inflight <- fut:
		case <-ctx.Done():
			return
		}
	}
}
