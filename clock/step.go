package clock

import (
	"fmt"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/model/member"
	"github.com/ax-scheduler/ax/wheel"
)

// Clock steps (docs/operations.md, Clock steps). Every node compares its wall
// clock with its monotonic clock at each reading of its time base
// (Base.Now) and at least once a second: the two advance at the same
// rate (NTP's slewing changes both), so a difference between them of more
// than -max-clock-skew since the last step is a step of the wall clock: NTP
// or an operator setting the time, a VM restored from a snapshot, or the
// machine suspended (CLOCK_MONOTONIC, which Go's time.Now carries, stops
// while the machine sleeps: a suspend looks like a forward step of its
// length). A node with no peer to compare clocks with sees its own steps
// this way; the clock monitor (monitor.go) could not.
//
// The node's time base (what it stamps and fires by) does not follow a
// step blindly. A step of either sign is held at once (the time base goes
// on as if the wall clock had not moved) and the clock monitor compares
// clocks at once:
//
//   - With other voters in the cluster, its verdict replaces the hold (a
//     node now off from the cluster's clock keeps to the cluster's, and a
//     leader hands over; a node now within the bound follows its clock).
//     With no verdict within a monitor's stale period (no member answers)
//     the hold ends as on a single node.
//   - On a single node a forward step moves the time base with the clock:
//     the fire times it skipped follow each task's catch-up policy. A
//     backward step is held, then absorbed at half speed: the time base
//     runs at half the rate of the wall clock until it meets it again (a
//     step back of d takes 2d), so nothing fires twice or stops firing, and
//     the time stamped never goes back. A step back of more than maxHold
//     is not held: the time base follows the clock back and the node's
//     /healthz answers 503 while its time is behind the latest leader time
//     applied.
//
// A step is logged at once, reported in /healthz (clock.jump) and GET
// /v1/internal/time for stepQuiet and while part of it is held, and the
// leader's watchdog raises clock_jump for the node from that report.

// MonotonicClock is a wheel.Clock that also tells how much time has
// passed on a clock no step of the wall clock moves. The time base watches a
// Clock that implements it, and wheel.RealClock (through time.Now's
// monotonic reading), for steps; any other Clock (a test's fake clock) is
// not watched.
type MonotonicClock interface {
	wheel.Clock
	// Monotonic returns the time elapsed since an origin of the clock's
	// choosing, fixed for its lifetime.
	Monotonic() time.Duration
}

// stepReader returns a function that reads c's time and the monotonic
// time at one instant, or nil if c cannot tell them apart.
func stepReader(c wheel.Clock) func() (time.Time, time.Duration) {
	switch c := c.(type) {
	case wheel.RealClock:
		origin := time.Now()
		return func() (time.Time, time.Duration) {
			t := time.Now()
			return t, t.Sub(origin)
		}
	case MonotonicClock:
		return func() (time.Time, time.Duration) {
			m := c.Monotonic()
			return c.Now(), m
		}
	}
	return nil
}

// MaxHWMLead bounds how far ahead of this leader's clock the high-water
// mark of applied leader time may be for the leader to stamp it (the
// replica's stamper): a mark further ahead was written by a clock that was
// badly wrong, and following it would stop time in the state machine for
// that long (leases would not expire, delays would count from it).
const MaxHWMLead = time.Hour

const (
	// absorbDiv: a held backward step shrinks by one second every
	// absorbDiv seconds (the time base runs at 1 - 1/absorbDiv of the wall
	// clock's rate until it meets it).
	absorbDiv = 2
	// maxHold bounds the backward step a node holds without a verdict:
	// beyond it the node's earlier clock was badly wrong (as for the
	// stamper's MaxHWMLead), and holding it would fire early for longer.
	maxHold = MaxHWMLead
	// stepQuiet is how long a step is reported after it happened.
	stepQuiet = 10 * time.Minute
)

// stepKind is what happened to the time base.
type stepKind int

const (
	stepSeen     stepKind = iota // the wall clock stepped: held
	stepVerified                 // the clock monitor's verdict replaced the hold
	stepAlone                    // no other voter: the hold ends as on a single node
	stepTimedOut                 // no verdict came in time: likewise
	stepAbsorbed                 // a held backward step is absorbed
)

// stepEvent is a change of the time base, for the log and the scheduler.
type stepEvent struct {
	kind    stepKind
	step    time.Duration // stepSeen: the step, positive forward
	wall    time.Time     // the wall clock then
	hold    time.Duration // the hold after the event
	dropped time.Duration // the part of the hold the event gave up (the time base moved by -dropped)
}

