package sched

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/ax-scheduler/ax/fsm"
	"github.com/ax-scheduler/ax/fsm/command"
	"github.com/ax-scheduler/ax/internal/testkit"
	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/wheel"
)

// waitTimeout bounds every wait for a condition.
const waitTimeout = 5 * time.Second

// t0 is where the fake clock starts: a whole minute, so that cron seconds
// and due-index buckets line up with the offsets the tests use.
var t0 = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

// at returns t0 + d.
func at(d time.Duration) time.Time { return t0.Add(d) }

// secs returns n seconds.
func secs(n int) time.Duration { return time.Duration(n) * time.Second }

// seconds returns the offsets from..to seconds, inclusive.
func seconds(from, to int) []time.Duration {
	var out []time.Duration
	for i := from; i <= to; i++ {
		out = append(out, secs(i))
	}
	return out
}

// observer forwards the state machine's notifications to the schedulers
// running now: the FSM is opened before any scheduler exists, and a
// leader change replaces the scheduler under it.
type observer struct {
	mu     sync.Mutex
	scheds []*Scheduler
}

var _ fsm.Observer = (*observer)(nil)

func (o *observer) add(s *Scheduler) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.scheds = append(o.scheds, s)
}

func (o *observer) remove(s *Scheduler) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.scheds = slices.DeleteFunc(slices.Clone(o.scheds), func(x *Scheduler) bool { return x == s })
}

func (o *observer) running() []*Scheduler {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.scheds)
}

func (o *observer) TaskChanged(name string) {
	for _, s := range o.running() {
		s.TaskChanged(name)
	}
}

func (o *observer) Scheduled(id uint64, dueMs int64) {
	for _, s := range o.running() {
		s.Scheduled(id, dueMs)
	}
}

// InstanceChanged is the dispatcher's business, not the scheduler's.
func (o *observer) InstanceChanged(fsm.InstanceChange) {}

// doneFuture is a proposal that has already been applied.
type doneFuture struct {
	res *fsm.Result
	err error
}

func (f doneFuture) Wait() (*fsm.Result, error) { return f.res, f.err }

// harness is one replica's state machine, driven by a fake clock, with a
// log that applies every proposal at once as the next entry.
type harness struct {
	t     *testing.T
	clock *wheel.FakeClock
	fsm   *fsm.FSM
	obs   *observer
	log   hclog.Logger

	mu    sync.Mutex // one log entry at a time, in call order
	index uint64

	// clockMu makes the driver's arming of a timer atomic with respect to
	// advance (see anchoredClock).
	clockMu sync.RWMutex
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	h := &harness{t: t, clock: wheel.NewFakeClock(t0), obs: &observer{}, log: testLogger(t)}
	f, err := fsm.Open(fsm.Config{
		Path: filepath.Join(t.TempDir(), "fsm.db"), NoSync: true, Logger: h.log, Observer: h.obs,
	})
	if err != nil {
		t.Fatalf("fsm.Open: %v", err)
	}
	t.Cleanup(func() {
		if err := f.Close(); err != nil {
			t.Errorf("fsm.Close: %v", err)
		}
	})
	h.fsm = f
	return h
}

// testLogger logs everything, without times (the clock is fake), to
// the test's log.
func testLogger(t *testing.T) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{Level: hclog.Debug, Output: testkit.LogWriter(t), DisableTime: true})
}

// apply stamps c with the fake clock's time and node n1, as a leader
// does, and applies it as the next log entry.
func (h *harness) apply(c *command.Command) (*fsm.Result, error) { return h.applyAs(c, leaderView{}) }

// leaderView is how a leader reads and stamps time: its clock's offset
// from the fake clock, and whether it stamps no lower than the state
// machine's high-water mark of applied leader time (as the agent does).
type leaderView struct {
	skew     time.Duration
	clampHWM bool
	// step, if set, is added to the skew while the leader runs: a step
	// of its wall clock, which its timers do not see.
	step *atomic.Int64
}

// skewNow is lv's clock minus the fake clock now.
func (lv leaderView) skewNow() time.Duration {
	if lv.step == nil {
		return lv.skew
	}
	return lv.skew + time.Duration(lv.step.Load())
}

// stamp is the time lv's leader stamps into a command now.
func (h *harness) stamp(lv leaderView) int64 {
	now := h.clock.Now().Add(lv.skewNow()).UnixMilli()
	if lv.clampHWM {
		now = max(now, h.fsm.TimeHWM())
	}
	return now
}

