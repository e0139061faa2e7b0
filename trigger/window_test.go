package trigger

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// mustInterval returns an interval schedule or fails the test.
func mustInterval(t *testing.T, d time.Duration, start time.Time) Schedule {
	t.Helper()
	s, err := Interval(d, start)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// optTime parses an RFC 3339 time, "" as the zero time.
func optTime(t *testing.T, s string) time.Time {
	t.Helper()
	if s == "" {
		return time.Time{}
	}
	return mustTime(t, s)
}

func TestWindow_Next(t *testing.T) {
	every := func(d time.Duration) Schedule { return mustInterval(t, d, time.Time{}) }
	tests := []struct {
		name       string
		s          Schedule
		start, end string // "" for open
		after      string
		n          int
		want       []string
	}{
		{"open both sides is the schedule", mustParseCron(t, "0 * * * *", "UTC"), "", "", "2026-03-01T10:30:00Z", 2,
			[]string{"2026-03-01T11:00:00Z", "2026-03-01T12:00:00Z"}},
		{"nothing before start", mustParseCron(t, "0 * * * *", "UTC"), "2026-03-01T14:10:00Z", "", "2026-03-01T10:30:00Z", 2,
			[]string{"2026-03-01T15:00:00Z", "2026-03-01T16:00:00Z"}},
		{"a fire at start counts", mustParseCron(t, "0 * * * *", "UTC"), "2026-03-01T14:00:00Z", "", "2026-03-01T10:30:00Z", 1,
			[]string{"2026-03-01T14:00:00Z"}},
		{"a fire at end counts, none after", mustParseCron(t, "0 * * * *", "UTC"), "", "2026-03-01T12:00:00Z", "2026-03-01T10:30:00Z", 5,
			[]string{"2026-03-01T11:00:00Z", "2026-03-01T12:00:00Z"}},
		{"both bounds", every(20 * time.Minute), "2026-03-01T10:10:00Z", "2026-03-01T11:00:00Z", "2026-03-01T09:00:00Z", 10,
			[]string{"2026-03-01T10:20:00Z", "2026-03-01T10:40:00Z", "2026-03-01T11:00:00Z"}},
		{"after the end: nothing", every(time.Minute), "", "2026-03-01T11:00:00Z", "2026-03-01T11:00:00Z", 3, nil},
		{"once outside the window", Once(mustTime(t, "2026-03-01T09:00:00Z")), "2026-03-01T10:00:00Z", "", "2026-03-01T08:00:00Z", 3, nil},
		{"sub-second start on a cron", mustParseCron(t, "* * * * * *", "UTC"), "2026-03-01T10:00:00.5Z", "", "2026-03-01T09:00:00Z", 2,
			[]string{"2026-03-01T10:00:01Z", "2026-03-01T10:00:02Z"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start, end := optTime(t, tt.start), optTime(t, tt.end)
			w := Window(tt.s, start, end)
			checkTimes(t, NextN(w, mustTime(t, tt.after), tt.n), tt.want)
			// Between (backfill, catch-up) honours the window too.
			if len(tt.want) > 0 {
				from := mustTime(t, tt.after)
				last := mustTime(t, tt.want[len(tt.want)-1])
				checkTimes(t, Between(w, from, last.Add(24*time.Hour), tt.n), tt.want)
			}
		})
	}
}

// TestWindow_DST: startAt and endAt are instants, so across a DST change
// the window keeps exactly the fires whose instant falls in it, including
// which occurrence of a repeated wall time it is.
func TestWindow_DST(t *testing.T) {
	tests := []struct {
		name, expr, tz, start, end, after string
		want                              []string
	}{
		{"New York spring: the skipped 02:30 is not replaced", "30 2 * * *", "America/New_York",
			"2025-03-08T00:00:00-05:00", "2025-03-11T02:30:00-04:00", "2025-03-01T00:00:00Z",
			[]string{"2025-03-08T02:30:00-05:00", "2025-03-10T02:30:00-04:00", "2025-03-11T02:30:00-04:00"}},
		{"New York fall: endAt in the repeated hour, by instant", "*/30 * * * *", "America/New_York",
			"2025-11-02T00:45:00-04:00", "2025-11-02T01:10:00-05:00", "2025-11-01T00:00:00Z",
			[]string{"2025-11-02T01:00:00-04:00", "2025-11-02T01:30:00-04:00"}},
		{"Berlin fall: startAt at the second 02:00 drops the first", "0 * * * *", "Europe/Berlin",
			"2025-10-26T02:00:00+01:00", "2025-10-26T05:00:00+01:00", "2025-10-25T00:00:00Z",
			[]string{"2025-10-26T03:00:00+01:00", "2025-10-26T04:00:00+01:00", "2025-10-26T05:00:00+01:00"}},
		{"Berlin spring: window over the gap", "30 * * * *", "Europe/Berlin",
			"2025-03-30T01:00:00+01:00", "2025-03-30T04:00:00+02:00", "2025-03-29T00:00:00Z",
			[]string{"2025-03-30T01:30:00+01:00", "2025-03-30T03:30:00+02:00"}},
		{"Shanghai 1990 spring: 02:30 did not exist", "30 2 * * *", "Asia/Shanghai",
			"1990-04-14T00:00:00+08:00", "1990-04-16T12:00:00+09:00", "1990-04-01T00:00:00Z",
			[]string{"1990-04-14T02:30:00+08:00", "1990-04-16T02:30:00+09:00"}},
		{"Shanghai 1990 fall: 01:30 fires once, startAt between the two", "30 1 * * *", "Asia/Shanghai",
			"1990-09-16T01:00:00+08:00", "1990-09-18T00:00:00+08:00", "1990-09-01T00:00:00Z",
			[]string{"1990-09-17T01:30:00+08:00"}},
		{"Shanghai today: no DST, daily window", "0 9 * * *", "Asia/Shanghai",
			"2026-03-08T09:00:00+08:00", "2026-03-10T09:00:00+08:00", "2026-03-01T00:00:00Z",
			[]string{"2026-03-08T09:00:00+08:00", "2026-03-09T09:00:00+08:00", "2026-03-10T09:00:00+08:00"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := Window(mustParseCron(t, tt.expr, tt.tz), mustTime(t, tt.start), mustTime(t, tt.end))
			checkTimes(t, NextN(w, mustTime(t, tt.after), 10), tt.want)
		})
	}
}

func TestCheckLimits(t *testing.T) {
	hourly := mustParseCron(t, "0 * * * *", "UTC")
	tests := []struct {
		name       string
		s          Schedule
		start, end string
		maxRuns    int64
		jitter     time.Duration
		field, msg string // "" for no error
	}{
		{"all unset", hourly, "", "", 0, 0, "", ""},
		{"window and limits", hourly, "2026-01-01T00:00:00Z", "2026-02-01T00:00:00Z", 3, 59 * time.Minute, "", ""},
		{"only an end", hourly, "", "2026-02-01T00:00:00Z", 0, 0, "", ""},
		{"end before start", hourly, "2026-02-01T00:00:00Z", "2026-01-01T00:00:00Z", 0, 0, FieldEndAt,
			"2026-01-01T00:00:00Z is not after startAt 2026-02-01T00:00:00Z"},
		{"end equal to start", hourly, "2026-02-01T00:00:00Z", "2026-02-01T00:00:00Z", 0, 0, FieldEndAt, "is not after startAt"},
		{"negative maxRuns", hourly, "", "", -1, 0, FieldMaxRuns, "must not be negative, got -1"},
		{"negative jitter", hourly, "", "", 0, -time.Second, FieldJitter, "must not be negative"},
		{"jitter under 1ms", hourly, "", "", 0, time.Microsecond, FieldJitter, "must be at least 1ms"},
		{"jitter equal to the period", hourly, "", "", 0, time.Hour, FieldJitter,
			"must be less than the trigger's period, 1h0m0s (the fires at 2024-01-01T00:00:00Z and 2024-01-01T01:00:00Z)"},
		{"jitter above a week", nil, "", "", 0, 8 * 24 * time.Hour, FieldJitter, "must be at most 168h0m0s"},
		{"once: no period", nil, "", "", 0, 48 * time.Hour, "", ""},
		{"shortest gap of an uneven cron", mustParseCron(t, "0 9,10 * * *", "UTC"), "", "", 0, 90 * time.Minute, FieldJitter,
			"period, 1h0m0s (the fires at 2024-01-01T09:00:00Z and 2024-01-01T10:00:00Z)"},
		{"weekday cron: the period is a day", mustParseCron(t, "0 9 * * 1-5", "UTC"), "", "", 0, 23 * time.Hour, "", ""},
		{"too rare to sample: no period", mustParseCron(t, "0 0 29 2 *", "UTC"), "", "", 0, 100 * time.Hour, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start, end := optTime(t, tt.start), optTime(t, tt.end)
			err := CheckLimits(tt.s, start, end, tt.maxRuns, tt.jitter)
			if tt.field == "" {
				if err != nil {
					t.Fatalf("got %v, want no error", err)
				}
				return
			}
			var te *Error
			if !errors.As(err, &te) || te.Field != tt.field || !strings.Contains(te.Message, tt.msg) || !errors.Is(err, ErrInvalid) {
				t.Fatalf("got %v, want field %s with %q", err, tt.field, tt.msg)
			}
		})
	}
}

