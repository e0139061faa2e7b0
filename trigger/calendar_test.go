package trigger

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// 2026 transitions: America/New_York springs forward on March 8 (02:00
// EST to 03:00 EDT) and falls back on November 1; Europe/Berlin springs
// forward on March 29 and falls back on October 25; Asia/Shanghai has no
// DST.

func mustCalendar(t *testing.T, tz string, exclude, include []string) *Calendar {
	t.Helper()
	loc, err := Zone(tz)
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewCalendar("cal", loc, exclude, include)
	if err != nil {
		t.Fatalf("NewCalendar: %v", err)
	}
	return c
}

func TestExclude_Fires(t *testing.T) {
	weekends := []string{"sat", "Sunday"}
	cases := []struct {
		name             string
		expr, tz         string
		calTZ            string
		exclude, include []string
		mode             string
		after            string
		n                int
		want             []string
	}{
		{"skip: an excluded day does not fire", "0 9 * * *", "UTC", "UTC", []string{"2026-12-25"}, nil, "skip",
			"2026-12-23T12:00:00Z", 3, []string{"2026-12-24T09:00:00Z", "2026-12-26T09:00:00Z", "2026-12-27T09:00:00Z"}},
		{"skip: weekends and a golden week, with a working Saturday (Shanghai)", "0 9 * * *", "Asia/Shanghai", "Asia/Shanghai",
			append([]string{"2026-10-01/2026-10-07"}, weekends...), []string{"2026-10-10"}, "skip",
			"2026-09-30T12:00:00+08:00", 4,
			[]string{"2026-10-08T09:00:00+08:00", "2026-10-09T09:00:00+08:00", "2026-10-10T09:00:00+08:00", "2026-10-12T09:00:00+08:00"}},
		{"skip: the date is read in the calendar's zone", "0 20 * * *", "UTC", "Asia/Shanghai", []string{"2026-12-25"}, nil, "skip",
			"2026-12-23T21:00:00Z", 2, []string{"2026-12-25T20:00:00Z", "2026-12-26T20:00:00Z"}},
		{"skip: every minute past a holiday week", "* * * * *", "UTC", "UTC", []string{"2026-12-24/2026-12-31"}, nil, "skip",
			"2026-12-23T23:58:00Z", 2, []string{"2026-12-23T23:59:00Z", "2027-01-01T00:00:00Z"}},
		{"next: a holiday's fire moves to the next allowed day", "0 9 1 * *", "UTC", "UTC", []string{"2026-01-01"}, nil, "next",
			"2025-12-31T00:00:00Z", 2, []string{"2026-01-02T09:00:00Z", "2026-02-01T09:00:00Z"}},
		{"next: moved fires landing on a fire are one", "0 9 * * *", "UTC", "UTC", []string{"2026-12-24/2026-12-26"}, nil, "next",
			"2026-12-22T12:00:00Z", 3, []string{"2026-12-23T09:00:00Z", "2026-12-27T09:00:00Z", "2026-12-28T09:00:00Z"}},
		{"previous: moved fires landing on a fire are one", "0 9 * * *", "UTC", "UTC", []string{"2026-12-24/2026-12-26"}, nil, "previous",
			"2026-12-22T12:00:00Z", 2, []string{"2026-12-23T09:00:00Z", "2026-12-27T09:00:00Z"}},
		{"previous: the last business day of the month (Berlin, across both DST changes)", "0 18 L * *", "Europe/Berlin", "Europe/Berlin",
			weekends, nil, "previous", "2026-01-01T00:00:00+01:00", 10,
			[]string{"2026-01-30T18:00:00+01:00", "2026-02-27T18:00:00+01:00", "2026-03-31T18:00:00+02:00", "2026-04-30T18:00:00+02:00",
				"2026-05-29T18:00:00+02:00", "2026-06-30T18:00:00+02:00", "2026-07-31T18:00:00+02:00", "2026-08-31T18:00:00+02:00",
				"2026-09-30T18:00:00+02:00", "2026-10-30T18:00:00+01:00"}},
		{"next: a move into the spring-forward gap goes forward by the gap (New York)", "30 2 * * *", "America/New_York", "America/New_York",
			[]string{"2026-03-07"}, nil, "next", "2026-03-06T12:00:00-05:00", 2,
			[]string{"2026-03-08T03:30:00-04:00", "2026-03-09T02:30:00-04:00"}},
		{"previous: a move to the fall-back day takes the first 01:30 (New York)", "30 1 * * *", "America/New_York", "America/New_York",
			[]string{"2026-11-02"}, nil, "previous", "2026-10-31T12:00:00-04:00", 2,
			[]string{"2026-11-01T01:30:00-04:00", "2026-11-03T01:30:00-05:00"}},
		{"next: no allowed day within 31 days drops the fire", "0 9 1 * *", "UTC", "UTC", []string{"2026-01-01/2026-03-31"}, nil, "next",
			"2025-12-31T00:00:00Z", 2, []string{"2026-04-01T09:00:00Z", "2026-05-01T09:00:00Z"}},
		{"skip: everything excluded for ten years ends the schedule", "0 9 * * *", "UTC", "UTC",
			[]string{"2026-01-01/2035-12-31", "2036-01-01/2036-12-31"}, nil, "skip", "2025-12-31T12:00:00Z", 1, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cal := mustCalendar(t, c.calTZ, c.exclude, c.include)
			s := Exclude(mustParseCron(t, c.expr, c.tz), []*Calendar{cal}, c.mode)
			checkTimes(t, NextN(s, mustTime(t, c.after), c.n), c.want)
		})
	}
}

