package sched

import (
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/fsm/command"
	"github.com/ax-scheduler/ax/model"
)

// noop applies an entry stamped by lv's leader (any command a leader
// proposes through group commit: it moves the high-water mark).
func (h *harness) noop(lv leaderView) {
	h.t.Helper()
	c, err := command.New(command.TypeNoop, "", "tester", struct{}{})
	if err != nil {
		h.t.Fatal(err)
	}
	if _, err := h.applyAs(c, lv); err != nil {
		h.t.Fatal(err)
	}
}

// TestScheduler_Run_AfterSkewedLeader: a leader whose clock was off
// leaves a mark in the state machine (the high-water mark of applied
// leader time, or early fires); a correct successor, which stamps no time
// below the mark, fires by its own clock from the watermarks: never early,
// never skipping a time, never firing one twice.
func TestScheduler_Run_AfterSkewedLeader(t *testing.T) {
	const fast = 10 * time.Minute
	t.Run("a fast leader pushed the high-water mark", func(t *testing.T) {
		// It handed leadership over before its scheduler started (the
		// clock guard), but an entry it stamped was applied.
		h := firstThreeTicks(t)
		h.noop(leaderView{skew: fast})
		if got, want := h.fsm.TimeHWM(), at(secs(3)+fast).UnixMilli(); got != want {
			t.Fatalf("high-water mark %s, want %s", off(time.UnixMilli(got)), off(time.UnixMilli(want)))
		}
		h.startAs(Config{}, leaderView{clampHWM: true})
		for i := 4; i <= 10; i++ {
			h.step(time.Second, at(secs(i)))
			got := h.waitInstances("tick", i) // fails at once if a time fired early
			if want := seconds(1, i); !slices.Equal(offsets(got), want) {
				t.Fatalf("after %s: instances at %v, want %v", off(h.clock.Now()), offsets(got), want)
			}
		}
		got := h.instances("tick")
		checkFired(t, got)
		for _, in := range got[3:] {
			// Stamped at the mark: time in the state machine does not go
			// back, while fire times stay what the wheel says.
			if want := at(secs(3) + fast); !in.FiredAt.Equal(want) {
				t.Errorf("instance at %s: fired at %s, want the mark %s", off(in.ScheduledAt.Time), off(in.FiredAt.Time), off(want))
			}
		}
		if ev := h.misfires("tick"); len(ev) != 0 {
			t.Errorf("misfire events %v, want none", ev)
		}
	})
	t.Run("a slow leader is replaced", func(t *testing.T) {
		// While a leader 10 min slow leads, the task is silent (its next
		// time is 10 min away on that clock), and nothing it stamps goes
		// below the mark; its successor catches the silence up at once.
		h := firstThreeTicks(t)
		mark := h.fsm.TimeHWM()
		slow := leaderView{skew: -fast, clampHWM: true}
		_, stop := h.startAs(Config{}, slow)
		next := at(secs(4) + fast) // its wheel's next time, on the fake clock
		for i := 4; i <= 6; i++ {
			h.step(time.Second, next)
		}
		h.noop(slow)
		if got := h.fsm.TimeHWM(); got < mark {
			t.Fatalf("the slow leader moved the high-water mark back from %s to %s", off(time.UnixMilli(mark)), off(time.UnixMilli(got)))
		}
		if got := h.instances("tick"); len(got) != 3 {
			t.Fatalf("the slow leader fired %v", offsets(got))
		}
		h.settle(next)
		stop()
		h.start(Config{})
		got := h.waitInstances("tick", 6)
		if want := seconds(1, 6); !slices.Equal(offsets(got), want) {
			t.Fatalf("instances at %v, want %v", offsets(got), want)
		}
		for i := 7; i <= 8; i++ {
			h.step(time.Second, at(secs(i)))
			h.waitInstances("tick", i)
		}
		checkFired(t, h.instances("tick"))
		if ev := h.misfires("tick"); len(ev) != 0 {
			t.Errorf("misfire events %v, want none", ev)
		}
	})
	t.Run("a fast leader fired before anything stopped it", func(t *testing.T) {
		// What the guard prevents, and the bound on the damage when it
		// cannot: a leader 10 min fast that fires at once (it led before
		// its first clock comparison) fires the catch-up window early and
		// records the rest as missed. A correct successor then fires
		// nothing twice and skips nothing: the task is silent until its
		// clock passes the early fires, then fires on time.
		h := firstThreeTicks(t)
		_, stop := h.startAs(Config{}, leaderView{skew: fast})
		early := h.waitInstances("tick", 3+60)
		if first, last := early[3].ScheduledAt.Time, early[len(early)-1].ScheduledAt.Time; !first.Equal(at(secs(3)+fast-time.Minute+time.Second)) || !last.Equal(at(secs(3)+fast)) {
			t.Fatalf("early fires from %s to %s", off(first), off(last))
		}
		h.settle(at(secs(4) + fast))
		stop()
		h.startAs(Config{}, leaderView{clampHWM: true})
		h.step(time.Second, at(secs(4)+fast))
		if got := h.instances("tick"); len(got) != 63 {
			t.Fatalf("the successor fired again before its clock passed the early fires: %d instances", len(got))
		}
		h.advance(fast - time.Second) // to t0+3s+10min
		h.step(time.Second, at(secs(4)+fast))
		got := h.waitInstances("tick", 64)
		if last := got[len(got)-1].ScheduledAt.Time; !last.Equal(at(secs(4) + fast)) {
			t.Fatalf("next fire at %s, want %s", off(last), off(at(secs(4)+fast)))
		}
		checkFired(t, got)
		var missed int64
		for _, e := range h.misfires("tick") {
			missed += misfireCount(t, e)
		}
		if want := int64(fast/time.Second) - 60; missed != want {
			t.Errorf("%d fire times recorded missed, want %d (none lost silently)", missed, want)
		}
	})
}

