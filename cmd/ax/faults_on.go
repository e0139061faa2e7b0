//go:build faults

package main

import (
	"fmt"
	"os"
	"time"

	"github.com/ax-scheduler/ax/wheel"
)

// faultClockEnv names the fault hook's variable: a Go duration with an
// optional sign ("+10m", "-10m", "1.5s") by which this process's wall
// clock is offset. Go reads the clock through the vDSO, so libfaketime
// cannot do this from outside.
const faultClockEnv = "AX_FAULT_CLOCK_OFFSET"

// faultClock returns the clock of a binary built with -tags faults: the
// real clock offset by AX_FAULT_CLOCK_OFFSET, or nil when it is not set.
// Only the wall clock moves: timers and the monotonic readings that time
// intervals keep to real time, as on a machine whose clock was set wrong.
func faultClock() (wheel.Clock, time.Duration, error) {
	s := os.Getenv(faultClockEnv)
	if s == "" {
		return nil, 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return nil, 0, fmt.Errorf("%s=%q: want a Go duration such as +10m or -10m: %w", faultClockEnv, s, err)
	}
	return offsetClock{d}, d, nil
}

// offsetClock is the real clock offset by d.
type offsetClock struct{ d time.Duration }

// Now returns the real time plus the offset (with its monotonic reading,
// so that intervals measured between two readings stay right).
func (c offsetClock) Now() time.Time { return time.Now().Add(c.d) }

// NewTimer is the real clock's.
func (c offsetClock) NewTimer(d time.Duration) wheel.Timer { return wheel.RealClock{}.NewTimer(d) }