// applyAs applies c as the next log entry, stamped by lv's leader.
func (h *harness) applyAs(c *command.Command, lv leaderView) (*fsm.Result, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	c.Now, c.Node = h.stamp(lv), "n1"
	h.index++
	out := h.fsm.ApplyBatch([]*raft.Log{{Index: h.index, Term: 1, Type: raft.LogCommand, Data: c.Encode()}})
	r, ok := out[0].(*fsm.Result)
	if !ok {
		return nil, fmt.Errorf("apply %s: response %T, want *fsm.Result", c.Type, out[0])
	}
	return r, nil
}

// propose is the schedulers' Proposer.
func (h *harness) propose(c *command.Command) Future { return h.proposer(leaderView{})(c) }

// proposer is the Proposer of lv's leader.
func (h *harness) proposer(lv leaderView) Proposer {
	return func(c *command.Command) Future {
		r, err := h.applyAs(c, lv)
		if err == nil && r.Err != nil {
			h.t.Errorf("%s rejected: %v", c.Type, r.Err)
		}
		return doneFuture{r, err}
	}
}

// do applies a command the way the API would, and fails the test if the
// state machine rejects it.
func (h *harness) do(typ command.Type, body any) *fsm.Result {
	h.t.Helper()
	c, err := command.New(typ, "", "tester", body)
	if err != nil {
		h.t.Fatal(err)
	}
	r, err := h.apply(c)
	if err != nil {
		h.t.Fatal(err)
	}
	if r.Err != nil {
		h.t.Fatalf("%s: %v", typ, r.Err)
	}
	return r
}

func (h *harness) putTask(t model.Task) {
	h.t.Helper()
	h.do(command.TypePutTask, command.PutTask{Task: t})
}
func (h *harness) pause(name string) {
	h.t.Helper()
	h.do(command.TypePauseTask, command.TaskRef{Name: name})
}
func (h *harness) resume(name string) {
	h.t.Helper()
	h.do(command.TypeResumeTask, command.TaskRef{Name: name})
}
func (h *harness) deleteTask(name string) {
	h.t.Helper()
	h.do(command.TypeDeleteTask, command.TaskRef{Name: name})
}

// submit creates delayed instances of task, due after each delay, and
// returns their ids.
func (h *harness) submit(task string, delays ...time.Duration) []uint64 {
	h.t.Helper()
	sub := command.Submit{Task: task}
	for _, d := range delays {
		sub.Items = append(sub.Items, command.SubmitItem{DelayMs: d.Milliseconds()})
	}
	r, err := h.apply(&command.Command{Type: command.TypeSubmit, Actor: "tester", Body: command.EncodeSubmit(&sub)})
	if err != nil {
		h.t.Fatal(err)
	}
	res, err := fsm.DecodeSubmitResult(r)
	if err != nil {
		h.t.Fatalf("submit: %v", err)
	}
	ids := make([]uint64, len(res.Instances))
	for i, in := range res.Instances {
		id, err := model.ParseID(in.ID)
		if err != nil {
			h.t.Fatal(err)
		}
		ids[i] = id
	}
	return ids
}

// start runs a new scheduler, as a new leader would, until the returned
// stop is called or the test ends.
func (h *harness) start(cfg Config) (*Scheduler, func()) {
	h.t.Helper()
	return h.startAs(cfg, leaderView{})
}

// startAs is start for a leader that reads and stamps time as lv says.
func (h *harness) startAs(cfg Config, lv leaderView) (*Scheduler, func()) {
	h.t.Helper()
	cfg.Clock, cfg.Logger = &anchoredClock{h: h, lv: lv}, h.log
	s := New(cfg, h.fsm, h.proposer(lv))
	h.obs.add(s)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	var once sync.Once
	stop := func() {
		h.t.Helper()
		once.Do(func() {
			h.obs.remove(s)
			cancel()
			select {
			case err := <-done:
				if err != nil {
					h.t.Errorf("Run() = %v, want nil", err)
				}
			case <-time.After(waitTimeout):
				h.t.Errorf("Run did not return within %v of its context ending", waitTimeout)
			}
		})
	}
	h.t.Cleanup(stop)
	return s, stop
}

