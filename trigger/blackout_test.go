package trigger

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func mustBlackout(t *testing.T, name, tz, expr string, dur time.Duration, ranges ...string) *Blackout {
	t.Helper()
	loc, err := Zone(tz)
	if err != nil {
		t.Fatal(err)
	}
	var start Schedule
	if expr != "" {
		start = mustParseCron(t, expr, tz)
	}
	b, err := NewBlackout(name, loc, start, dur, ranges)
	if err != nil {
		t.Fatalf("NewBlackout: %v", err)
	}
	return b
}

func TestHeld(t *testing.T) {
	// Weekends from Friday 22:00 for 56h, elapsed: across Berlin's spring
	// forward (March 29) the window ends at 07:00 local, an hour later on
	// the clock.
	weekend := mustBlackout(t, "weekend", "Europe/Berlin", "0 22 * * 5", 56*time.Hour)
	christmas := mustBlackout(t, "christmas", "America/New_York", "", 0, "2026-12-24/2026-12-26")
	springDay := mustBlackout(t, "spring-day", "America/New_York", "", 0, "2026-03-08")
	fallDay := mustBlackout(t, "fall-day", "America/New_York", "", 0, "2026-11-01")
	gap := mustBlackout(t, "gap", "America/New_York", "", 0, "2026-03-08T02:30/2026-03-08T05:00")
	golden := mustBlackout(t, "golden-week", "Asia/Shanghai", "", 0, "2026-10-01/2026-10-07")
	evening := mustBlackout(t, "evening", "Asia/Shanghai", "", 0, "2026-10-07T18:00/2026-10-08T02:00")
	cases := []struct {
		name        string
		windows     []*Blackout
		at          string
		held        bool
		window      string
		from, until string
	}{
		{"inside a weekend", []*Blackout{weekend}, "2026-03-07T12:00:00+01:00", true, "weekend",
			"2026-03-06T22:00:00+01:00", "2026-03-09T06:00:00+01:00"},
		{"the weekend of the spring forward ends an hour later on the clock", []*Blackout{weekend}, "2026-03-28T12:00:00+01:00", true, "weekend",
			"2026-03-27T22:00:00+01:00", "2026-03-30T07:00:00+02:00"},
		{"the start is held", []*Blackout{weekend}, "2026-03-06T22:00:00+01:00", true, "weekend",
			"2026-03-06T22:00:00+01:00", "2026-03-09T06:00:00+01:00"},
		{"the end is not", []*Blackout{weekend}, "2026-03-09T06:00:00+01:00", false, "", "", ""},
		{"a weekday is not", []*Blackout{weekend}, "2026-03-04T12:00:00+01:00", false, "", "", ""},
		{"dates are whole local days", []*Blackout{christmas}, "2026-12-24T00:00:00-05:00", true, "christmas",
			"2026-12-24T00:00:00-05:00", "2026-12-27T00:00:00-05:00"},
		{"the day before is not", []*Blackout{christmas}, "2026-12-23T23:59:59-05:00", false, "", "", ""},
		{"the spring-forward day lasts 23 hours", []*Blackout{springDay}, "2026-03-08T23:30:00-04:00", true, "spring-day",
			"2026-03-08T00:00:00-05:00", "2026-03-09T00:00:00-04:00"},
		{"the fall-back day lasts 25 hours", []*Blackout{fallDay}, "2026-11-01T23:30:00-05:00", true, "fall-day",
			"2026-11-01T00:00:00-04:00", "2026-11-02T00:00:00-05:00"},
		{"a wall time in the gap moves forward by the gap", []*Blackout{gap}, "2026-03-08T03:29:00-04:00", false, "", "", ""},
		{"from 03:30 EDT", []*Blackout{gap}, "2026-03-08T03:30:00-04:00", true, "gap",
			"2026-03-08T03:30:00-04:00", "2026-03-08T05:00:00-04:00"},
		{"spans that touch chain (Shanghai)", []*Blackout{golden, evening}, "2026-10-03T12:00:00+08:00", true, "golden-week",
			"2026-10-01T00:00:00+08:00", "2026-10-08T02:00:00+08:00"},
		{"the second span holds alone after the first", []*Blackout{golden, evening}, "2026-10-08T01:00:00+08:00", true, "evening",
			"2026-10-07T18:00:00+08:00", "2026-10-08T02:00:00+08:00"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h, ok := Held(c.windows, mustTime(t, c.at))
			if ok != c.held {
				t.Fatalf("Held = %v, %v; want held %v", h, ok, c.held)
			}
			if !ok {
				return
			}
			if h.Window != c.window || !h.From.Equal(mustTime(t, c.from)) || !h.Until.Equal(mustTime(t, c.until)) {
				t.Errorf("Held = %s %s..%s, want %s %s..%s", h.Window, h.From.Format(time.RFC3339), h.Until.Format(time.RFC3339), c.window, c.from, c.until)
			}
		})
	}
}

func TestBlackout_Next(t *testing.T) {
	b := mustBlackout(t, "w", "UTC", "0 22 * * 5", 56*time.Hour, "2026-03-04")
	from, to := b.Next(mustTime(t, "2026-03-01T00:00:00Z"))
	if !from.Equal(mustTime(t, "2026-03-04T00:00:00Z")) || !to.Equal(mustTime(t, "2026-03-05T00:00:00Z")) {
		t.Errorf("Next = %s..%s, want the listed day", from, to)
	}
	from, _ = b.Next(mustTime(t, "2026-03-04T00:00:00Z"))
	if !from.Equal(mustTime(t, "2026-03-06T22:00:00Z")) {
		t.Errorf("Next = %s, want Friday 22:00", from)
	}
}

func TestNewBlackout_Errors(t *testing.T) {
	weekly := mustParseCron(t, "0 22 * * 5", "UTC")
	cases := []struct {
		start  Schedule
		dur    time.Duration
		ranges []string
		field  string
		msg    string
	}{
		{weekly, 0, nil, "duration", "more than 0"},
		{weekly, 8 * 24 * time.Hour, nil, "duration", "longer than the time between two starts"},
		{nil, 0, []string{"2026-12-24", "2026-12-31T18:00"}, "ranges[1]", "needs an end"},
		{nil, 0, []string{"2026-12-31T18:00/2026-12-31T06:00"}, "ranges[0]", "ends before it starts"},
		{nil, 0, []string{"xmas"}, "ranges[0]", `"xmas" is not a date`},
	}
	for _, c := range cases {
		_, err := NewBlackout("w", time.UTC, c.start, c.dur, c.ranges)
		var e *Error
		if !errors.As(err, &e) || e.Field != c.field || !strings.Contains(e.Message, c.msg) {
			t.Errorf("NewBlackout(%s, %q) = %v, want %s: ...%s", c.dur, c.ranges, err, c.field, c.msg)
		}
	}
}
