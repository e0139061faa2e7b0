package clock

import (
	"sync/atomic"
	"time"

	"github.com/ax-scheduler/ax/wheel"
)

// SteppingClock is a wall clock that a test steps: a fake clock (its
// monotonic time, advanced with Advance or Set) plus an offset that Step
// changes, as NTP or an operator setting the time would. It is a
// MonotonicClock, so a Base over it sees its steps.
type SteppingClock struct {
	*wheel.FakeClock
	origin time.Time
	off    atomic.Int64
}

var _ MonotonicClock = (*SteppingClock)(nil)

// NewSteppingClock returns a clock at t0 that has not stepped.
func NewSteppingClock(t0 time.Time) *SteppingClock {
	return &SteppingClock{FakeClock: wheel.NewFakeClock(t0), origin: t0}
}

// Now is the wall clock: the monotonic time plus the steps.
func (c *SteppingClock) Now() time.Time { return c.FakeClock.Now().Add(time.Duration(c.off.Load())) }

// Monotonic is the time since t0 that no step moves.
func (c *SteppingClock) Monotonic() time.Duration { return c.FakeClock.Now().Sub(c.origin) }

// Step moves the wall clock by d.
func (c *SteppingClock) Step(d time.Duration) { c.off.Add(int64(d)) }
