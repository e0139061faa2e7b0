package trigger

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// A Blackout is a blackout window's schedule: the spans in which the
// tasks it applies to do not fire. It repeats (a cron start and a
// duration: "0 22 * * 5" for 56h is every weekend from Friday 22:00),
// lists spans (whole dates, ranges of dates, ranges of local times), or
// both.
type Blackout struct {
	name  string
	start Schedule      // nil without a repeating part
	dur   time.Duration // of each repeat
	spans []span        // sorted by from
}

// span is [from, to).
type span struct{ from, to time.Time }

// MaxBlackout bounds a blackout's repeat duration and each listed span.
const MaxBlackout = 366 * 24 * time.Hour

// NewBlackout compiles a blackout window named name: start (nil for
// none) fires the start of each repeat, which lasts dur (elapsed time);
// each of ranges is a date ("2026-12-25": that whole day), a range of
// dates with both ends included ("2026-12-24/2026-12-26") or a range of
// wall times, the end excluded ("2026-12-31T18:00/2027-01-01T06:00"), all
// in loc (a wall time in a DST gap moves forward by the gap, a repeated
// one is its first occurrence; a day is midnight to midnight, 23 or 25
// hours across DST). Errors are *Error values naming "duration" or the
// entry ("ranges[1]").
func NewBlackout(name string, loc *time.Location, start Schedule, dur time.Duration, ranges []string) (*Blackout, error) {
	b := &Blackout{name: name, start: start, dur: dur}
	if start != nil && (dur <= 0 || dur > MaxBlackout) {
		return nil, &Error{Field: "duration", Message: fmt.Sprintf("must be more than 0 and at most %s, got %s", MaxBlackout, dur)}
	}
	if start == nil {
		dur = 0
	} else if p, at := Period(start); p > 0 && dur > p {
		return nil, &Error{Field: "duration", Message: fmt.Sprintf("%s is longer than the time between two starts, %s (%s and %s)",
			dur, p, at.UTC().Format(time.RFC3339), at.Add(p).UTC().Format(time.RFC3339))}
	}
	for i, r := range ranges {
		s, err := parseSpan(r, loc)
		if err != nil {
			return nil, &Error{Field: fmt.Sprintf("ranges[%d]", i), Message: err.Error()}
		}
		b.spans = append(b.spans, s)
	}
	slices.SortFunc(b.spans, func(x, y span) int { return x.from.Compare(y.from) })
	return b, nil
}

// parseSpan parses a blackout range in loc.
func parseSpan(s string, loc *time.Location) (span, error) {
	a, z, isRange := strings.Cut(s, "/")
	if !strings.Contains(s, "T") {
		r, err := parseDays(s)
		if err != nil {
			return span{}, fmt.Errorf("%q is not a date, a range of dates or a range of wall times (2026-12-31T18:00/2027-01-01T06:00)", s)
		}
		from := time.Unix(r.from*86400, 0).UTC()
		to := time.Unix(r.to*86400, 0).UTC()
		return span{time.Date(from.Year(), from.Month(), from.Day(), 0, 0, 0, 0, loc),
			time.Date(to.Year(), to.Month(), to.Day()+1, 0, 0, 0, 0, loc)}, nil
	}
	if !isRange {
		return span{}, fmt.Errorf("%q: a wall time needs an end (2026-12-31T18:00/2027-01-01T06:00)", s)
	}
	from, err := parseWall(a, loc)
	if err != nil {
		return span{}, err
	}
	to, err := parseWall(z, loc)
	if err != nil {
		return span{}, err
	}
	switch {
	case !to.After(from):
		return span{}, fmt.Errorf("%q: the range ends before it starts", s)
	case to.Sub(from) > MaxBlackout:
		return span{}, fmt.Errorf("%q: a range spans at most %s", s, MaxBlackout)
	}
	return span{from, to}, nil
}

func parseWall(s string, loc *time.Location) (time.Time, error) {
	t, err := time.Parse("2006-01-02T15:04", s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is not a wall time (YYYY-MM-DDTHH:MM)", s)
	}
	return WallTime(t.Year(), t.Month(), t.Day(), t.Hour(), t.Minute(), loc), nil
}

// Name returns the window's name.
func (b *Blackout) Name() string { return b.name }

// covering returns the span of b that holds t, the one that ends last
// when several do.
func (b *Blackout) covering(t time.Time) (from, to time.Time, ok bool) {
	if b.start != nil {
		// A repeat holds t when it started in (t-dur, t]; the first such
		// start is the earliest of them.
		for s := b.start.Next(t.Add(-b.dur)); !s.IsZero() && !s.After(t); s = b.start.Next(s) {
			if !ok {
				from = s
			}
			to, ok = s.Add(b.dur), true
		}
	}
	i, _ := slices.BinarySearchFunc(b.spans, t, func(s span, t time.Time) int {
		if s.from.After(t) {
			return 1
		}
		return -1
	})
	for _, s := range b.spans[:i] {
		if t.Before(s.to) {
			if !ok || s.from.Before(from) {
				from = s.from
			}
			if !ok || s.to.After(to) {
				to = s.to
			}
			ok = true
		}
	}
	return from, to, ok
}

// Next returns the first span of b that starts strictly after after, or
// zero times when there is none.
func (b *Blackout) Next(after time.Time) (from, to time.Time) {
	if b.start != nil {
		if s := b.start.Next(after); !s.IsZero() {
			from, to = s, s.Add(b.dur)
		}
	}
	for _, s := range b.spans {
		if s.from.After(after) {
			if from.IsZero() || s.from.Before(from) {
				from, to = s.from, s.to
			}
			break
		}
	}
	return from, to
}

// Hold is where blackout windows hold a task's fires.
type Hold struct {
	// Window is the name of the window that holds t (the first listed
	// of those that do).
	Window string
	// From is when the earliest span holding t began; Until is when the
	// hold ends: the end of the spans that hold t, and of the spans that
	// hold that end in turn.
	From, Until time.Time
}

// maxChain bounds the spans that Held follows end to end.
const maxChain = 1000

// Held returns the hold of windows bs at t, if any window holds t.
func Held(bs []*Blackout, t time.Time) (Hold, bool) {
	var h Hold
	for _, b := range bs {
		from, to, ok := b.covering(t)
		if !ok {
			continue
		}
		if h.Window == "" {
			h = Hold{Window: b.name, From: from, Until: to}
			continue
		}
		h.From, h.Until = minTime(h.From, from), maxTime(h.Until, to)
	}
	if h.Window == "" {
		return h, false
	}
	// Spans that overlap or touch the end extend the hold.
	for range maxChain {
		end := h.Until
		for _, b := range bs {
			if _, to, ok := b.covering(end); ok && to.After(h.Until) {
				h.Until = to
			}
		}
		if !h.Until.After(end) {
			break
		}
	}
	return h, true
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
