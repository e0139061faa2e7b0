package agent

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ax-scheduler/ax/wheel"
)

// skewClock is the node's clock as the agent uses it (stamping commands,
// the leader's wheel and dispatcher, token expiry, the API's checks): the
// injected clock, less the correction the clock monitor sets while this
// node's clock is off from the cluster's by more than -max-clock-skew, so
// that a node with a wrong clock keeps to the cluster's time. Timers are
// durations and need no correction.
type skewClock struct {
	raw  wheel.Clock
	corr atomic.Int64 // nanoseconds taken off raw
}

var _ wheel.DeadlineClock = (*skewClock)(nil)

// Now returns the corrected time.
func (c *skewClock) Now() time.Time { return c.raw.Now().Add(-c.correction()) }

// NewTimer returns the raw clock's timer.
func (c *skewClock) NewTimer(d time.Duration) wheel.Timer { return c.raw.NewTimer(d) }

// NewTimerAt arms a timer for the corrected instant t.
func (c *skewClock) NewTimerAt(t time.Time) wheel.Timer {
	if dc, ok := c.raw.(wheel.DeadlineClock); ok {
		return dc.NewTimerAt(t.Add(c.correction()))
	}
	return c.raw.NewTimer(t.Sub(c.Now()))
}

func (c *skewClock) correction() time.Duration { return time.Duration(c.corr.Load()) }

func (c *skewClock) setCorrection(d time.Duration) { c.corr.Store(int64(d)) }

// maxHWMLead bounds how far ahead of this leader's clock the high-water
// mark of applied leader time may be for the leader to stamp it: a mark
// further ahead was written by a clock that was badly wrong, and following
// it would stop time in the state machine for that long (leases would not
// expire, delays would count from it).
const maxHWMLead = time.Hour

// stamper chooses the leader time stamped into commands.
type stamper struct {
	now func() time.Time
	hwm func() int64 // the state machine's high-water mark of applied leader time
	max time.Duration
	log hclog.Logger

	mu     sync.Mutex
	warned time.Time // last warning, monotonic
}

// stamp returns the time to put into a command: this node's (corrected)
// clock, but never below the latest leader time the state machine has
// applied, so that time in the state machine does not move backwards when
// a leader whose clock is behind its predecessor's takes over.
func (s *stamper) stamp() int64 {
	now := s.now().UnixMilli()
	hwm := s.hwm()
	if hwm <= now {
		return now
	}
	lead := time.Duration(hwm-now) * time.Millisecond
	if lead > maxHWMLead {
		s.warn(hclog.Error, "the applied leader time is far ahead of this leader's clock (a node with a wrong clock led); not following it", lead)
		return now
	}
	if lead > s.max {
		s.warn(hclog.Warn, "the applied leader time is ahead of this leader's clock; stamping it until the clock catches up", lead)
	}
	return hwm
}

// warn logs at most once a minute.
func (s *stamper) warn(level hclog.Level, msg string, lead time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.warned.IsZero() && time.Since(s.warned) < time.Minute {
		return
	}
	s.warned = time.Now()
	s.log.Log(level, msg, "ahead", lead, "max_clock_skew", s.max)
}
