//go:build faults

package faults

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/ax-scheduler/ax/agent"
	"github.com/ax-scheduler/ax/wheel"
)

var _ agent.MonotonicClock = (*offsetClock)(nil)

// faultClockEnv names the fault hook's variable: a Go duration with an
// optional sign ("+10m", "-10m", "1.5s") by which this process's wall
// clock is offset. Go reads the clock through the vDSO, so libfaketime
// cannot do this from outside.
const faultClockEnv = "AX_FAULT_CLOCK_OFFSET"

// faultClockFileEnv names a file whose content, a duration as for
// faultClockEnv, replaces the offset while the process runs: a test
// steps a running node's wall clock by writing it. It is read every
// faultClockPoll; an absent, empty or unreadable file leaves the offset
// as it is.
const faultClockFileEnv = "AX_FAULT_CLOCK_FILE"

// faultClockPoll is how often the offset file is read.
const faultClockPoll = 100 * time.Millisecond

// Clock returns the clock of a binary built with -tags faults: the real
// clock offset by AX_FAULT_CLOCK_OFFSET and then by what
// AX_FAULT_CLOCK_FILE says, or nil when neither is set. Only the wall
// clock moves: timers and the monotonic readings that time intervals keep
// to real time, as on a machine whose clock was set wrong, and a change
// of the offset is a step of the wall clock (its Monotonic does not move).
func Clock(getenv func(string) string, stderr io.Writer) (wheel.Clock, time.Duration, error) {
	s, file := getenv(faultClockEnv), getenv(faultClockFileEnv)
	if s == "" && file == "" {
		return nil, 0, nil
	}
	var d time.Duration
	if s != "" {
		var err error
		if d, err = time.ParseDuration(s); err != nil {
			return nil, 0, fmt.Errorf("%s=%q: want a Go duration such as +10m or -10m: %w", faultClockEnv, s, err)
		}
	}
	c := &offsetClock{origin: time.Now()}
	c.d.Store(int64(d))
	if file != "" {
		if fd, ok, err := readOffset(file); err != nil {
			return nil, 0, err
		} else if ok {
			c.d.Store(int64(fd))
			d = fd
		}
		go c.follow(file, stderr)
	}
	return c, d, nil
}

// readOffset reads an offset file: ok is false when it holds nothing.
func readOffset(path string) (time.Duration, bool, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false, nil
	}
	s := strings.TrimSpace(string(b))
	if s == "" {
		return 0, false, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, false, fmt.Errorf("%s %s: %q: want a Go duration such as +10m or -10m: %w", faultClockFileEnv, path, s, err)
	}
	return d, true, nil
}

// offsetClock is the real clock offset by d.
type offsetClock struct {
	d      atomic.Int64
	origin time.Time
}

// Now returns the real time plus the offset (with its monotonic reading,
// so that intervals measured between two readings with the same offset
// stay right).
func (c *offsetClock) Now() time.Time { return time.Now().Add(time.Duration(c.d.Load())) }

// Monotonic returns the real time elapsed since the clock was made, which
// no change of the offset moves (agent.MonotonicClock): the agent sees a
// change of the offset as a step of the wall clock.
func (c *offsetClock) Monotonic() time.Duration { return time.Since(c.origin) }

// NewTimer is the real clock's.
func (c *offsetClock) NewTimer(d time.Duration) wheel.Timer { return wheel.RealClock{}.NewTimer(d) }

// follow sets the offset from the file every faultClockPoll, for the
// life of the process; it says on stderr why a file cannot be used.
func (c *offsetClock) follow(path string, stderr io.Writer) {
	var said string // the last error printed
	for range time.Tick(faultClockPoll) {
		d, ok, err := readOffset(path)
		if err != nil {
			if err.Error() != said {
				said = err.Error()
				fmt.Fprintln(stderr, "fault hook:", err)
			}
			continue
		}
		said = ""
		if ok {
			c.d.Store(int64(d))
		}
	}
}
