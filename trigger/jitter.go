package trigger

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"time"
)

// MaxJitter bounds a trigger's jitter.
const MaxJitter = 7 * 24 * time.Hour

// Jitter returns how much later than its nominal time at the fire of task
// happens: a whole number of jitter steps in [0, jitter), and below
// next-at when next (the schedule's following fire time) is not zero, so
// that moved fires keep their order and a fire never moves past the
// next one (a DST change can make a gap shorter than the jitter).
//
// A step is a hundredth of the jitter, in whole milliseconds, at least
// 1ms and at most 100ms (1ms when the gap to the next fire is shorter
// than a step): fires moved into the same step are due together and
// share the leader's log entry, so spreading a thousand tasks over the
// jitter costs at most ten entries a second more, not one per task.
//
// It is deterministic: a function of the task name and the fire time
// (the first 8 bytes of SHA-256 over the name, a zero byte and the time's
// Unix milliseconds, big endian, modulo the number of steps), so every
// replica, every leader and every restart moves a fire alike. A jitter
// under 1ms moves nothing.
func Jitter(task string, at, next time.Time, jitter time.Duration) time.Duration {
	span := jitter.Milliseconds()
	step := min(max(span/100, 1), 100)
	if !next.IsZero() {
		span = min(span, next.Sub(at).Milliseconds())
	}
	if span <= 0 {
		return 0
	}
	if span < step {
		step = 1
	}
	b := make([]byte, 0, len(task)+9)
	b = append(b, task...)
	b = append(b, 0)
	b = binary.BigEndian.AppendUint64(b, uint64(at.UnixMilli()))
	sum := sha256.Sum256(b)
	steps := uint64(span / step)
	return time.Duration(binary.BigEndian.Uint64(sum[:8])%steps*uint64(step)) * time.Millisecond
}

// Period searches the fires of two years from a fixed time, at most
// 1,000 of them.
var periodFrom = time.Date(2024, time.January, 1, 0, 0, 0, 0, time.UTC)

const (
	periodFires = 1000
	periodSpan  = 2 * 366 * 24 * time.Hour
)

// Period returns the shortest time between two consecutive fires of s
// among its first 1,000 fires after 2024-01-01T00:00:00Z within two
// years, and the first fire of that pair; zero when fewer than two fires
// fall there (a once schedule, a yearly date). The sample is fixed, so the
// answer depends only on s; a cron schedule should be given in UTC so that
// it does not depend on a zone's DST rules either (Jitter handles a gap
// that DST shortens).
func Period(s Schedule) (time.Duration, time.Time) {
	var best time.Duration
	var at time.Time
	prev := s.Next(periodFrom.Add(-time.Nanosecond))
	end := periodFrom.Add(periodSpan)
	for i := 1; i < periodFires && !prev.IsZero() && !prev.After(end); i++ {
		t := s.Next(prev)
		if t.IsZero() || t.After(end) {
			break
		}
		if d := t.Sub(prev); best == 0 || d < best {
			best, at = d, prev
		}
		prev = t
	}
	return best, at
}

// CheckJitter checks a trigger's jitter against its period (Period of
// s; nil for a trigger without one): at least 1ms, at most MaxJitter,
// and less than the period. Errors are *Error values naming FieldJitter.
func CheckJitter(s Schedule, jitter time.Duration) error {
	switch {
	case jitter == 0:
		return nil
	case jitter < 0:
		return &Error{Field: FieldJitter, Message: fmt.Sprintf("must not be negative, got %s", jitter)}
	case jitter < time.Millisecond:
		return &Error{Field: FieldJitter, Message: fmt.Sprintf("must be at least 1ms, got %s", jitter)}
	case jitter > MaxJitter:
		return &Error{Field: FieldJitter, Message: fmt.Sprintf("must be at most %s, got %s", MaxJitter, jitter)}
	}
	if s == nil {
		return nil
	}
	if p, at := Period(s); p > 0 && jitter >= p {
		return &Error{Field: FieldJitter, Message: fmt.Sprintf("must be less than the trigger's period, %s (the fires at %s and %s)",
			p, at.UTC().Format(time.RFC3339), at.Add(p).UTC().Format(time.RFC3339))}
	}
	return nil
}