// misfireCount reads the number of fire times a misfire event records.
func misfireCount(t *testing.T, e model.Event) int64 {
	t.Helper()
	var n int64
	for _, r := range e.Message {
		if r < '0' || r > '9' {
			break
		}
		n = n*10 + int64(r-'0')
	}
	if n == 0 {
		t.Fatalf("misfire event without a count: %q", e.Message)
	}
	return n
}

// firstThreeTicks is a harness whose correct leader fired a per-second
// cron (catch-up all) at seconds 1-3 and then stopped leading.
func firstThreeTicks(t *testing.T) *harness {
	t.Helper()
	h := newHarness(t)
	h.putTask(cronTask("tick", "* * * * * *", "all"))
	_, stop := h.start(Config{})
	for i := 1; i <= 3; i++ {
		h.step(time.Second, at(secs(i)))
		h.waitInstances("tick", i)
	}
	h.settle(at(secs(4)))
	stop()
	return h
}

// TestScheduler_ClockStepped: the leader's wall clock jumps 10m30s
// forward mid-term (the agent's time base takes a forward step on a node
// with no member to compare clocks with, or after a suspend). Told so,
// the wheel reads the clock at once, though its timer is a minute away,
// and each per-minute task's skipped fire times follow its catch-up
// policy: all (window 5m) fires the 5 within the window, latest the
// newest, none nothing, the rest recorded as misfires, none lost
// silently and none fired twice.
func TestScheduler_ClockStepped(t *testing.T) {
	h := newHarness(t)
	tasks := map[string]struct {
		fired  []time.Duration
		missed int64
	}{
		"all":    {[]time.Duration{6 * time.Minute, 7 * time.Minute, 8 * time.Minute, 9 * time.Minute, 10 * time.Minute}, 5},
		"latest": {[]time.Duration{10 * time.Minute}, 9},
		"none":   {nil, 10},
	}
	for name := range tasks {
		task := cronTask(name, "0 * * * * *", name)
		task.Policy.CatchupWindow = model.Duration(5 * time.Minute)
		h.putTask(task)
	}
	var step atomic.Int64
	s, _ := h.startAs(Config{}, leaderView{step: &step})
	h.settle(at(time.Minute)) // asleep until the first minute
	step.Store(int64(10*time.Minute + 30*time.Second))
	s.ClockStepped()
	h.waitFor("the catch-up after the step", func() bool {
		return len(h.instances("all")) == 5 && len(h.instances("latest")) == 1 && len(h.misfires("none")) == 1
	})
	for name, want := range tasks {
		got := h.instances(name)
		checkFired(t, got)
		if !slices.Equal(offsets(got), want.fired) {
			t.Errorf("%s: instances at %v, want %v", name, offsets(got), want.fired)
		}
		var missed int64
		for _, e := range h.misfires(name) {
			missed += misfireCount(t, e)
		}
		if missed != want.missed {
			t.Errorf("%s: %d fire times recorded missed, want %d", name, missed, want.missed)
		}
	}
}
