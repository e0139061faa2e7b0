package sched

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/model"
)

// TestScheduler_Run_FiresEverySecond: a per-second task fires once per
// second, on time, whatever its catch-up policy.
func TestScheduler_Run_FiresEverySecond(t *testing.T) {
	for _, catchup := range []string{"all", "latest", "none"} {
		t.Run(catchup, func(t *testing.T) {
			h := newHarness(t)
			h.putTask(cronTask("tick", "* * * * * *", catchup))
			_, stop := h.start(Config{})
			for i := 1; i <= 10; i++ {
				h.step(time.Second, at(secs(i)))
				got := h.waitInstances("tick", i)
				if want := seconds(1, i); !slices.Equal(offsets(got), want) {
					t.Fatalf("after %s: instances at %v, want %v", off(h.clock.Now()), offsets(got), want)
				}
			}
			h.settle(at(secs(11)))
			stop()
			got := h.instances("tick")
			if want := seconds(1, 10); !slices.Equal(offsets(got), want) {
				t.Errorf("instances at %v, want %v", offsets(got), want)
			}
			checkFired(t, got)
			for _, in := range got {
				if !in.FiredAt.Equal(in.ScheduledAt.Time) {
					t.Errorf("instance at %s fired at %s, want on time", off(in.ScheduledAt.Time), off(in.FiredAt.Time))
				}
				if in.Source != model.SourceCron {
					t.Errorf("instance at %s: source %q, want %q", off(in.ScheduledAt.Time), in.Source, model.SourceCron)
				}
			}
			if ev := h.misfires("tick"); len(ev) != 0 {
				t.Errorf("misfire events %v, want none", ev)
			}
		})
	}
}

// TestScheduler_Run_CatchUp: a new leader handles the fire times missed
// while no scheduler ran according to the task's catch-up policy, records
// the rest as one misfire event, and then fires on time again.
func TestScheduler_Run_CatchUp(t *testing.T) {
	const before = 3 // fires before the downtime, at t0+1s..t0+3s
	cases := []struct {
		name     string
		catchup  string
		cfg      Config
		downtime time.Duration
		want     []time.Duration // fired by the new leader when it starts
		missed   int             // fire times recorded as a misfire (0: no event)
		from, to time.Duration   // first and last of them
		more     bool            // the count is a lower bound
	}{
		{name: "all", catchup: "all", downtime: 30 * time.Second,
			want: seconds(4, 33)},
		{name: "latest", catchup: "latest", downtime: 30 * time.Second,
			want: seconds(33, 33), missed: 29, from: secs(4), to: secs(32)},
		{name: "none", catchup: "none", downtime: 30 * time.Second,
			missed: 30, from: secs(4), to: secs(33)},
		// The window is (now-catchupWindow, now]: a time exactly
		// catchupWindow old has missed it, so a per-second task catches up
		// 60 times, not 61.
		{name: "all beyond the window", catchup: "all", downtime: 5 * time.Minute,
			want: seconds(244, 303), missed: 240, from: secs(4), to: secs(243)},
		{name: "latest beyond the window", catchup: "latest", downtime: 5 * time.Minute,
			want: seconds(303, 303), missed: 299, from: secs(4), to: secs(302)},
		{name: "none beyond the window", catchup: "none", downtime: 5 * time.Minute,
			missed: 300, from: secs(4), to: secs(303)},
		// Over a million times beyond the window are not counted one by
		// one; the times within it are still handled by the policy.
		{name: "latest after a very long outage", catchup: "latest", downtime: secs(1_000_100),
			want: seconds(1_000_103, 1_000_103), missed: 1_000_059, more: true, from: secs(4), to: secs(1_000_102)},
		{name: "all beyond MaxCatchup", catchup: "all", cfg: Config{MaxCatchup: 10}, downtime: 30 * time.Second,
			want: seconds(24, 33), missed: 20, from: secs(4), to: secs(23)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.putTask(cronTask("tick", "* * * * * *", tc.catchup))
			_, stop := h.start(tc.cfg)
			for i := 1; i <= before; i++ {
				h.step(time.Second, at(secs(i)))
				h.waitInstances("tick", i)
			}
			h.settle(at(secs(before + 1)))
			stop()

			h.advance(tc.downtime)
			restart := h.clock.Now()
			_, stop = h.start(tc.cfg)
			events := 0
			if tc.missed > 0 {
				events = 1
			}
			caughtUp := func() bool {
				return len(h.instances("tick")) >= before+len(tc.want) && len(h.misfires("tick")) >= events
			}
			if !h.await(caughtUp) {
				t.Fatalf("at %s: no catch-up within %v: instances at %v, misfire events %v",
					off(restart), waitTimeout, offsets(h.instances("tick")), h.misfires("tick"))
			}
			got := h.instances("tick")
			if want := append(seconds(1, before), tc.want...); !slices.Equal(offsets(got), want) {
				t.Errorf("instances at %v, want %v", offsets(got), want)
			}
			for _, in := range got[before:] {
				if !in.FiredAt.Equal(restart) {
					t.Errorf("instance at %s fired at %s, want %s (when the new leader started)",
						off(in.ScheduledAt.Time), off(in.FiredAt.Time), off(restart))
				}
			}
			ev := h.misfires("tick")
			if len(ev) != events {
				t.Fatalf("misfire events %v, want %d", ev, events)
			}
			if events == 1 {
				want := misfireMessage(tc.missed, tc.from, tc.to)
				if tc.more {
					want = "more than " + want
				}
				if !strings.HasPrefix(ev[0].Message, want) {
					t.Errorf("misfire message %q, want it to start with %q", ev[0].Message, want)
				}
				if !ev[0].Time.Equal(restart) {
					t.Errorf("misfire recorded at %s, want %s", off(ev[0].Time.Time), off(restart))
				}
			}

			// Then it fires on time again.
			next := restart.Add(time.Second)
			h.step(time.Second, next)
			got = h.waitInstances("tick", len(got)+1)
			if last := got[len(got)-1]; !last.ScheduledAt.Equal(next) || !last.FiredAt.Equal(next) {
				t.Errorf("after catching up: fired %s at %s, want %s on time",
					off(last.ScheduledAt.Time), off(last.FiredAt.Time), off(next))
			}
			h.settle(next.Add(time.Second))
			stop()
			checkFired(t, h.instances("tick"))
			if got := h.misfires("tick"); len(got) != events {
				t.Errorf("misfire events %v, want %d", got, events)
			}
		})
	}
}

