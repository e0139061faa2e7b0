package replica

import (
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
)

// MaxHWMLead bounds how far ahead of this leader's clock the high-water
// mark of applied leader time may be for the leader to stamp it: a mark
// further ahead was written by a clock that was badly wrong, and following
// it would stop time in the state machine for that long (leases would not
// expire, delays would count from it).
const MaxHWMLead = time.Hour

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
	if lead > MaxHWMLead {
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
