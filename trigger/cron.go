package trigger

import (
	"math/bits"
	"time"

	"github.com/robfig/cron/v3"
)

// starBit is the bit robfig/cron sets in a field mask when the field was
// written as "*" or "?" (unstepped); it decides the day-of-month /
// day-of-week semantics.
const starBit = 1 << 63

// searchYears bounds the search of cronSchedule.Next: a spec that does not
// fire within this many calendar years (Feb 30, or Feb 29 across 2100)
// yields the zero time.
const searchYears = 5

// cronSchedule is a parsed cron expression bound to a timezone. Its masks
// have bit n set when value n matches; the star bit is kept apart.
type cronSchedule struct {
	second, minute, hour, dom, month, dow uint64
	domStar, dowStar                      bool
	// Quartz's L, W and # items of the two day fields (quartz.go).
	domRules, dowRules []dayRule
	loc                *time.Location
}

var _ Schedule = (*cronSchedule)(nil)

func newCronSchedule(s *cron.SpecSchedule, loc *time.Location) *cronSchedule {
	return &cronSchedule{
		second:  s.Second & (1<<60 - 1),
		minute:  s.Minute & (1<<60 - 1),
		hour:    s.Hour & (1<<24 - 1),
		dom:     s.Dom & (1<<32 - 2),
		month:   s.Month & (1<<13 - 2),
		dow:     s.Dow & (1<<7 - 1),
		domStar: s.Dom&starBit != 0,
		dowStar: s.Dow&starBit != 0,
		loc:     loc,
	}
}

// Next returns the first fire time strictly after after, in the schedule's
// timezone, or the zero time if the expression does not fire within five
// calendar years.
//
// Candidates are walked in increasing wall-clock order of the schedule's
// timezone, skipping by field. A candidate wall time that does not exist
// (spring-forward gap) is skipped; one that exists twice (fall-back overlap)
// stands for its first occurrence only. Mapping each wall time to its first
// occurrence is strictly increasing, so the first candidate whose instant is
// after after is the answer.
func (s *cronSchedule) Next(after time.Time) time.Time {
	a := after.In(s.loc)
	wa := civilOf(a)
	start := wa.nextSecond()
	// If after is the second occurrence of a repeated wall time, all wall
	// times up to the end of the overlap have already had their first
	// occurrence: resume the walk where the overlap ends.
	if first, ok := s.resolve(wa); ok && first.Unix() < a.Unix() {
		if zs, _ := a.ZoneBounds(); !zs.IsZero() {
			if end := civilOf(zs.Add(-time.Second)).nextSecond(); start.less(end) {
				start = end
			}
		}
	}
	limit := start.year + searchYears
	for {
		w, ok := s.nextWall(start, limit)
		if !ok {
			return time.Time{}
		}
		t, ok := s.resolve(w)
		if ok && t.After(after) {
			return t
		}
		start = w.nextSecond()
		if !ok {
			// Jump over the rest of the gap in one step.
			if end := s.gapEnd(w, t); start.less(end) {
				start = end
			}
		}
	}
}

// nextWall returns the first wall time at or after c that matches the
// expression, searching no further than the end of year limit.
func (s *cronSchedule) nextWall(c civil, limit int) (civil, bool) {
	for c.year <= limit {
		if s.month&(1<<uint(c.month)) == 0 {
			if m := nextBit(s.month, c.month+1); m >= 0 {
				c = civil{year: c.year, month: m, day: 1}
			} else {
				c = civil{year: c.year + 1, month: 1, day: 1}
			}
			continue
		}
		if !s.dayMatches(c.year, c.month, c.day) {
			c = c.nextDay()
			continue
		}
		if s.hour&(1<<uint(c.hour)) == 0 {
			if h := nextBit(s.hour, c.hour+1); h >= 0 {
				c.hour, c.min, c.sec = h, 0, 0
			} else {
				c = c.nextDay()
			}
			continue
		}
		if s.minute&(1<<uint(c.min)) == 0 {
			if m := nextBit(s.minute, c.min+1); m >= 0 {
				c.min, c.sec = m, 0
			} else {
				c = c.nextHour()
			}
			continue
		}
		if s.second&(1<<uint(c.sec)) == 0 {
			if sec := nextBit(s.second, c.sec+1); sec >= 0 {
				c.sec = sec
			} else {
				c = c.nextMinute()
			}
			continue
		}
		return c, true
	}
	return civil{}, false
}