func TestExclude_Moved(t *testing.T) {
	cal := mustCalendar(t, "Europe/Berlin", []string{"sat", "sun"}, nil)
	s := Window(Exclude(mustParseCron(t, "0 18 L * *", "Europe/Berlin"), []*Calendar{cal}, OnExcludedPrevious), time.Time{}, time.Time{})
	at := mustTime(t, "2026-01-30T18:00:00+01:00")
	if got := Moved(s, at); !got.Equal(mustTime(t, "2026-01-31T18:00:00+01:00")) {
		t.Errorf("Moved(%s) = %s, want the 31st", at, got)
	}
	if got := Moved(s, mustTime(t, "2026-03-31T18:00:00+02:00")); !got.IsZero() {
		t.Errorf("a fire on its own day: Moved = %s, want zero", got)
	}
	skip := Exclude(mustParseCron(t, "0 9 * * *", "UTC"), []*Calendar{cal}, OnExcludedSkip)
	if got := Moved(skip, mustTime(t, "2026-01-30T09:00:00Z")); !got.IsZero() {
		t.Errorf("skip: Moved = %s, want zero", got)
	}
}

func TestNewCalendar_Errors(t *testing.T) {
	cases := []struct {
		exclude, include []string
		field, msg       string
	}{
		{[]string{"2026-12-25", "Dec 26"}, nil, "exclude[1]", `"Dec 26" is not a date`},
		{[]string{"2026-12-26/2026-12-24"}, nil, "exclude[0]", "ends before it starts"},
		{[]string{"2026-01-01/2040-01-01"}, nil, "exclude[0]", "at most 3660 days"},
		{[]string{"mon", "tue", "wed", "thu", "fri", "sat", "sun"}, nil, "exclude", "every day of the week"},
		{nil, []string{"sat"}, "include[0]", `"sat" is not a date`},
	}
	for _, c := range cases {
		_, err := NewCalendar("c", time.UTC, c.exclude, c.include)
		var e *Error
		if !errors.As(err, &e) || e.Field != c.field || !strings.Contains(e.Message, c.msg) {
			t.Errorf("NewCalendar(%q, %q) = %v, want %s: ...%s", c.exclude, c.include, err, c.field, c.msg)
		}
	}
}

func TestCheckExclude(t *testing.T) {
	daily, hourly := mustParseCron(t, "0 9 * * *", "America/New_York"), mustParseCron(t, "0 * * * *", "UTC")
	for _, c := range []struct {
		s    Schedule
		mode string
		err  string
	}{
		{daily, "next", ""}, {daily, "previous", ""}, {hourly, "skip", ""}, {hourly, "", ""}, {nil, "next", ""},
		{hourly, "next", "fires more often than daily (1h0m0s"},
		{daily, "later", `"later": use skip, next or previous`},
	} {
		err := CheckExclude(c.s, c.mode)
		if (err == nil) != (c.err == "") || err != nil && !strings.Contains(err.Error(), c.err) {
			t.Errorf("CheckExclude(%q) = %v, want %q", c.mode, err, c.err)
		}
	}
}

func BenchmarkExclude_NextMoved(b *testing.B) {
	loc, _ := Zone("Europe/Berlin")
	cal, _ := NewCalendar("c", loc, []string{"sat", "sun", "2026-12-24/2026-12-26"}, nil)
	s := Exclude(mustParseCron(b, "0 18 * * *", "Europe/Berlin"), []*Calendar{cal}, OnExcludedNext)
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, loc)
	for b.Loop() {
		at = s.Next(at)
	}
}

// BenchmarkCalendarNext compares a plain schedule's Next with the same
// schedule under a calendar of 60 excluded days (skip) and with the
// check of two blackout windows that are not in force: what a fire of a
// task with calendars and windows costs the leader's scheduler beyond a
// plain one.
func BenchmarkCalendarNext(b *testing.B) {
	s := mustParseCron(b, "*/10 * * * * *", "UTC")
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var days []string
	for d := 2; len(days) < 60; d += 3 {
		days = append(days, start.AddDate(0, 0, d).Format(time.DateOnly))
	}
	cal, _ := NewCalendar("c", time.UTC, days, nil)
	w1, _ := NewBlackout("w1", time.UTC, mustParseCron(b, "0 3 * * *", "UTC"), time.Hour, nil)
	w2, _ := NewBlackout("w2", time.UTC, nil, 0, []string{"2027-01-01"})
	holds := []*Blackout{w1, w2}
	for _, c := range []struct {
		name  string
		s     Schedule
		holds []*Blackout
	}{{"plain", s, nil}, {"calendar", Exclude(s, []*Calendar{cal}, OnExcludedSkip), nil}, {"calendar+windows", Exclude(s, []*Calendar{cal}, OnExcludedSkip), holds}} {
		b.Run(c.name, func(b *testing.B) {
			at := start
			for b.Loop() {
				at = c.s.Next(at)
				if len(c.holds) > 0 {
					Held(c.holds, at)
				}
			}
		})
	}
}