func TestPeriod(t *testing.T) {
	every := func(d time.Duration) Schedule { return mustInterval(t, d, mustTime(t, "2023-06-01T00:00:07Z")) }
	tests := []struct {
		name string
		s    Schedule
		want time.Duration
	}{
		{"every 5 minutes", mustParseCron(t, "*/5 * * * *", "UTC"), 5 * time.Minute},
		{"@every 90s", mustParseCron(t, "@every 90s", "UTC"), 90 * time.Second},
		{"interval", every(7 * time.Hour), 7 * time.Hour},
		{"weekdays at 9", mustParseCron(t, "0 9 * * 1-5", "UTC"), 24 * time.Hour},
		{"twice a month", mustParseCron(t, "0 0 1,15 * *", "UTC"), 14 * 24 * time.Hour},
		{"once", Once(mustTime(t, "2024-05-01T00:00:00Z")), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got, _ := Period(tt.s); got != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
		})
	}
}

func TestJitter(t *testing.T) {
	at := mustTime(t, "2026-03-08T10:00:00Z")
	const jitter = 10 * time.Minute
	t.Run("deterministic, in range, whole steps", func(t *testing.T) {
		var sum time.Duration
		seen := map[time.Duration]bool{}
		const n = 5000
		for i := range n {
			ft := at.Add(time.Duration(i) * time.Hour)
			j := Jitter("report", ft, time.Time{}, jitter)
			if j != Jitter("report", ft, time.Time{}, jitter) {
				t.Fatalf("fire %s: two answers", ft)
			}
			// A step of a 10m jitter is 100ms (the most).
			if j < 0 || j >= jitter || j%(100*time.Millisecond) != 0 {
				t.Fatalf("fire %s: jitter %s, want whole 100ms steps in [0, %s)", ft, j, jitter)
			}
			sum += j
			seen[j] = true
		}
		// Uniform over [0, 10m): the mean of 5,000 is 5m within 2%.
		if mean := sum / n; mean < 4*time.Minute+54*time.Second || mean > 5*time.Minute+6*time.Second {
			t.Errorf("mean jitter %s, want about 5m", mean)
		}
		// 6,000 steps: 5,000 draws hit about 3,400 of them.
		if len(seen) < 3000 {
			t.Errorf("%d distinct jitters of %d fires", len(seen), n)
		}
	})
	t.Run("steps", func(t *testing.T) {
		for _, c := range []struct{ jitter, step time.Duration }{
			{50 * time.Millisecond, time.Millisecond}, {900 * time.Millisecond, 9 * time.Millisecond},
			{9 * time.Second, 90 * time.Millisecond}, {time.Hour, 100 * time.Millisecond},
		} {
			distinct := map[time.Duration]bool{}
			for i := range 2000 {
				j := Jitter(fmt.Sprint("t", i), at, time.Time{}, c.jitter)
				if j%c.step != 0 || j >= c.jitter {
					t.Fatalf("jitter %s: offset %s, want whole %s steps below it", c.jitter, j, c.step)
				}
				distinct[j] = true
			}
			if want := min(int(c.jitter/c.step), 2000) / 2; len(distinct) < want {
				t.Errorf("jitter %s: %d distinct offsets of 2,000 tasks, want at least %d", c.jitter, len(distinct), want)
			}
		}
	})
	t.Run("depends on the task and the time", func(t *testing.T) {
		if Jitter("a", at, time.Time{}, jitter) == Jitter("b", at, time.Time{}, jitter) &&
			Jitter("a", at.Add(time.Hour), time.Time{}, jitter) == Jitter("b", at.Add(time.Hour), time.Time{}, jitter) {
			t.Error("tasks a and b jittered alike twice")
		}
	})
	t.Run("below the gap to the next fire", func(t *testing.T) {
		for i := range 200 {
			ft := at.Add(time.Duration(i) * time.Hour)
			if j := Jitter(fmt.Sprint("t", i), ft, ft.Add(3*time.Second), jitter); j >= 3*time.Second {
				t.Fatalf("jitter %s with the next fire 3s away", j)
			}
		}
	})
	t.Run("none", func(t *testing.T) {
		if j := Jitter("a", at, time.Time{}, 0); j != 0 {
			t.Errorf("zero jitter moved a fire by %s", j)
		}
		if j := Jitter("a", at, at, jitter); j != 0 {
			t.Errorf("no gap moved a fire by %s", j)
		}
	})
}