// dayMatches applies robfig/cron's day rule: if either day field was
// written as "*" or "?", both must match; otherwise either may.
func (s *cronSchedule) dayMatches(y, m, d int) bool {
	domMatch := s.dom&(1<<uint(d)) != 0 || anyRule(s.domRules, y, m, d)
	dowMatch := s.dow&(1<<uint(weekday(y, m, d))) != 0 || anyRule(s.dowRules, y, m, d)
	if s.domStar || s.dowStar {
		return domMatch && dowMatch
	}
	return domMatch || dowMatch
}

// resolve converts a wall time to its first instant in the schedule's
// timezone. ok is false when the wall time does not exist (DST gap); t is
// then time.Date's normalisation of it.
func (s *cronSchedule) resolve(w civil) (t time.Time, ok bool) { return resolveIn(w, s.loc) }

// resolveIn is resolve in loc.
func resolveIn(w civil, loc *time.Location) (t time.Time, ok bool) {
	t = time.Date(w.year, time.Month(w.month), w.day, w.hour, w.min, w.sec, 0, loc)
	if civilOf(t) != w {
		return t, false
	}
	// time.Date may pick either occurrence of a repeated wall time. If t's
	// zone began with a backward jump, the same wall time may also have
	// existed just before it, under the previous offset.
	zs, _ := t.ZoneBounds()
	if zs.IsZero() {
		return t, true
	}
	_, off := t.Zone()
	if _, prev := zs.Add(-time.Second).Zone(); prev > off {
		first := t.Add(-time.Duration(prev-off) * time.Second)
		if first.Before(zs) && civilOf(first) == w {
			return first, true
		}
	}
	return t, true
}

// WallTime is the instant loc's wall clock reads h:min on day d of month
// m of year y (normalized as time.Date does), made deterministic where
// time.Date is not: the first of the two instants a DST fall-back
// repeats, and for a wall time in a spring-forward gap the time read
// with the offset before the gap, so moved forward by the gap (02:30 on
// a night that jumps from 02:00 to 03:00 is 03:30).
func WallTime(y int, m time.Month, d, h, min int, loc *time.Location) time.Time {
	day := time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
	w := civil{year: day.Year(), month: int(day.Month()), day: day.Day(), hour: h, min: min}
	t, ok := resolveIn(w, loc)
	if ok {
		return t
	}
	tr := gapTransition(w, t)
	if tr.IsZero() {
		return t
	}
	_, before := tr.Add(-time.Second).Zone()
	return time.Date(w.year, time.Month(w.month), w.day, h, min, 0, 0, time.UTC).Add(-time.Duration(before) * time.Second)
}

// gapEnd returns the first wall time after the DST gap that contains w,
// given t = time.Date's normalisation of w, or w itself when it cannot
// tell.
func (s *cronSchedule) gapEnd(w civil, t time.Time) civil {
	tr := gapTransition(w, t)
	if tr.IsZero() {
		return w
	}
	return civilOf(tr.In(s.loc))
}

// gapTransition is the instant of the DST jump that skips wall time w,
// given t = time.Date's normalisation of w (zero when it cannot tell).
func gapTransition(w civil, t time.Time) time.Time {
	zs, ze := t.ZoneBounds()
	if civilOf(t).less(w) {
		return ze
	}
	return zs
}

// nextBit returns the lowest set bit of mask at position from or above, or
// -1.
func nextBit(mask uint64, from int) int {
	if from >= 64 {
		return -1
	}
	m := mask >> uint(from) << uint(from)
	if m == 0 {
		return -1
	}
	return bits.TrailingZeros64(m)
}
