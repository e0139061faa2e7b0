package clock

import (
	"strings"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/wheel"
)

// TestStepState: how the time base (wall clock + hold) goes through steps
// of the wall clock: held at once; then, with no other voter (alone), a
// forward step is taken and a step back absorbed at half speed (one of
// more than maxHold is followed back); with other voters the hold waits
// for the clock monitor's verdict, and without one by verifyWait ends as
// alone.
func TestStepState(t *testing.T) {
	p := stepParams{bound: time.Second, verifyWait: 10 * time.Second}
	const (
		observe = iota
		alone
		verdict
	)
	type reading struct {
		op         int
		mono, step time.Duration // monotonic time; the wall clock's total step so far
		wantHold   time.Duration
		wantKind   stepKind // -1: no event
	}
	none := stepKind(-1)
	cases := []struct {
		name  string
		reads []reading
	}{
		{"drift within the bound is no step", []reading{
			{observe, 0, 0, 0, none},
			{observe, time.Second, 900 * time.Millisecond, 0, none},
			{observe, 2 * time.Second, -900 * time.Millisecond, 0, none},
			{alone, 2 * time.Second, -900 * time.Millisecond, 0, none},
		}},
		{"alone, back 3m: held, absorbed at half speed", []reading{
			{observe, 0, 0, 0, none},
			{observe, time.Second, -3 * time.Minute, 3 * time.Minute, stepSeen},
			{alone, time.Second, -3 * time.Minute, 3 * time.Minute, stepAlone},
			{observe, time.Second + time.Minute, -3 * time.Minute, 150 * time.Second, none},
			{observe, time.Second + 6*time.Minute - time.Millisecond, -3 * time.Minute, time.Millisecond / 2, none},
			{observe, time.Second + 6*time.Minute, -3 * time.Minute, 0, stepAbsorbed},
			{observe, time.Second + 7*time.Minute, -3 * time.Minute, 0, none},
		}},
		{"alone, forward 10m: the time base moves with it", []reading{
			{observe, 0, 0, 0, none},
			{observe, time.Second, 10 * time.Minute, -10 * time.Minute, stepSeen},
			{alone, time.Second, 10 * time.Minute, 0, stepAlone},
		}},
		{"alone, back 3m then forward 13m: the forward step takes up the hold", []reading{
			{observe, 0, 0, 0, none},
			{observe, time.Second, -3 * time.Minute, 3 * time.Minute, stepSeen},
			{alone, time.Second, -3 * time.Minute, 3 * time.Minute, stepAlone},
			{observe, time.Second + time.Minute, 10 * time.Minute, 150*time.Second - 13*time.Minute, stepSeen},
			{alone, time.Second + time.Minute, 10 * time.Minute, 0, stepAlone},
		}},
		{"alone, back 3m then forward 1m: the rest stays held", []reading{
			{observe, 0, 0, 0, none},
			{observe, time.Second, -3 * time.Minute, 3 * time.Minute, stepSeen},
			{alone, time.Second, -3 * time.Minute, 3 * time.Minute, stepAlone},
			{observe, time.Second + time.Minute, -2 * time.Minute, 90 * time.Second, stepSeen},
			{alone, time.Second + time.Minute, -2 * time.Minute, 90 * time.Second, stepAlone},
		}},
		{"alone, back 2h: more than maxHold is not held", []reading{
			{observe, 0, 0, 0, none},
			{observe, time.Second, -2 * time.Hour, 2 * time.Hour, stepSeen},
			{alone, time.Second, -2 * time.Hour, 0, stepAlone},
		}},
		{"forward 10m, no verdict: held until the wait ends, then taken", []reading{
			{observe, 0, 0, 0, none},
			{observe, time.Second, 10 * time.Minute, -10 * time.Minute, stepSeen},
			{observe, 10 * time.Second, 10 * time.Minute, -10 * time.Minute, none},
			{observe, 11 * time.Second, 10 * time.Minute, 0, stepTimedOut},
		}},
		{"back 3m, no verdict: held whole while it waits, then absorbed", []reading{
			{observe, 0, 0, 0, none},
			{observe, time.Second, -3 * time.Minute, 3 * time.Minute, stepSeen},
			{observe, 10 * time.Second, -3 * time.Minute, 3 * time.Minute, none},
			{observe, 11 * time.Second, -3 * time.Minute, 3 * time.Minute, stepTimedOut},
			{observe, 11*time.Second + time.Minute, -3 * time.Minute, 150 * time.Second, none},
		}},
		{"forward 10m, verdict: the hold ends (the correction replaces it)", []reading{
			{observe, 0, 0, 0, none},
			{observe, time.Second, 10 * time.Minute, -10 * time.Minute, stepSeen},
			{verdict, 2 * time.Second, 10 * time.Minute, 0, stepVerified},
			{observe, 20 * time.Second, 10 * time.Minute, 0, none},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var s stepState
			var base time.Time // the time base at the previous reading
			var prevMono time.Duration
			for i, r := range tc.reads {
				wall := clockT0.Add(r.mono + r.step)
				var hold time.Duration
				var ev *stepEvent
				switch r.op {
				case observe:
					hold, ev = s.observe(wall, r.mono, p)
				case alone:
					if e, ok := s.alone(wall, r.mono); ok {
						ev = &e
					}
					hold = s.holdAt(r.mono)
				case verdict:
					if ok, dropped := s.verdict(); ok {
						ev = &stepEvent{kind: stepVerified, dropped: dropped}
					}
					hold = s.holdAt(r.mono)
				}
				if hold != r.wantHold {
					t.Fatalf("reading %d: hold %s, want %s", i, hold, r.wantHold)
				}
				kind := none
				if ev != nil {
					kind = ev.kind
				}
				if kind != r.wantKind {
					t.Fatalf("reading %d: event %v, want %v", i, kind, r.wantKind)
				}
				// The time base never moves back, nor faster than the
				// wall clock, but by a drift within the bound, or where
				// the event gives up a hold (a forward step taken, a step
				// back too large to hold, a verdict).
				now := wall.Add(hold)
				moved, elapsed := now.Sub(base), r.mono-prevMono
				gaveUp := ev != nil && ev.dropped != 0
				if i > 0 && !gaveUp && (moved < -p.bound || moved > elapsed+p.bound) {
					t.Fatalf("reading %d: the time base moved %s in %s", i, moved, elapsed)
				}
				base, prevMono = now, r.mono
			}
		})
	}
}