// TestJitter_DST: a cron trigger's jitter across a DST change in the
// three zones. The jitter was checked against the expression's period in
// UTC (2h for "30 1,3 * * *"), but on the spring-forward day the two
// fires are 1h apart: the fire before the gap moves by less than that
// hour, so moved fires keep their order. Each case picks a task whose
// unbounded jitter that day would be 60m or more, so the bound is what
// the case checks.
func TestJitter_DST(t *testing.T) {
	const jitter = 90 * time.Minute
	tests := []struct {
		zone, dayStart string // the first fire of the DST day
		gap            time.Duration
	}{
		{"America/New_York", "2025-03-09T01:30:00-05:00", time.Hour},
		{"Europe/Berlin", "2025-03-30T01:30:00+01:00", time.Hour},
		{"Asia/Shanghai", "1990-04-15T01:30:00+08:00", time.Hour},
	}
	for _, tt := range tests {
		t.Run(tt.zone, func(t *testing.T) {
			s := mustParseCron(t, "30 1,3 * * *", tt.zone)
			if err := CheckLimits(mustParseCron(t, "30 1,3 * * *", "UTC"), time.Time{}, time.Time{}, 0, jitter); err != nil {
				t.Fatalf("jitter %s refused: %v", jitter, err)
			}
			first := mustTime(t, tt.dayStart)
			next := s.Next(first)
			if next.Sub(first) != tt.gap {
				t.Fatalf("fires %s and %s are %s apart, want %s", first, next, next.Sub(first), tt.gap)
			}
			task := ""
			for i := 0; task == ""; i++ {
				if name := fmt.Sprint("task-", i); Jitter(name, first, time.Time{}, jitter) >= tt.gap {
					task = name
				}
			}
			if j := Jitter(task, first, next, jitter); j >= tt.gap {
				t.Errorf("task %s: fire %s moved by %s, past the next fire %s", task, first, j, next)
			}
			// Over the days around the change, moved fires stay in order and
			// each moves by less than the jitter and the gap to the next.
			prev := time.Time{}
			for ft := s.Next(first.Add(-72 * time.Hour)); ft.Before(first.Add(72 * time.Hour)); ft = s.Next(ft) {
				n := s.Next(ft)
				j := Jitter(task, ft, n, jitter)
				moved := ft.Add(j)
				if j >= jitter || !moved.Before(n) || !moved.After(prev) {
					t.Errorf("fire %s moved by %s to %s (next %s, previous moved %s)", ft, j, moved, n, prev)
				}
				prev = moved
			}
		})
	}
}