// TestScheduler_Run_Pause: a paused task does not fire, not even under a
// new leader, and resuming it does not replay the paused span.
func TestScheduler_Run_Pause(t *testing.T) {
	h := newHarness(t)
	h.putTask(cronTask("tick", "* * * * * *", "all"))
	s, stop := h.start(Config{})
	for i := 1; i <= 3; i++ {
		h.step(time.Second, at(secs(i)))
		h.waitInstances("tick", i)
	}
	h.settle(at(secs(4)))
	h.pause("tick") // at t0+3s
	h.waitFor("the timer dropped", func() bool { return s.Stats().Tasks == 0 })
	// Removing a timer does not wake the driver: it still sleeps until t0+4s.
	h.step(time.Second, at(secs(4)))
	for i := 5; i <= 6; i++ {
		h.step(time.Second, time.Time{})
	}
	// A leader change while paused.
	stop()
	s, _ = h.start(Config{})
	for i := 7; i <= 10; i++ {
		h.step(time.Second, time.Time{})
	}
	if got := s.Stats().Tasks; got != 0 {
		t.Errorf("Stats().Tasks = %d while paused, want 0", got)
	}
	if got := h.instances("tick"); len(got) != 3 {
		t.Fatalf("while paused: instances at %v, want %v", offsets(got), seconds(1, 3))
	}

	h.resume("tick") // at t0+10s
	h.waitFor("the timer armed", func() bool { return s.Stats().Tasks == 1 })
	for i := 11; i <= 13; i++ {
		h.step(time.Second, at(secs(i)))
		h.waitInstances("tick", i-7)
	}
	got := h.instances("tick")
	if want := append(seconds(1, 3), seconds(11, 13)...); !slices.Equal(offsets(got), want) {
		t.Errorf("instances at %v, want %v (none in the paused span)", offsets(got), want)
	}
	checkFired(t, got)
	if ev := h.misfires("tick"); len(ev) != 0 {
		t.Errorf("misfire events %v, want none: a pause is not a misfire", ev)
	}
}