// TestStepState_verdict: the clock monitor's verdict ends a hold at
// once; without a hold waiting, it changes nothing.
func TestStepState_verdict(t *testing.T) {
	p := stepParams{bound: time.Second, verifyWait: 10 * time.Second}
	var s stepState
	s.observe(clockT0, 0, p)
	if waiting, _ := s.verdict(); waiting {
		t.Fatal("a verdict with no step found a hold waiting")
	}
	s.observe(clockT0.Add(time.Second+10*time.Minute), time.Second, p)
	waiting, dropped := s.verdict()
	if !waiting || dropped != -10*time.Minute {
		t.Fatalf("verdict() = %v, %s; want a hold of -10m ended", waiting, dropped)
	}
	if h, ev := s.observe(clockT0.Add(20*time.Second+10*time.Minute), 20*time.Second, p); h != 0 || ev != nil {
		t.Fatalf("after the verdict: hold %s, event %+v; want none", h, ev)
	}
	if j := s.report(20 * time.Second); j == nil || !strings.Contains(j.Reason, "were compared") || j.Held != 0 {
		t.Fatalf("report %+v, want the step with the comparison done", j)
	}
}

// TestStepState_wait: a timer for an instant of the time base waits as
// long as the time base takes to get there: twice as long while a step
// back is absorbed, as long as the wall clock otherwise.
func TestStepState_wait(t *testing.T) {
	p := stepParams{bound: time.Second, verifyWait: 10 * time.Second}
	var s stepState
	s.observe(clockT0, 0, p)
	if got := s.wait(time.Second, 0); got != time.Second {
		t.Errorf("no hold: wait(1s) = %s, want 1s", got)
	}
	s.observe(clockT0.Add(time.Second-time.Minute), time.Second, p) // back 1m, held
	s.alone(clockT0.Add(time.Second-time.Minute), time.Second)      // and absorbed from now on
	for _, c := range []struct{ gap, want time.Duration }{
		{0, 0}, {-time.Second, 0}, {time.Second, 2 * time.Second}, {time.Minute, 2 * time.Minute},
		{2 * time.Minute, 3 * time.Minute}, // 1m of time base in 2m absorbing the hold, then 1m
	} {
		if got := s.wait(c.gap, time.Second); got != c.want {
			t.Errorf("hold 1m: wait(%s) = %s, want %s", c.gap, got, c.want)
		}
	}
	var w stepState
	w.observe(clockT0, 0, p)
	w.observe(clockT0.Add(time.Second-time.Minute), time.Second, p) // held whole for 10s, then absorbed
	if got := w.wait(5*time.Second, time.Second); got != 5*time.Second {
		t.Errorf("waiting for a verdict: wait(5s) = %s, want 5s", got)
	}
	if got := w.wait(12*time.Second, time.Second); got != 10*time.Second+4*time.Second {
		t.Errorf("waiting for a verdict: wait(12s) = %s, want 10s then 2s at half speed", got)
	}
}

