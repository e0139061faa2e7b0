package trigger

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// A Calendar is a set of excluded days, like Quartz's holiday and weekly
// calendars: a fire time is excluded when its date, read in the
// calendar's timezone, is excluded. A day is excluded when an exclude
// entry covers it (a date, a range of dates, a weekday) and no include
// entry does (a working Saturday in a calendar that excludes weekends).
type Calendar struct {
	name     string
	loc      *time.Location
	ranges   []dayRange // excluded dates, sorted by from, merged
	weekdays uint8      // bit d: time.Weekday d is excluded
	include  []dayRange // allowed dates, sorted, merged
}

// dayRange is the days from..to, both included, as day numbers (days
// since 1970-01-01).
type dayRange struct{ from, to int64 }

// MaxCalendarSpan bounds a date range of a calendar entry.
const MaxCalendarSpan = 3660 // days, ten years

var weekdayNames = map[string]time.Weekday{
	"sun": time.Sunday, "mon": time.Monday, "tue": time.Tuesday, "wed": time.Wednesday,
	"thu": time.Thursday, "fri": time.Friday, "sat": time.Saturday,
}

// NewCalendar compiles a calendar. Each exclude entry is a date
// ("2026-12-25"), a range of dates with both ends included
// ("2026-12-24/2026-12-26") or a weekday ("sat", or its full English
// name, any case); include entries are dates or ranges. Errors are
// *Error values naming the entry ("exclude[2]"). A calendar that excludes
// all seven weekdays is refused: nothing could ever fire.
func NewCalendar(name string, loc *time.Location, exclude, include []string) (*Calendar, error) {
	c := &Calendar{name: name, loc: loc}
	for i, e := range exclude {
		if wd, ok := parseWeekday(e); ok {
			c.weekdays |= 1 << wd
			continue
		}
		r, err := parseDays(e)
		if err != nil {
			return nil, &Error{Field: fmt.Sprintf("exclude[%d]", i), Message: err.Error()}
		}
		c.ranges = append(c.ranges, r)
	}
	if c.weekdays == 1<<7-1 {
		return nil, &Error{Field: "exclude", Message: "excludes every day of the week: nothing could fire"}
	}
	for i, e := range include {
		r, err := parseDays(e)
		if err != nil {
			return nil, &Error{Field: fmt.Sprintf("include[%d]", i), Message: err.Error()}
		}
		c.include = append(c.include, r)
	}
	c.ranges, c.include = mergeDays(c.ranges), mergeDays(c.include)
	return c, nil
}

func parseWeekday(s string) (time.Weekday, bool) {
	if d, ok := weekdayNames[strings.ToLower(s)]; ok {
		return d, true
	}
	for d := time.Sunday; d <= time.Saturday; d++ {
		if strings.EqualFold(d.String(), s) {
			return d, true
		}
	}
	return 0, false
}

// parseDays parses "YYYY-MM-DD" or "YYYY-MM-DD/YYYY-MM-DD".
func parseDays(s string) (dayRange, error) {
	a, b, isRange := strings.Cut(s, "/")
	from, err := parseDay(a)
	if err != nil {
		return dayRange{}, err
	}
	to := from
	if isRange {
		if to, err = parseDay(b); err != nil {
			return dayRange{}, err
		}
		switch {
		case to < from:
			return dayRange{}, fmt.Errorf("%q: the range ends before it starts", s)
		case to-from >= MaxCalendarSpan:
			return dayRange{}, fmt.Errorf("%q: a range spans at most %d days", s, MaxCalendarSpan)
		}
	}
	return dayRange{from, to}, nil
}

func parseDay(s string) (int64, error) {
	t, err := time.Parse(time.DateOnly, s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a date (YYYY-MM-DD), a range of dates (YYYY-MM-DD/YYYY-MM-DD) or a weekday (mon..sun)", s)
	}
	return dayNumber(t.Date()), nil
}