// settle waits until every running scheduler sleeps on the fake clock, so
// that the next Advance cannot race a timer being armed: its horizon
// loader's timer within loadInterval, and its wheel driver's no later than
// next, the earliest fire or due time the test expects (a driver may wake
// earlier, to cascade a coarse slot, and sleeps at most a minute), or no
// driver timer at all when next is zero (an empty wheel). A scheduler that
// has settled has also finished starting up.
func (h *harness) settle(next time.Time) {
	h.t.Helper()
	loaders := len(h.obs.running())
	drivers := 0
	now := h.clock.Now()
	loaderBy, driverBy := now.Add(loadInterval), now.Add(time.Minute)
	if !next.IsZero() {
		drivers = loaders
		if next.Before(driverBy) {
			driverBy = next
		}
	}
	ok := func(d []time.Time) bool {
		if len(d) != loaders+drivers {
			return false
		}
		within := func(by time.Time) int {
			n := 0
			for _, x := range d {
				if x.After(now) && !x.After(by) {
					n++
				}
			}
			return n
		}
		if driverBy.Before(loaderBy) {
			return within(driverBy) >= drivers && within(loaderBy) == len(d)
		}
		return within(loaderBy) >= loaders && within(driverBy) == len(d)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	if err := h.clock.WaitDeadlines(ctx, ok); err != nil {
		h.t.Fatalf("at %s: schedulers did not settle (want %d loader timers by %s and %d driver timers by %s); armed: %v",
			off(now), loaders, off(loaderBy), drivers, off(driverBy), h.clock.Deadlines())
	}
}

// step moves the clock by d once the schedulers sleep (see settle).
func (h *harness) step(d time.Duration, next time.Time) {
	h.t.Helper()
	h.settle(next)
	h.advance(d)
}

// advance moves the clock by d.
func (h *harness) advance(d time.Duration) {
	h.clockMu.Lock()
	defer h.clockMu.Unlock()
	h.clock.Advance(d)
}

// anchoredClock is a scheduler's view of the fake clock. A wheel driver
// reads the clock, then arms a timer for the wait until its next deadline;
// with a real clock no time passes in between, but the test may move the
// fake clock there (settle cannot see a driver woken by an Add, still
// sleeping on a timer that looks right), and the driver would then sleep
// past its deadline. So the timers a driver arms are anchored at the time
// it last read, as if no time had passed.
type anchoredClock struct {
	h    *harness
	lv   leaderView // its skew: this leader's clock minus the fake clock
	mu   sync.Mutex
	read time.Time // the fake clock at the driver's last Now
}

var _ wheel.Clock = (*anchoredClock)(nil)

// calledByDriver reports whether the caller's caller runs in a wheel
// driver's goroutine.
func calledByDriver() bool {
	pcs := make([]uintptr, 8)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(3, pcs)])
	for {
		f, more := frames.Next()
		if strings.HasPrefix(f.Function, "github.com/ax-scheduler/ax/wheel.(*Driver).") {
			return true
		}
		if !more {
			return false
		}
	}
}

func (c *anchoredClock) Now() time.Time {
	now := c.h.clock.Now()
	if calledByDriver() {
		c.mu.Lock()
		c.read = now
		c.mu.Unlock()
	}
	return now.Add(c.lv.skewNow())
}

// arm calls arm with d, anchored at the driver's last read if the driver
// is the caller, while the clock cannot move.
func (c *anchoredClock) arm(d time.Duration, arm func(time.Duration)) {
	if !calledByDriver() {
		arm(d)
		return
	}
	c.h.clockMu.RLock()
	defer c.h.clockMu.RUnlock()
	c.mu.Lock()
	deadline := c.read.Add(d)
	c.mu.Unlock()
	arm(deadline.Sub(c.h.clock.Now()))
}

func (c *anchoredClock) NewTimer(d time.Duration) wheel.Timer {
	t := &anchoredTimer{c: c}
	c.arm(d, func(d time.Duration) { t.t = c.h.clock.NewTimer(d) })
	return t
}

type anchoredTimer struct {
	c *anchoredClock
	t wheel.Timer
}

func (t *anchoredTimer) C() <-chan time.Time { return t.t.C() }
func (t *anchoredTimer) Stop() bool          { return t.t.Stop() }

func (t *anchoredTimer) Reset(d time.Duration) bool {
	var was bool
	t.c.arm(d, func(d time.Duration) { was = t.t.Reset(d) })
	return was
}

// waitFor waits until cond holds, and fails the test if it does not
// within waitTimeout.
func (h *harness) waitFor(what string, cond func() bool) {
	h.t.Helper()
	if !h.await(cond) {
		h.t.Fatalf("at %s: timed out after %v waiting for %s", off(h.clock.Now()), waitTimeout, what)
	}
}