// TestScheduler_Run_LeaderChanges: whatever the leaders do, each fire time
// creates exactly one instance.
func TestScheduler_Run_LeaderChanges(t *testing.T) {
	t.Run("restart twice without time passing", func(t *testing.T) {
		h := newHarness(t)
		h.putTask(cronTask("tick", "* * * * * *", "all"))
		_, stop := h.start(Config{})
		for i := 1; i <= 3; i++ {
			h.step(time.Second, at(secs(i)))
			h.waitInstances("tick", i)
		}
		h.settle(at(secs(4)))
		stop()
		h.advance(5 * time.Second)
		_, stop = h.start(Config{})
		h.waitInstances("tick", 8) // caught up t0+4s..t0+8s
		h.settle(at(secs(9)))
		stop()
		_, stop = h.start(Config{})
		h.settle(at(secs(9)))
		stop()
		_, _ = h.start(Config{})
		// Fires are proposed in order: once t0+9s exists, anything the
		// last two leaders proposed on starting has been applied.
		h.step(time.Second, at(secs(9)))
		got := h.waitInstances("tick", 9)
		if want := seconds(1, 9); !slices.Equal(offsets(got), want) {
			t.Errorf("instances at %v, want %v", offsets(got), want)
		}
		checkFired(t, got)
	})
	t.Run("two leaders at once", func(t *testing.T) {
		// An old leader that has not noticed it lost the lease keeps
		// proposing alongside the new one.
		h := newHarness(t)
		h.putTask(cronTask("tick", "* * * * * *", "latest"))
		_, stopOld := h.start(Config{})
		h.step(time.Second, at(secs(1)))
		h.waitInstances("tick", 1)
		h.start(Config{})
		for i := 2; i <= 6; i++ {
			h.step(time.Second, at(secs(i)))
			h.waitInstances("tick", i)
		}
		h.settle(at(secs(7)))
		stopOld()
		for i := 7; i <= 8; i++ {
			h.step(time.Second, at(secs(i)))
			h.waitInstances("tick", i)
		}
		h.settle(at(secs(9)))
		got := h.instances("tick")
		if want := seconds(1, 8); !slices.Equal(offsets(got), want) {
			t.Errorf("instances at %v, want %v", offsets(got), want)
		}
		checkFired(t, got)
		if ev := h.misfires("tick"); len(ev) != 0 {
			t.Errorf("misfire events %v, want none", ev)
		}
	})
}