// mergeDays sorts ranges and merges those that overlap or touch.
func mergeDays(rs []dayRange) []dayRange {
	slices.SortFunc(rs, func(a, b dayRange) int { return int(a.from - b.from) })
	out := rs[:0]
	for _, r := range rs {
		if n := len(out); n > 0 && r.from <= out[n-1].to+1 {
			out[n-1].to = max(out[n-1].to, r.to)
			continue
		}
		out = append(out, r)
	}
	return out
}

// dayNumber is the number of days from 1970-01-01 to a proleptic
// Gregorian date (normalized as time.Date does).
func dayNumber(y int, m time.Month, d int) int64 {
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC).Unix() / 86400
}

// covers reports whether a sorted, merged list holds day n.
func covers(rs []dayRange, n int64) bool {
	i, _ := slices.BinarySearchFunc(rs, n, func(r dayRange, n int64) int {
		switch {
		case r.to < n:
			return -1
		case r.from > n:
			return 1
		}
		return 0
	})
	return i < len(rs) && rs[i].from <= n && n <= rs[i].to
}

// Name returns the calendar's name.
func (c *Calendar) Name() string { return c.name }

// Location returns the calendar's timezone.
func (c *Calendar) Location() *time.Location { return c.loc }

// Excludes reports whether t's date in the calendar's timezone is
// excluded.
func (c *Calendar) Excludes(t time.Time) bool {
	y, m, d := t.In(c.loc).Date()
	n := dayNumber(y, m, d)
	if covers(c.include, n) {
		return false
	}
	return c.weekdays&(1<<time.Date(y, m, d, 0, 0, 0, 0, time.UTC).Weekday()) != 0 || covers(c.ranges, n)
}

// dayAfter returns the start of the day after t's in the calendar's
// timezone.
func (c *Calendar) dayAfter(t time.Time) time.Time {
	y, m, d := t.In(c.loc).Date()
	return time.Date(y, m, d+1, 0, 0, 0, 0, c.loc)
}

// Excluding returns the first of cals that excludes t, or nil.
func Excluding(cals []*Calendar, t time.Time) *Calendar {
	for _, c := range cals {
		if c.Excludes(t) {
			return c
		}
	}
	return nil
}

// What a trigger does with a fire on a day its calendars exclude.
const (
	// OnExcludedSkip drops the fire.
	OnExcludedSkip = "skip"
	// OnExcludedNext moves it to the same wall time on the next day the
	// calendars allow.
	OnExcludedNext = "next"
	// OnExcludedPrevious moves it to the same wall time on the previous
	// day the calendars allow ("the last business day of the month").
	OnExcludedPrevious = "previous"
)

// MaxShift bounds how many days onExcluded next or previous moves a
// fire: one with no allowed day that close is dropped.
const MaxShift = 31

// MinMovePeriod is the shortest period a trigger may have to move its
// excluded fires (next or previous): a trigger that fires more often
// than daily has another fire close by, and moving each would pile them
// up (23h: a day that DST shortens).
const MinMovePeriod = 23 * time.Hour

// excluded is a schedule without the fires its calendars exclude, moved
// or dropped.
type excluded struct {
	s    Schedule
	cals []*Calendar
	mode string
}

var _ Schedule = (*excluded)(nil)

// Exclude returns s without the fire times cals exclude: with mode
// OnExcludedSkip they are dropped; with OnExcludedNext or
// OnExcludedPrevious each moves to the same wall time (in its own
// timezone, DST resolved as WallTime does) on the nearest day in that
// direction, within MaxShift days, whose moved time no calendar
// excludes, and is dropped without one. Fires that land on the same
// time are one. Without calendars, s itself is returned.
func Exclude(s Schedule, cals []*Calendar, mode string) Schedule {
	if s == nil || len(cals) == 0 {
		return s
	}
	return &excluded{s: s, cals: cals, mode: mode}
}