// TestSkewClock_steps: the time base over a stepping clock holds a step
// at once; with no other voter (the clock monitor says so) it absorbs a
// step back and follows a forward step; it reports the step and hands
// each change to the step watcher once.
func TestSkewClock_steps(t *testing.T) {
	sc := NewSteppingClock(clockT0)
	c := NewBase(sc, time.Second, 10*time.Second)
	if got := c.Now(); !got.Equal(clockT0) {
		t.Fatalf("Now() = %s, want %s", got, clockT0)
	}
	sc.Advance(time.Second)
	sc.Step(-3 * time.Minute)
	if got, want := c.Now(), clockT0.Add(time.Second); !got.Equal(want) {
		t.Fatalf("after a step back: Now() = %s, want %s (held)", got, want)
	}
	ev := <-c.events
	if ev.kind != stepSeen || ev.step != -3*time.Minute || ev.hold != 3*time.Minute {
		t.Fatalf("event %+v, want a step of -3m held", ev)
	}
	if j := c.Jump(); j == nil || !strings.Contains(j.Reason, "until the members' clocks are compared") {
		t.Fatalf("jump %+v, want the step held for the clock monitor", j)
	}
	c.alone()
	if ev := <-c.events; ev.kind != stepAlone || ev.hold != 3*time.Minute {
		t.Fatalf("event %+v, want the step kept alone", ev)
	}
	j := c.Jump()
	if j == nil || j.Step.Std() != -3*time.Minute || j.Held.Std() != 3*time.Minute || !strings.Contains(j.Reason, "stepped back by 3m0s") ||
		!strings.Contains(j.Reason, "absorbs it at 1/2 speed") {
		t.Fatalf("jump %+v, want the step back reported, 3m held", j)
	}
	// A timer for 1s of the time base takes 2s while the hold shrinks.
	tm := c.NewTimerAt(c.Now().Add(time.Second))
	sc.Advance(1999 * time.Millisecond)
	select {
	case <-tm.C():
		t.Fatal("a timer 1s ahead on the time base fired after 1.999s while absorbing")
	default:
	}
	sc.Advance(time.Millisecond)
	select {
	case <-tm.C():
	default:
		t.Fatal("a timer 1s ahead on the time base did not fire after 2s while absorbing")
	}
	before := c.Now()
	sc.Step(10 * time.Minute)
	if got := c.Now(); !got.Equal(before) {
		t.Fatalf("after a forward step: Now() = %s, want %s (held)", got, before)
	}
	c.alone()
	if got, want := c.Now(), clockT0.Add(3*time.Second-3*time.Minute+10*time.Minute); !got.Equal(want) {
		t.Fatalf("after a forward step alone: Now() = %s, want %s (the wall clock)", got, want)
	}
	if ev := <-c.events; ev.kind != stepSeen || ev.step != 10*time.Minute {
		t.Fatalf("event %+v, want a forward step", ev)
	}
	if ev := <-c.events; ev.kind != stepAlone || ev.dropped >= 0 {
		t.Fatalf("event %+v, want the forward step taken alone", ev)
	}
	select {
	case ev := <-c.events:
		t.Fatalf("unexpected event %+v", ev)
	default:
	}
	if fwd, back, held := c.stepCounts(); fwd != 1 || back != 1 || held != 0 {
		t.Errorf("stepCounts() = %d, %d, %s; want 1, 1, 0", fwd, back, held)
	}
}