// stepState watches a wall clock against a monotonic clock and keeps the
// hold the time base adds to the wall clock. Its methods take readings
// of both clocks at one instant; the caller serializes them.
type stepState struct {
	started  bool
	wall0    time.Time     // the wall clock at the last step (or the first reading)...
	mono0    time.Duration // ...and the monotonic time then
	gen      uint64        // steps seen
	forward  uint64        // of which forward
	backward uint64        // and back

	// hold is added to the wall clock. A positive hold (a backward step
	// kept) shrinks at 1/absorbDiv from slewAt on (monotonic time); a
	// negative one (a forward step held for a verdict) does not.
	hold   time.Duration
	slewAt time.Duration
	// verifyBy (monotonic time), when not zero, is when a hold waiting
	// for the clock monitor ends without its verdict.
	verifyBy time.Duration

	last     stepEvent     // the latest step seen (kind stepSeen), once gen > 0
	lastMono time.Duration // monotonic time of the latest step
	outcome  stepEvent     // how the latest step's hold ended (kind stepSeen: not yet)
}

// stepParams are the bounds a stepState works with.
type stepParams struct {
	bound      time.Duration // a larger move of the wall clock against the monotonic one is a step
	verifyWait time.Duration // how long a hold waits for the clock monitor
}

// holdAt returns the hold at monotonic time mono.
func (s *stepState) holdAt(mono time.Duration) time.Duration {
	h := s.hold
	if h > 0 && mono > s.slewAt {
		h -= (mono - s.slewAt) / absorbDiv
		h = max(h, 0)
	}
	return h
}

// observe takes a reading of the wall clock (without a monotonic reading)
// and the monotonic time, and returns the hold to add to the wall clock
// and what changed, if anything.
func (s *stepState) observe(wall time.Time, mono time.Duration, p stepParams) (time.Duration, *stepEvent) {
	if !s.started {
		s.started, s.wall0, s.mono0 = true, wall, mono
		return 0, nil
	}
	if drift := wall.Sub(s.wall0) - (mono - s.mono0); drift > p.bound || drift < -p.bound {
		return s.step(wall, mono, drift, p)
	}
	h := s.holdAt(mono)
	switch {
	case s.verifyBy != 0 && mono >= s.verifyBy:
		ev := s.unverified(stepTimedOut, wall, mono)
		return s.hold, &ev
	case s.hold > 0 && h == 0 && s.verifyBy == 0:
		s.hold = 0
		return 0, &stepEvent{kind: stepAbsorbed, wall: wall}
	}
	return h, nil
}

// step handles a step of drift seen at (wall, mono): the time base keeps
// where it was (the hold takes the step) and waits for the clock
// monitor.
func (s *stepState) step(wall time.Time, mono, drift time.Duration, p stepParams) (time.Duration, *stepEvent) {
	h := s.holdAt(mono) - drift
	s.wall0, s.mono0 = wall, mono
	s.gen++
	if drift > 0 {
		s.forward++
	} else {
		s.backward++
	}
	s.hold, s.slewAt, s.verifyBy = h, mono+p.verifyWait, mono+p.verifyWait
	ev := stepEvent{kind: stepSeen, step: drift, wall: wall, hold: h}
	s.last, s.lastMono, s.outcome = ev, mono, stepEvent{}
	return s.hold, &ev
}

// unverified ends a hold waiting for the clock monitor as a single node
// does (kind says why: stepAlone or stepTimedOut): it keeps a step back
// up to maxHold, absorbing it from mono on, and takes a forward step.
func (s *stepState) unverified(kind stepKind, wall time.Time, mono time.Duration) stepEvent {
	kept := keepable(s.hold)
	ev := stepEvent{kind: kind, wall: wall, hold: kept, dropped: s.hold - kept}
	s.hold, s.slewAt, s.verifyBy = kept, mono, 0
	s.outcome = ev
	return ev
}

// alone ends a hold waiting for the clock monitor when there is no other
// voter to compare clocks with, reporting whether one was waiting.
func (s *stepState) alone(wall time.Time, mono time.Duration) (stepEvent, bool) {
	if s.verifyBy == 0 {
		return stepEvent{}, false
	}
	return s.unverified(stepAlone, wall, mono), true
}

// keepable is the part of hold h a node keeps without a verdict: a
// backward step up to maxHold, never a forward one.
func keepable(h time.Duration) time.Duration {
	if h < 0 || h > maxHold {
		return 0
	}
	return h
}

// verdict ends a hold waiting for the clock monitor's verdict, reporting
// whether there was one and what it dropped.
func (s *stepState) verdict() (waiting bool, dropped time.Duration) {
	if s.verifyBy == 0 {
		return false, 0
	}
	dropped = s.hold
	s.hold, s.verifyBy = 0, 0
	s.outcome = stepEvent{kind: stepVerified, dropped: dropped}
	return true, dropped
}

