package wheel

import "time"

// Clock is the source of time for a Driver. Implementations must be safe for
// concurrent use. RealClock reads the system clock; FakeClock is moved by
// tests.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// NewTimer returns a Timer that sends the time on its channel once d
	// has elapsed.
	NewTimer(d time.Duration) Timer
}

// DeadlineClock is a Clock that can also arm a timer for an instant rather
// than a duration. Driver uses NewTimerAt when its Clock has it: reading the
// clock and then arming a timer for the rest of the wait oversleeps by as
// much as the clock moves in between, which no real clock does noticeably
// but a FakeClock moved by a test's goroutine can. FakeClock implements it.
type DeadlineClock interface {
	Clock
	// NewTimerAt returns a Timer that sends the time on its channel once
	// the clock reaches t, at once if it already has. Its Reset, like
	// NewTimer's, takes a duration.
	NewTimerAt(t time.Time) Timer
}

// Timer is a one-shot timer made by a Clock, with the semantics of
// time.Timer since Go 1.23: after Stop or Reset returns, no stale value is
// received from C.
type Timer interface {
	// C returns the channel on which the timer delivers the time.
	C() <-chan time.Time
	// Stop prevents the timer from firing and reports whether it was active.
	Stop() bool
	// Reset rearms the timer to fire after d and reports whether it was
	// active.
	Reset(d time.Duration) bool
}

// RealClock is the system clock, backed by package time.
type RealClock struct{}

var _ Clock = RealClock{}

// Now returns time.Now().
func (RealClock) Now() time.Time { return time.Now() }

// NewTimer wraps time.NewTimer.
func (RealClock) NewTimer(d time.Duration) Timer { return realTimer{time.NewTimer(d)} }

type realTimer struct{ t *time.Timer }

func (r realTimer) C() <-chan time.Time        { return r.t.C }
func (r realTimer) Stop() bool                 { return r.t.Stop() }
func (r realTimer) Reset(d time.Duration) bool { return r.t.Reset(d) }
