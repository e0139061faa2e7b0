package trigger

import (
	"fmt"
	"math/bits"
	"time"
)

// Schedule computes the fire times of a trigger.
//
// Next must be deterministic, depending only on the schedule and after, and
// strictly increasing: Next(after) > after for every non-zero result.
type Schedule interface {
	// Next returns the first fire time strictly after after, or the zero
	// time when there is none. Compare results with time.Time.Equal; the
	// location of the result is the schedule's own.
	Next(after time.Time) time.Time
}

// every fires at the multiples of sec seconds since the Unix epoch.
type every struct {
	sec int64
	loc *time.Location
}

var _ Schedule = (*every)(nil)

// Next returns the first multiple of the period since the Unix epoch that is
// strictly after after, in the schedule's timezone.
func (e *every) Next(after time.Time) time.Time {
	u := after.Unix() // floor: Nanosecond is always in [0, 1e9)
	q := u / e.sec
	if u%e.sec < 0 {
		q--
	}
	return time.Unix((q+1)*e.sec, 0).In(e.loc)
}

// interval fires at start + k·period, k >= 0.
type interval struct {
	period time.Duration
	start  time.Time
}

var _ Schedule = (*interval)(nil)

// Interval returns a Schedule that fires at startAt + k·every for every
// k >= 0, in startAt's location. every must be at least 1s; it need not be
// a whole number of seconds. A zero startAt anchors the schedule at the Unix
// epoch. Errors are *Error values with Field FieldEvery.
func Interval(every time.Duration, startAt time.Time) (Schedule, error) {
	if every < time.Second {
		return nil, &Error{Field: FieldEvery, Message: fmt.Sprintf("must be at least 1s, got %s", every)}
	}
	if startAt.IsZero() {
		startAt = time.Unix(0, 0).UTC()
	}
	return &interval{period: every, start: startAt}, nil
}

// Next returns start + k·period for the smallest k >= 0 that is strictly
// after after. It is exact for any distance between after and the start.
func (iv *interval) Next(after time.Time) time.Time {
	if after.Before(iv.start) {
		return iv.start
	}
	// diff = after - start in nanoseconds, as a 128-bit number, since it
	// may not fit a time.Duration.
	ds := after.Unix() - iv.start.Unix()
	dn := int64(after.Nanosecond() - iv.start.Nanosecond())
	if dn < 0 {
		ds--
		dn += 1e9
	}
	hi, lo := bits.Mul64(uint64(ds), 1e9)
	var carry uint64
	lo, carry = bits.Add64(lo, uint64(dn), 0)
	hi += carry
	// hi < 2^63·1e9 / 2^64 < period, so the divisions cannot overflow.
	k, _ := bits.Div64(hi, lo, uint64(iv.period))
	hi, lo = bits.Mul64(k+1, uint64(iv.period))
	sec, ns := bits.Div64(hi, lo, 1e9)
	return time.Unix(iv.start.Unix()+int64(sec), int64(iv.start.Nanosecond())+int64(ns)).In(iv.start.Location())
}

// once fires a single time.
type once struct {
	at time.Time
}

var _ Schedule = (*once)(nil)

// Once returns a Schedule that fires only at at: Next(after) is at when at
// is after after, and the zero time otherwise. A zero at never fires.
func Once(at time.Time) Schedule {
	return &once{at: at}
}

// Next returns the single fire time if it is strictly after after.
func (o *once) Next(after time.Time) time.Time {
	if o.at.IsZero() || !o.at.After(after) {
		return time.Time{}
	}
	return o.at
}

// Between returns the fire times of s in (from, to], in order, at most
// limit of them (none when limit <= 0). It is meant for backfill and
// misfire catch-up; callers choose limit to bound the work.
func Between(s Schedule, from, to time.Time, limit int) []time.Time {
	var out []time.Time
	for len(out) < limit {
		t := s.Next(from)
		if t.IsZero() || t.After(to) || !t.After(from) {
			break // the schedule ended, passed to, or does not advance
		}
		out = append(out, t)
		from = t
	}
	return out
}

// NextN returns the first n fire times of s strictly after after, fewer if
// the schedule ends.
func NextN(s Schedule, after time.Time, n int) []time.Time {
	var out []time.Time
	for len(out) < n {
		t := s.Next(after)
		if t.IsZero() || !t.After(after) {
			break // the schedule ended or does not advance
		}
		out = append(out, t)
		after = t
	}
	return out
}
