package trigger

import (
	"fmt"
	"time"
)

// window bounds a schedule to [start, end].
type window struct {
	s          Schedule
	start, end time.Time
}

var _ Schedule = (*window)(nil)

// Window returns s bounded to [start, end]: its fire times before start or
// after end are dropped (a fire exactly at start or at end stays). A zero
// start or end leaves that side open; with both zero, s itself is
// returned. The bounds apply to the nominal fire times, before any jitter
// (Jitter).
func Window(s Schedule, start, end time.Time) Schedule {
	if s == nil || (start.IsZero() && end.IsZero()) {
		return s
	}
	return &window{s: s, start: start, end: end}
}

// Next returns the first fire time of the inner schedule strictly after
// after and in the window, or the zero time.
func (w *window) Next(after time.Time) time.Time {
	if !w.start.IsZero() && after.Before(w.start) {
		// Just before start, so that a fire at start counts.
		after = w.start.Add(-time.Nanosecond)
	}
	t := w.s.Next(after)
	if t.IsZero() || (!w.end.IsZero() && t.After(w.end)) {
		return time.Time{}
	}
	return t
}

// CheckLimits checks what bounds a trigger beside its schedule s (nil
// for a trigger without a period): end, when both are set, after start;
// maxRuns not negative; the jitter as CheckJitter says. Errors are
// *Error values naming FieldEndAt, FieldMaxRuns or FieldJitter.
func CheckLimits(s Schedule, start, end time.Time, maxRuns int64, jitter time.Duration) error {
	if !start.IsZero() && !end.IsZero() && !end.After(start) {
		return &Error{Field: FieldEndAt, Message: fmt.Sprintf("%s is not after startAt %s",
			end.UTC().Format(time.RFC3339), start.UTC().Format(time.RFC3339))}
	}
	if maxRuns < 0 {
		return &Error{Field: FieldMaxRuns, Message: fmt.Sprintf("must not be negative, got %d", maxRuns)}
	}
	return CheckJitter(s, jitter)
}

// RunsLeft returns how many fires maxRuns leaves after runs (-1: no
// limit, maxRuns 0).
func RunsLeft(maxRuns int64, runs uint64) int {
	if maxRuns <= 0 {
		return -1
	}
	return int(max(maxRuns-int64(min(runs, 1<<62)), 0))
}
