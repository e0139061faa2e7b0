package agent

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/api"
	"github.com/ax-scheduler/ax/internal/testkit"
	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/wheel"
)

// realStepClock is the real clock with a wall-clock offset a test changes
// while the agent runs: a step of the wall clock, which the monotonic
// time and the timers do not see.
type realStepClock struct {
	origin time.Time
	off    atomic.Int64
}

var _ MonotonicClock = (*realStepClock)(nil)

func newRealStepClock() *realStepClock                        { return &realStepClock{origin: time.Now()} }
func (c *realStepClock) Now() time.Time                       { return time.Now().Add(time.Duration(c.off.Load())) }
func (c *realStepClock) Monotonic() time.Duration             { return time.Since(c.origin) }
func (c *realStepClock) NewTimer(d time.Duration) wheel.Timer { return wheel.RealClock{}.NewTimer(d) }
func (c *realStepClock) Step(d time.Duration)                 { c.off.Add(int64(d)) }

// tickTask fires every second.
func tickTask(name, catchup string) *model.Task {
	return &model.Task{Name: name, Trigger: model.Trigger{Type: model.TriggerCron, Expression: "* * * * * *"},
		Action: model.Action{Type: model.ActionShell, Command: "true"}, Policy: model.Policy{Catchup: catchup, MaxConcurrency: 1000}}
}

// fireTimes returns the scheduled times of task's instances, sorted; it
// fails the test on a time seen twice.
func fireTimes(t *testing.T, a *Agent, task string) []time.Time {
	t.Helper()
	l, err := a.fsm.ListInstances(model.InstanceFilter{Task: task, Limit: 5000})
	if err != nil {
		t.Fatal(err)
	}
	var out []time.Time
	for _, in := range l.Instances {
		out = append(out, in.ScheduledAt.Time)
		if in.FiredAt.Before(in.ScheduledAt.Time) {
			t.Errorf("%s at %s fired early, at %s", task, in.ScheduledAt.Format(model.TimeLayout), in.FiredAt.Format(model.TimeLayout))
		}
	}
	slices.SortFunc(out, func(a, b time.Time) int { return a.Compare(b) })
	for i := 1; i < len(out); i++ {
		if out[i].Equal(out[i-1]) {
			t.Fatalf("%s fired %s twice", task, out[i].Format(model.TimeLayout))
		}
	}
	return out
}

// about reports whether a step measured between two readings of the
// real clock is d, within a quarter second. The measured step is the wall clock's move against the monotonic one
// between two readings, so it carries the delay of the second reading:
// 10 ms was too tight on a busy machine (a clean-clone CI run measured
// -2m59.985s and +10m0.017s); a quarter second still tells a step of
// minutes from anything else.
func about(got, d time.Duration) bool { return max(got-d, d-got) <= 250*time.Millisecond }

// newest is the last of sorted times (zero if none).
func newest(times []time.Time) time.Time {
	if len(times) == 0 {
		return time.Time{}
	}
	return times[len(times)-1]
}

// after counts the times after t.
func after(times []time.Time, t time.Time) int {
	n := 0
	for _, x := range times {
		if x.After(t) {
			n++
		}
	}
	return n
}

func misfires(t *testing.T, a *Agent, task string) int {
	t.Helper()
	ev, err := a.tasks.TaskEvents(context.Background(), task)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range ev.Events {
		if e.Type == "misfire" {
			n++
		}
	}
	return n
}

