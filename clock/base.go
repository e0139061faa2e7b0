package clock

import (
	"sync"
	"time"

	"github.com/ax-scheduler/ax/model/member"
	"github.com/ax-scheduler/ax/wheel"
)

// Base is the node's clock as the agent uses it (stamping commands,
// the leader's wheel and dispatcher, token expiry, the API's checks): its
// time base. That is the injected clock, less the correction the clock
// monitor sets while this node's clock is off from the cluster's by more
// than -max-clock-skew, so that a node with a wrong clock keeps to the
// cluster's time, plus the hold that keeps a step of the wall clock from
// moving the time base (step.go). Timers are durations and need no
// correction.
type Base struct {
	raw wheel.Clock
	// read reads raw and the monotonic time at one instant; nil: raw's
	// steps are not watched (a fake clock).
	read       func() (time.Time, time.Duration)
	bound      time.Duration // -max-clock-skew: a larger step is one
	verifyWait time.Duration // how long a hold waits for the clock monitor
	events     chan stepEvent

	mu   sync.Mutex
	corr time.Duration // taken off raw
	st   stepState
}

var _ wheel.DeadlineClock = (*Base)(nil)

// NewBase returns the time base over raw, watching raw for steps
// larger than bound if it can (see MonotonicClock). A hold waits
// verifyWait for the clock monitor's verdict.
func NewBase(raw wheel.Clock, bound, verifyWait time.Duration) *Base {
	c := &Base{raw: raw, read: stepReader(raw), bound: bound, verifyWait: verifyWait}
	if c.read != nil {
		c.events = make(chan stepEvent, 16)
	}
	return c
}

// Now returns the time base.
func (c *Base) Now() time.Time {
	if c.read == nil {
		return c.raw.Now().Add(-c.correction())
	}
	t, _, hold, corr := c.observe()
	return t.Add(hold - corr)
}

// observe reads the raw clock, watching it for a step: it returns the
// raw reading, the monotonic time, and the hold and correction in force.
func (c *Base) observe() (raw time.Time, mono, hold, corr time.Duration) {
	t, mono := c.read()
	c.mu.Lock()
	hold, ev := c.st.observe(t.Round(0), mono, c.params())
	corr = c.corr
	c.mu.Unlock()
	if ev != nil {
		c.emit(*ev)
	}
	return t, mono, hold, corr
}

func (c *Base) params() stepParams {
	return stepParams{bound: c.bound, verifyWait: c.verifyWait}
}

// emit hands ev to the step watcher (watchSteps); if it is
// behind, the event is only missing from the log.
func (c *Base) emit(ev stepEvent) {
	select {
	case c.events <- ev:
	default:
	}
}

// NewTimer returns the raw clock's timer.
func (c *Base) NewTimer(d time.Duration) wheel.Timer { return c.raw.NewTimer(d) }

// NewTimerAt arms a timer for the instant t of the time base: after the
// time the time base takes to reach it, longer while a held step is
// absorbed.
func (c *Base) NewTimerAt(t time.Time) wheel.Timer {
	if c.read == nil {
		if dc, ok := c.raw.(wheel.DeadlineClock); ok {
			return dc.NewTimerAt(t.Add(c.correction()))
		}
		return c.raw.NewTimer(t.Sub(c.Now()))
	}
	now, mono := c.read()
	c.mu.Lock()
	hold, ev := c.st.observe(now.Round(0), mono, c.params())
	d := c.st.wait(t.Round(0).Sub(now.Round(0).Add(hold-c.corr)), mono)
	c.mu.Unlock()
	if ev != nil {
		c.emit(*ev)
	}
	return c.raw.NewTimer(d)
}

func (c *Base) correction() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.corr
}

func (c *Base) setCorrection(d time.Duration) {
	c.mu.Lock()
	c.corr = d
	c.mu.Unlock()
}

// verdict sets the correction from a clock comparison made after the
// latest step and ends the hold waiting for it, at once, so that no
// reading sees one without the other.
func (c *Base) verdict(d time.Duration) {
	c.mu.Lock()
	c.corr = d
	waiting, dropped := c.st.verdict()
	c.mu.Unlock()
	if waiting {
		c.emit(stepEvent{kind: stepVerified, dropped: dropped})
	}
}

// alone ends a hold waiting for the clock monitor when the cluster has no
// other voter to compare clocks with.
func (c *Base) alone() {
	if c.read == nil {
		return
	}
	t, mono := c.read()
	c.mu.Lock()
	ev, ok := c.st.alone(t.Round(0), mono)
	c.mu.Unlock()
	if ok {
		c.emit(ev)
	}
}

// stepGen reads the clock (so that a step up to now is seen) and returns
// the number of steps seen.
func (c *Base) stepGen() uint64 {
	if c.read == nil {
		return 0
	}
	c.observe()
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.st.gen
}

// Jump is this node's latest step as /healthz and GET /v1/internal/time
// report it, or nil.
func (c *Base) Jump() *member.ClockJump {
	if c.read == nil {
		return nil
	}
	_, mono, _, _ := c.observe()
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.st.report(mono)
}