// wait returns how long (monotonic time) the time base takes to advance
// by gap from monotonic time mono: as long at the wall clock's rate, and
// longer while a held step is absorbed. A negative hold ends in a jump,
// which wakes the scheduler; it is not counted.
func (s *stepState) wait(gap, mono time.Duration) time.Duration {
	if gap <= 0 {
		return 0
	}
	h := s.holdAt(mono)
	if h <= 0 {
		return gap
	}
	var d time.Duration
	if s.slewAt > mono {
		if a := s.slewAt - mono; gap <= a {
			return gap
		} else {
			d, gap = a, gap-a
		}
	}
	// While h is absorbed (absorbDiv·h of monotonic time) the time base
	// advances by (absorbDiv-1)·h.
	if b := h * (absorbDiv - 1); gap > b {
		return d + h*absorbDiv + gap - b
	}
	return d + gap*absorbDiv/(absorbDiv-1)
}

// report is the latest step as /healthz and GET /v1/internal/time show
// it, or nil once it is older than stepQuiet and nothing of it is held.
func (s *stepState) report(mono time.Duration) *member.ClockJump {
	if s.gen == 0 {
		return nil
	}
	ago := mono - s.lastMono
	h := s.holdAt(mono)
	if ago > stepQuiet && h == 0 && s.verifyBy == 0 {
		return nil
	}
	step := s.last.step.Round(time.Millisecond) // measured between two readings
	j := &member.ClockJump{At: model.Time{Time: s.last.wall.UTC()}, Step: model.Duration(step),
		Ago: model.Duration(ago.Round(time.Millisecond)), Held: model.Duration(h)}
	dir := "forward"
	if step < 0 {
		dir = "back"
	}
	j.Reason = fmt.Sprintf("this node's wall clock stepped %s by %s %s ago", dir, abs(step), ago.Round(time.Second))
	switch o := s.outcome; {
	case s.verifyBy != 0:
		j.Reason += fmt.Sprintf("; its time base holds %s until the members' clocks are compared", h.Round(time.Millisecond))
	case o.kind == stepVerified:
		j.Reason += "; the members' clocks were compared since: this node keeps to the cluster's time"
	case h > 0:
		j.Reason += fmt.Sprintf("; its time base, which never moves back, holds %s of it and absorbs it at 1/%d speed (by %s)",
			h.Round(time.Millisecond), absorbDiv, s.last.wall.Add(ago+h*absorbDiv).UTC().Format(time.RFC3339))
	case o.dropped < 0:
		j.Reason += "; its time base moved forward with it: the fire times it skipped follow each task's catch-up policy"
	case o.dropped > maxHold:
		j.Reason += fmt.Sprintf("; more than %s: its time base followed it back", maxHold)
	}
	return j
}

// logStep logs a change of the time base: a step at once (warn, with its
// size and direction), then how its hold ended.
func logStep(log hclog.Logger, ev stepEvent, bound time.Duration) {
	ms := func(d time.Duration) time.Duration { return d.Round(time.Millisecond) }
	switch ev.kind {
	case stepSeen:
		dir := "forward"
		if ev.step < 0 {
			dir = "backward"
		}
		log.Warn("clock step: this node's wall clock jumped; its time base holds the step until the members' clocks are compared",
			"step", ms(ev.step), "direction", dir, "max_clock_skew", bound, "held", ms(ev.hold))
	case stepVerified:
		log.Info("clock step: the members' clocks were compared; this node keeps to the cluster's time", "hold_dropped", ms(ev.dropped))
	case stepAlone, stepTimedOut:
		why := "no other voter to compare clocks with"
		if ev.kind == stepTimedOut {
			why = "no member's clock could be compared in time"
		}
		switch {
		case ev.dropped < 0:
			log.Warn("clock step: "+why+"; the time base moves forward with the wall clock: the fire times it skipped follow each task's catch-up policy",
				"moved", ms(-ev.dropped), "held", ms(ev.hold))
		case ev.dropped > 0:
			log.Error(fmt.Sprintf("clock step: %s; the step back is more than %s: the time base follows it back, and nothing fires until the clock is past the times already fired", why, maxHold),
				"moved", ms(-ev.dropped))
		case ev.hold > 0:
			log.Warn(fmt.Sprintf("clock step: %s; the time base never moves back: it holds the step and absorbs it at 1/%d speed", why, absorbDiv),
				"held", ms(ev.hold), "absorbed_in", ms(ev.hold*absorbDiv))
		}
	case stepAbsorbed:
		log.Info("clock step absorbed: this node's time base is back on its wall clock")
	}
}