// TestScheduler_Run_DelayedInstances: submissions fire when the
// clock reaches their due time, never before; one due beyond the horizon
// is pulled into the wheel by the horizon loader, also by a new leader.
func TestScheduler_Run_DelayedInstances(t *testing.T) {
	const horizon = time.Hour
	h := newHarness(t)
	h.putTask(model.Task{Name: "jobs", Trigger: model.Trigger{Type: model.TriggerEvent}, Action: shellAction()})
	s, stop := h.start(Config{Horizon: horizon})
	h.settle(time.Time{})
	h.waitFor("the start load timed", func() bool { return s.Stats().Loaded > 0 })

	due := []time.Duration{time.Second, 2 * time.Second, 90 * time.Minute}
	ids := h.submit("jobs", due...)
	// The first two are within the horizon and reach the wheel at once.
	h.waitFor("two timers in the wheel", func() bool { return s.Stats().WheelSize == 2 })

	// wantFired checks which instances have fired.
	wantFired := func(want ...bool) {
		t.Helper()
		for i, id := range ids {
			if in := h.state(id); fired(in) != want[i] {
				t.Errorf("at %s: instance due at %s is %s (fired at %v), want fired %v",
					off(h.clock.Now()), off(in.ScheduledAt.Time), in.State, in.FiredAt, want[i])
			}
		}
	}
	waitFired := func(i int) {
		t.Helper()
		h.waitFor("instance due at "+off(at(due[i]))+" to fire", func() bool { return fired(h.state(ids[i])) })
	}

	wantFired(false, false, false)
	h.step(time.Second, at(due[0]))
	waitFired(0)
	h.settle(at(due[1]))
	wantFired(true, false, false)
	h.step(time.Second, at(due[1]))
	waitFired(1)

	// The last is due beyond the horizon: it stays out of the wheel until
	// the loader reaches its due-index bucket, at t0+30m (90m - horizon).
	last := at(due[2])
	loaded := func() bool { return s.Stats().LoadedUntil.After(last) }
	h.step(10*time.Minute-2*time.Second, time.Time{}) // to t0+10m
	for now := 10 * time.Minute; now < 90*time.Minute; now += 10 * time.Minute {
		next := time.Time{}
		if now >= 30*time.Minute {
			next = last
		}
		h.settle(next) // the loader has run at this time
		if now >= 30*time.Minute {
			if !loaded() {
				t.Fatalf("at %s: loaded until %s, want past %s", off(h.clock.Now()), off(s.Stats().LoadedUntil), off(last))
			}
			if got := s.Stats().WheelSize; got != 1 {
				t.Errorf("at %s: Stats().WheelSize = %d, want 1", off(h.clock.Now()), got)
			}
		} else {
			if loaded() {
				t.Errorf("at %s: loaded until %s, want not yet past %s", off(h.clock.Now()), off(s.Stats().LoadedUntil), off(last))
			}
			if got := s.Stats().WheelSize; got != 0 {
				t.Errorf("at %s: Stats().WheelSize = %d, want 0", off(h.clock.Now()), got)
			}
		}
		wantFired(true, true, false)
		if now == 40*time.Minute {
			// A new leader loads it when it starts.
			stop()
			s, stop = h.start(Config{Horizon: horizon})
			h.settle(last)
			if !loaded() {
				t.Fatalf("new leader: loaded until %s, want past %s", off(s.Stats().LoadedUntil), off(last))
			}
		}
		step := 10 * time.Minute
		if now+step == 90*time.Minute {
			step -= time.Millisecond
		}
		h.step(step, next)
	}
	// At 1ms before it is due.
	h.settle(last)
	wantFired(true, true, false)
	h.step(time.Millisecond, last)
	waitFired(2)
	h.settle(time.Time{})

	for i, id := range ids {
		in := h.state(id)
		if !in.FiredAt.Equal(at(due[i])) {
			t.Errorf("instance due at %s fired at %s, want on time", off(in.ScheduledAt.Time), off(in.FiredAt.Time))
		}
		if in.Source != model.SourceDelay {
			t.Errorf("instance due at %s: source %q, want %q", off(in.ScheduledAt.Time), in.Source, model.SourceDelay)
		}
	}
	checkFired(t, h.instances("jobs"))
}

// TestScheduler_Run_TaskChanges: an update reschedules a task from the
// update on; a delete stops it.
func TestScheduler_Run_TaskChanges(t *testing.T) {
	cases := []struct {
		name    string
		update  func(*model.Task)
		want    []time.Duration // after t0+1s..t0+3s, up to t0+12s
		after   time.Duration   // the next fire time after t0+12s
		version uint64          // of the instances after the update
	}{
		{name: "new schedule", update: func(tk *model.Task) { tk.Trigger.Expression = "*/5 * * * * *" },
			want: []time.Duration{secs(5), secs(10)}, after: secs(15), version: 2},
		{name: "same schedule", update: func(tk *model.Task) { tk.Labels = map[string]string{"team": "b"} },
			want: seconds(4, 12), after: secs(13), version: 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			tk := cronTask("tick", "* * * * * *", "latest")
			h.putTask(tk)
			s, _ := h.start(Config{})
			for i := 1; i <= 3; i++ {
				h.step(time.Second, at(secs(i)))
				h.waitInstances("tick", i)
			}
			h.settle(at(secs(4)))
			tc.update(&tk)
			h.putTask(tk) // at t0+3s
			nextAfter := func(now time.Duration) time.Time {
				for _, w := range tc.want {
					if w > now {
						return at(w)
					}
				}
				return at(tc.after)
			}
			for i := 4; i <= 12; i++ {
				h.step(time.Second, nextAfter(secs(i-1)))
				n := 3
				for _, w := range tc.want {
					if w <= secs(i) {
						n++
					}
				}
				h.waitInstances("tick", n)
			}
			h.settle(nextAfter(secs(12)))
			if got := s.Stats().WheelSize; got != 1 {
				t.Errorf("Stats().WheelSize = %d, want 1: the old timer is dropped", got)
			}
			got := h.instances("tick")
			if want := append(seconds(1, 3), tc.want...); !slices.Equal(offsets(got), want) {
				t.Errorf("instances at %v, want %v", offsets(got), want)
			}
			checkFired(t, got)
			for _, in := range got[3:] {
				if in.TaskVersion != tc.version {
					t.Errorf("instance at %s: task version %d, want %d", off(in.ScheduledAt.Time), in.TaskVersion, tc.version)
				}
			}

			h.deleteTask("tick") // at t0+12s
			h.waitFor("the timer dropped", func() bool { return s.Stats().Tasks == 0 })
			// The driver still sleeps until the removed timer.
			h.step(nextAfter(secs(12)).Sub(h.clock.Now()), nextAfter(secs(12)))
			for h.clock.Now().Before(at(secs(30))) {
				h.step(time.Second, time.Time{})
			}
			h.settle(time.Time{})
			if got := s.Stats().WheelSize; got != 0 {
				t.Errorf("after delete: Stats().WheelSize = %d, want 0", got)
			}
			if got := h.instances("tick"); len(got) != 3+len(tc.want) {
				t.Errorf("after delete: instances at %v, want %v", offsets(got), append(seconds(1, 3), tc.want...))
			}
		})
	}
}