func TestRunsLeft(t *testing.T) {
	tests := []struct {
		maxRuns int64
		runs    uint64
		want    int
	}{{0, 5, -1}, {3, 0, 3}, {3, 2, 1}, {3, 3, 0}, {3, 7, 0}, {1 << 40, 1 << 63, 0}}
	for _, tt := range tests {
		if got := RunsLeft(tt.maxRuns, tt.runs); got != tt.want {
			t.Errorf("RunsLeft(%d, %d) = %d, want %d", tt.maxRuns, tt.runs, got, tt.want)
		}
	}
}

func TestMergeCapped(t *testing.T) {
	from := mustTime(t, "2026-03-01T12:00:00Z")
	scheds := []Schedule{mustParseCron(t, "*/10 * * * *", "UTC"), mustParseCron(t, "*/20 * * * *", "UTC"), mustParseCron(t, "*/30 * * * *", "UTC")}
	fires, truncated := MergeCapped(scheds, []int{2, 0, -1}, from, from.Add(time.Hour), 100)
	var got []string
	for _, f := range fires {
		got = append(got, fmt.Sprintf("%d@%s", f.Index, f.Time.Format("15:04")))
	}
	if want := "0@12:00 2@12:00 0@12:10 2@12:30 2@13:00"; strings.Join(got, " ") != want || truncated {
		t.Errorf("got %q truncated=%v, want %q", strings.Join(got, " "), truncated, want)
	}
}