// TestAgent_ClockStep_SingleNode: on a one-node cluster, a step of the
// wall clock 3 min back neither stops firing (the time base holds the
// step and absorbs it at half speed: every second fires once, in order,
// none early) nor goes unseen (a clock_jump alert within 10 s, the step
// in /healthz, which stays 200). A forward step then moves the time base:
// the fire times it skipped follow each task's catch-up policy (all: the
// window's; latest: the newest), the others recorded as misfires; none
// fires ahead of the node's time.
func TestAgent_ClockStep_SingleNode(t *testing.T) {
	rc := newRealStepClock()
	tc := startCluster(t, 1, func(c *Config) { c.Clock = rc })
	a := tc.agents[0]
	ctx := context.Background()
	for _, task := range []*model.Task{tickTask("tick", "all"), tickTask("latest", "latest")} {
		if _, err := a.tasks.PutTask(ctx, api.Caller{Actor: "tester"}, task, api.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	testkit.Until(t, 10*time.Second, "3 fires", func() bool { return len(fireTimes(t, a, "tick")) >= 3 })

	// Back 3 min.
	last := newest(fireTimes(t, a, "tick"))
	stepped := time.Now()
	rc.Step(-3 * time.Minute)
	testkit.Until(t, 10*time.Second, "clock_jump firing", func() bool {
		_, ok := a.fsm.FiringAlert("clock_jump:n1")
		return ok
	})
	t.Logf("clock_jump raised %s after the step back", time.Since(stepped).Round(time.Millisecond))
	testkit.Until(t, 10*time.Second, "3 fires after the step back", func() bool { return after(fireTimes(t, a, "tick"), last) >= 3 })
	t.Logf("3 fires %s after the step back", time.Since(stepped).Round(time.Millisecond))
	h := a.cl.Health(ctx)
	if h.Problem != "" || h.Clock == nil || h.Clock.Jump == nil || !about(h.Clock.Jump.Step.Std(), -3*time.Minute) || h.Clock.Jump.Held <= 0 {
		t.Fatalf("healthz problem %q, clock %+v; want no problem and the step back held", h.Problem, h.Clock)
	}
	times := fireTimes(t, a, "tick")
	for i := 1; i < len(times); i++ {
		if d := times[i].Sub(times[i-1]); d != time.Second {
			t.Fatalf("fire times %s and %s are %s apart, want every second", times[i-1].Format(model.TimeLayout), times[i].Format(model.TimeLayout), d)
		}
	}
	if now := time.Now(); times[len(times)-1].After(now) {
		t.Fatalf("fired %s before it was due (now %s)", times[len(times)-1].Format(model.TimeLayout), now.Format(model.TimeLayout))
	}
	if n := misfires(t, a, "tick"); n != 0 {
		t.Fatalf("%d misfire events after the step back, want none", n)
	}

	// Forward 13 min: 10 min ahead of the time the node kept.
	before := a.now()
	rc.Step(13 * time.Minute)
	// Held until the clock monitor finds no member to compare with: at
	// once.
	var jumped time.Time
	testkit.Until(t, 2*time.Second, "the time base to take the forward step", func() bool {
		jumped = a.now()
		return jumped.Sub(before) >= 10*time.Minute
	})
	if d := jumped.Sub(before); d > 11*time.Minute {
		t.Fatalf("the time base moved %s, want the forward step less what it still held (a little over 10m)", d)
	}
	testkit.Until(t, 5*time.Second, "the catch-up after the forward step", func() bool {
		return misfires(t, a, "tick") > 0 && misfires(t, a, "latest") > 0 && after(fireTimes(t, a, "tick"), jumped.Add(-55*time.Second)) >= 55
	})
	if n := after(fireTimes(t, a, "latest"), before.Add(2*time.Second)) - after(fireTimes(t, a, "latest"), jumped.Add(-2*time.Second)); n != 0 {
		t.Errorf("latest: %d fire times in the skipped span, want none (only the newest fires)", n)
	}
	if latest := newest(fireTimes(t, a, "tick")); latest.After(a.now()) {
		t.Errorf("fired %s ahead of the node's time %s", latest.Format(model.TimeLayout), a.now().Format(model.TimeLayout))
	}
	if h := a.cl.Health(ctx); h.Problem != "" || h.Clock.Jump == nil || !about(h.Clock.Jump.Step.Std(), 13*time.Minute) {
		t.Fatalf("healthz problem %q, jump %+v; want the forward step and no problem", h.Problem, h.Clock.Jump)
	}
}

// TestAgent_ClockStep_LeaderForward: in a three-node cluster the leader's
// wall clock jumps 10 min forward. Its time base holds the step until the
// members' clocks are compared (no fire time fires ahead of the real
// clock, which the others keep), the clock monitor then finds it off and
// it hands leadership over; firing goes on every second, once, with no
// misfire, no time it stamped is ahead, and the cluster raises clock_jump
// for it within 10 s.
func TestAgent_ClockStep_LeaderForward(t *testing.T) {
	var mu sync.Mutex
	clocks := map[string]*realStepClock{}
	tc := startCluster(t, 3, func(c *Config) {
		rc := newRealStepClock()
		mu.Lock()
		clocks[c.NodeID] = rc
		mu.Unlock()
		c.Clock = rc
		// Clocks compared every 3s: a step is not left to the next
		// round (the wheel wakes every second).
		c.ClockInterval = 3 * time.Second
	})
	l := tc.leader()
	ctx := context.Background()
	if _, err := l.tasks.PutTask(ctx, api.Caller{Actor: "tester"}, tickTask("tick", "all"), api.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	testkit.Until(t, 10*time.Second, "3 fires", func() bool { return len(fireTimes(t, l, "tick")) >= 3 })
	stepped := time.Now()
	clocks[l.cfg.NodeID].Step(10 * time.Minute)
	var nl *Agent
	testkit.Until(t, 10*time.Second, "a new leader", func() bool {
		nl = tc.leader()
		return nl != nil && nl != l
	})
	t.Logf("%s handed leadership to %s %s after its clock jumped", l.cfg.NodeID, nl.cfg.NodeID, time.Since(stepped).Round(time.Millisecond))
	id := "clock_jump:" + l.cfg.NodeID
	testkit.Until(t, 10*time.Second-time.Since(stepped), id+" firing", func() bool {
		_, ok := nl.fsm.FiringAlert(id)
		return ok
	})
	t.Logf("%s raised %s after the step", id, time.Since(stepped).Round(time.Millisecond))
	last := newest(fireTimes(t, nl, "tick"))
	testkit.Until(t, 10*time.Second, "3 more fires", func() bool { return after(fireTimes(t, nl, "tick"), last) >= 3 })
	times := fireTimes(t, nl, "tick")
	now := time.Now()
	for i, at := range times {
		if at.After(now) {
			t.Fatalf("fire time %s exists at %s: fired early", at.Format(model.TimeLayout), now.Format(model.TimeLayout))
		}
		if i > 0 && at.Sub(times[i-1]) != time.Second {
			t.Fatalf("fire times %s and %s: want every second", times[i-1].Format(model.TimeLayout), at.Format(model.TimeLayout))
		}
	}
	if n := misfires(t, nl, "tick"); n != 0 {
		t.Fatalf("%d misfire events, want none", n)
	}
	// No time stamped by the stepped clock reached the state machine: the
	// leaders after it would stamp that time (the high-water mark) until
	// their clocks caught up, 10 min later.
	if hwm := time.UnixMilli(nl.fsm.TimeHWM()); hwm.After(time.Now().Add(time.Second)) {
		t.Fatalf("the latest leader time applied is %s ahead of the real clock", time.Until(hwm).Round(time.Millisecond))
	}
	if h := l.cl.Health(ctx); h.Clock == nil || h.Clock.Jump == nil || !about(h.Clock.Jump.Step.Std(), 10*time.Minute) {
		t.Fatalf("%s healthz clock %+v, want its forward step", l.cfg.NodeID, h.Clock)
	} else {
		t.Logf("%s /healthz: %s", l.cfg.NodeID, h.Clock.Jump.Reason)
	}
}