// TestClockMonitor_verdictAfterStep: a node with peers holds a step of its
// clock until the monitor has compared clocks again; the verdict replaces
// the hold at once, in either direction, so the time base never jumps:
// a clock now off keeps to the cluster's time (a correction), a clock
// that was off and is now right is used again. A reading taken across
// the step is not used.
func TestClockMonitor_verdictAfterStep(t *testing.T) {
	for _, step := range []time.Duration{10 * time.Minute, -3 * time.Minute} {
		t.Run(step.String(), func(t *testing.T) {
			fc := &fakeCluster{offsets: map[string]time.Duration{}, down: map[string]bool{}}
			sc := NewSteppingClock(clockT0)
			fc.clock = sc.FakeClock // the members' clocks are true
			for i := 1; i <= 3; i++ {
				id := "n" + string(rune('0'+i))
				fc.peers = append(fc.peers, Peer{ID: id, HTTP: id, Voter: true})
			}
			m := NewMonitor(MonitorConfig{Self: "n1", Raw: sc, Base: NewBase(sc, time.Second, 10*time.Second), MaxSkew: time.Second,
				Interval: time.Second, Peers: fc.list, Ask: fc.ask})
			m.Measure(t.Context())
			base := m.clock.Now()
			sc.Step(step)
			// The members answer as before, but this node's clock moved:
			// a reading across the step is not used.
			if got := m.clock.Now(); !got.Equal(base) {
				t.Fatalf("just after the step: time base %s, want %s (held)", got, base)
			}
			if j := m.clock.Jump(); j == nil || j.Held.Std() != -step {
				t.Fatalf("jump %+v, want %s held", j, -step)
			}
			v := m.Measure(t.Context())
			if !v.quorum || v.self != step {
				t.Fatalf("view %+v, want this node found off by %s", v, step)
			}
			if got := m.clock.Now(); !got.Equal(base) {
				t.Fatalf("after the verdict: time base %s, want %s (the correction replaced the hold)", got, base)
			}
			if corr := m.clock.correction(); corr != step {
				t.Fatalf("correction %s, want %s", corr, step)
			}
			// NTP puts the clock right again: held, then the verdict ends
			// the correction. The time base never moves.
			sc.Step(-step)
			if got := m.clock.Now(); !got.Equal(base) {
				t.Fatalf("after the clock was put right: time base %s, want %s", got, base)
			}
			m.Measure(t.Context())
			if got := m.clock.Now(); !got.Equal(base) || m.clock.correction() != 0 {
				t.Fatalf("after the second verdict: time base %s (correction %s), want %s and none", got, m.clock.correction(), base)
			}
		})
	}
}

// TestMonitor_Problem: /healthz answers 503 for a node with no other
// voter whose time is behind the latest leader time applied (its clock
// went back further than it held); not within twice the bound, and not
// with other voters (the cluster's clock is the members', and a mark
// ahead of it was left by a leader whose clock was ahead).
func TestMonitor_Problem(t *testing.T) {
	t0ms := clockT0.UnixMilli()
	hwm := t0ms + 10*60_000 // the mark: t0+10m
	fc := wheel.NewFakeClock(time.UnixMilli(t0ms))
	m := NewMonitor(MonitorConfig{Self: "n1", Raw: fc, Base: &Base{raw: fc}, MaxSkew: time.Second, Interval: time.Second})
	for _, c := range []struct {
		solo   bool
		now    time.Duration // from t0
		behind bool
	}{
		{true, 0, true},
		{false, 0, false},
		{true, 10*time.Minute - 2*time.Second, false},
		{true, 10*time.Minute - 2*time.Second - time.Millisecond, true},
	} {
		m.solo.Store(c.solo)
		fc.Set(time.UnixMilli(t0ms).Add(c.now))
		got := m.Problem(hwm)
		if (got != "") != c.behind || c.behind && !strings.Contains(got, "behind the latest leader time applied") {
			t.Errorf("solo %v, t0+%s: problem %q, want one: %v", c.solo, c.now, got, c.behind)
		}
	}
}