// CheckExclude checks onExcluded mode for a trigger with schedule s
// (nil for one without a period): skip, next or previous, and a move only
// for a trigger that fires at most about daily (MinMovePeriod). Errors are
// *Error values naming "onExcluded".
func CheckExclude(s Schedule, mode string) error {
	switch mode {
	case "", OnExcludedSkip:
		return nil
	case OnExcludedNext, OnExcludedPrevious:
	default:
		return &Error{Field: "onExcluded", Message: fmt.Sprintf("%q: use skip, next or previous", mode)}
	}
	if s == nil {
		return nil
	}
	if p, at := Period(s); p > 0 && p < MinMovePeriod {
		return &Error{Field: "onExcluded", Message: fmt.Sprintf("%s moves fires to another day: the trigger fires more often than daily (%s between %s and %s); use skip",
			mode, p, at.UTC().Format(time.RFC3339), at.Add(p).UTC().Format(time.RFC3339))}
	}
	return nil
}

// searchEnd bounds the search for an allowed fire: ten years.
const searchEnd = 10 * 366 * 24 * time.Hour

// Next returns the first allowed or moved fire time strictly after after.
func (e *excluded) Next(after time.Time) time.Time {
	switch e.mode {
	case OnExcludedNext:
		return e.nextMoved(after, 1)
	case OnExcludedPrevious:
		return e.nextMoved(after, -1)
	}
	limit := after.Add(searchEnd)
	t := e.s.Next(after)
	for !t.IsZero() && t.Before(limit) {
		c := Excluding(e.cals, t)
		if c == nil {
			return t
		}
		// Past the excluded day at once: a schedule firing every second
		// need not be walked through a week of holidays.
		t = e.s.Next(c.dayAfter(t).Add(-time.Nanosecond))
	}
	return time.Time{}
}

// move returns where the fire at t goes: t itself when it is allowed,
// else the same wall time on the nearest allowed day in direction dir
// (+1 or -1), or the zero time when none is within MaxShift days.
func (e *excluded) move(t time.Time, dir int) time.Time {
	if Excluding(e.cals, t) == nil {
		return t
	}
	y, m, d := t.Date()
	h, mi, s := t.Clock()
	for k := 1; k <= MaxShift; k++ {
		c := WallTime(y, m, d+dir*k, h, mi, t.Location()).Add(time.Duration(s) * time.Second).In(t.Location())
		if Excluding(e.cals, c) == nil {
			return c
		}
	}
	return time.Time{}
}

// shiftSpan is how far a move can take a fire, with a day's margin for
// DST.
const shiftSpan = (MaxShift + 1) * 24 * time.Hour

// nextMoved is Next for the moving modes: the least moved time after
// after. A move takes a fire at most shiftSpan away, so the fires that
// can land after after are those from shiftSpan before it (moving
// forward) or after it (moving back), and the search stops once no later
// fire can land before the best found.
func (e *excluded) nextMoved(after time.Time, dir int) time.Time {
	from := after
	if dir > 0 {
		from = after.Add(-shiftSpan)
	}
	limit := after.Add(searchEnd)
	var best time.Time
	for t := e.s.Next(from); !t.IsZero() && t.Before(limit); t = e.s.Next(t) {
		if !best.IsZero() && (dir > 0 && t.After(best) || dir < 0 && t.Add(-shiftSpan).After(best)) {
			break
		}
		if m := e.move(t, dir); m.After(after) && (best.IsZero() || m.Before(best)) {
			best = m
		}
	}
	return best
}

// Moved returns the fire time of s whose move made the fire at at (the
// first, when several landed there), or the zero time when at is a fire
// time of s itself or s is not a moving Exclude schedule.
func Moved(s Schedule, at time.Time) time.Time {
	e, ok := s.(*excluded)
	if w, isWindow := s.(*window); isWindow {
		e, ok = w.s.(*excluded)
	}
	if !ok || e.mode == OnExcludedSkip || e.mode == "" || e.s.Next(at.Add(-time.Nanosecond)).Equal(at) {
		return time.Time{}
	}
	dir := 1
	from, to := at.Add(-shiftSpan), at
	if e.mode == OnExcludedPrevious {
		dir, from, to = -1, at, at.Add(shiftSpan)
	}
	for t := e.s.Next(from); !t.IsZero() && !t.After(to); t = e.s.Next(t) {
		if e.move(t, dir).Equal(at) {
			return t
		}
	}
	return time.Time{}
}