// await reports whether cond holds within waitTimeout, checking after
// every applied log entry and every millisecond (for the scheduler's own
// state).
func (h *harness) await(cond func() bool) bool {
	deadline := time.NewTimer(waitTimeout)
	defer deadline.Stop()
	poll := time.NewTicker(time.Millisecond)
	defer poll.Stop()
	for {
		changed := h.fsm.Changed()
		if cond() {
			return true
		}
		select {
		case <-changed:
		case <-poll.C:
		case <-deadline.C:
			return false
		}
	}
}

// instances returns the task's instances, earliest scheduled first.
func (h *harness) instances(task string) []model.Instance {
	h.t.Helper()
	var out []model.Instance
	flt := model.InstanceFilter{Task: task, Limit: 1000}
	for {
		l, err := h.fsm.ListInstances(flt)
		if err != nil {
			h.t.Fatalf("ListInstances(%s): %v", task, err)
		}
		out = append(out, l.Instances...)
		if l.NextCursor == "" {
			break
		}
		flt.Cursor = l.NextCursor
	}
	slices.SortStableFunc(out, func(a, b model.Instance) int { return a.ScheduledAt.Compare(b.ScheduledAt.Time) })
	return out
}

// waitInstances waits until the task has n instances and returns them;
// more than n fails at once.
func (h *harness) waitInstances(task string, n int) []model.Instance {
	h.t.Helper()
	var got []model.Instance
	h.waitFor(fmt.Sprintf("%d instances of %s", n, task), func() bool {
		got = h.instances(task)
		if len(got) > n {
			h.t.Fatalf("at %s: %s has %d instances scheduled at %v, want %d",
				off(h.clock.Now()), task, len(got), offsets(got), n)
		}
		return len(got) == n
	})
	return got
}

// misfires returns the task's misfire events.
func (h *harness) misfires(task string) []model.Event {
	h.t.Helper()
	ev, err := h.fsm.TaskEvents(task)
	if err != nil {
		h.t.Fatalf("TaskEvents(%s): %v", task, err)
	}
	return slices.DeleteFunc(ev.Events, func(e model.Event) bool { return e.Type != "misfire" })
}

// state returns an instance's state.
func (h *harness) state(id uint64) *model.Instance {
	h.t.Helper()
	in, err := h.fsm.GetInstance(id)
	if err != nil {
		h.t.Fatalf("GetInstance(%s): %v", model.FormatID(id), err)
	}
	return in
}

// off renders a fake-clock time as its offset from t0.
func off(t time.Time) string { return "t0+" + t.Sub(t0).String() }

// offsets returns the instances' scheduled times as offsets from t0.
func offsets(insts []model.Instance) []time.Duration {
	out := make([]time.Duration, len(insts))
	for i, in := range insts {
		out[i] = in.ScheduledAt.Sub(t0)
	}
	return out
}

// fired reports whether an instance has fired: it left SCHEDULED (for
// READY, or BLOCKED behind another instance of its task: admission is the
// state machine's business) with a fire time.
func fired(in *model.Instance) bool {
	return in.State != model.StateScheduled && !in.FiredAt.IsZero()
}

// checkFired checks that each instance has fired, no earlier than it was
// scheduled, and is the only one for its scheduled time.
func checkFired(t *testing.T, insts []model.Instance) {
	t.Helper()
	for i, in := range insts {
		if !fired(&in) {
			t.Errorf("instance %s at %s: state %s, fired at %v, want fired", in.ID, off(in.ScheduledAt.Time), in.State, in.FiredAt)
		}
		if in.FiredAt.Before(in.ScheduledAt.Time) {
			t.Errorf("instance %s fired early: firedAt %s, scheduledAt %s", in.ID, off(in.FiredAt.Time), off(in.ScheduledAt.Time))
		}
		if i > 0 && in.ScheduledAt.Equal(insts[i-1].ScheduledAt.Time) {
			t.Errorf("two instances scheduled at %s: %s and %s", off(in.ScheduledAt.Time), insts[i-1].ID, in.ID)
		}
	}
}

// misfireMessage is how the state machine describes n missed fire times.
func misfireMessage(n int, first, last time.Duration) string {
	return fmt.Sprintf("%d fire time(s) from %s to %s not fired", n,
		at(first).Format(model.TimeLayout), at(last).Format(model.TimeLayout))
}

func shellAction() model.Action { return model.Action{Type: model.ActionShell, Command: "true"} }

func cronTask(name, expr, catchup string) model.Task {
	return model.Task{
		Name:    name,
		Trigger: model.Trigger{Type: model.TriggerCron, Expression: expr},
		Action:  shellAction(),
		Policy:  model.Policy{Catchup: catchup, CatchupWindow: model.Duration(time.Minute)},
	}
}