// TestScheduler_Run_IntervalAndOnce: interval and once triggers fire at
// their times, once triggers only once, also across a leader change.
func TestScheduler_Run_IntervalAndOnce(t *testing.T) {
	startAt := model.Time{Time: at(1500 * time.Millisecond)}
	onceAt := model.Time{Time: at(3 * time.Second)}
	ms := func(v ...int) []time.Duration {
		out := make([]time.Duration, len(v))
		for i, x := range v {
			out[i] = time.Duration(x) * time.Millisecond
		}
		return out
	}
	cases := []struct {
		task    string
		trigger model.Trigger
		source  string
		want    []time.Duration // up to t0+12s
		after   time.Duration   // the next fire time after t0+12s (0: none)
	}{
		{task: "every-2s", trigger: model.Trigger{Type: model.TriggerInterval, Every: model.Duration(2 * time.Second)},
			source: model.SourceInterval, want: ms(2000, 4000, 6000, 8000, 10000, 12000), after: secs(14)},
		{task: "every-3s-from-1.5s", trigger: model.Trigger{Type: model.TriggerInterval, Every: model.Duration(3 * time.Second), StartAt: &startAt},
			source: model.SourceInterval, want: ms(1500, 4500, 7500, 10500), after: 13500 * time.Millisecond},
		{task: "once-at-3s", trigger: model.Trigger{Type: model.TriggerOnce, At: &onceAt},
			source: model.SourceOnce, want: ms(3000)},
		{task: "once-after-5s", trigger: model.Trigger{Type: model.TriggerOnce, Delay: model.Duration(5 * time.Second)},
			source: model.SourceOnce, want: ms(5000)},
	}
	h := newHarness(t)
	for _, tc := range cases {
		h.putTask(model.Task{Name: tc.task, Trigger: tc.trigger, Action: shellAction(), Policy: model.Policy{Catchup: "latest"}})
	}
	// next returns the earliest fire time of any task after now.
	next := func(now time.Duration) time.Time {
		var n time.Duration
		for _, tc := range cases {
			for _, w := range append(slices.Clone(tc.want), tc.after) {
				if w > now && (n == 0 || w < n) {
					n = w
				}
			}
		}
		return at(n)
	}

	_, stop := h.start(Config{})
	const step = 500 * time.Millisecond
	for now := step; now <= 12*time.Second; now += step {
		h.step(step, next(now-step))
		for _, tc := range cases {
			n := 0
			for _, w := range tc.want {
				if w <= now {
					n++
				}
			}
			h.waitInstances(tc.task, n)
		}
		if now == 10*time.Second {
			// A leader change must not fire the once tasks again.
			h.settle(next(now))
			stop()
			h.start(Config{})
		}
	}
	h.settle(next(12 * time.Second))
	for _, tc := range cases {
		got := h.instances(tc.task)
		if !slices.Equal(offsets(got), tc.want) {
			t.Errorf("%s: instances at %v, want %v", tc.task, offsets(got), tc.want)
		}
		checkFired(t, got)
		for _, in := range got {
			if !in.FiredAt.Equal(in.ScheduledAt.Time) {
				t.Errorf("%s: instance at %s fired at %s, want on time", tc.task, off(in.ScheduledAt.Time), off(in.FiredAt.Time))
			}
			if in.Source != tc.source {
				t.Errorf("%s: instance at %s: source %q, want %q", tc.task, off(in.ScheduledAt.Time), in.Source, tc.source)
			}
		}
	}
}
