package trigger

import (
	"testing"
	"time"
)

// nextCase lists the first n fire times after after.
type nextCase struct {
	name  string
	expr  string
	tz    string
	after string
	n     int
	want  []string
}

func runNextCases(t *testing.T, tests []nextCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mustParseCron(t, tt.expr, tt.tz)
			checkTimes(t, NextN(s, mustTime(t, tt.after), tt.n), tt.want)
		})
	}
}

func TestCron_NextFields(t *testing.T) {
	runNextCases(t, []nextCase{
		{"5 fields fire at second 0", "5 * * * *", "", "2025-05-17T10:20:30Z", 2,
			[]string{"2025-05-17T11:05:00Z", "2025-05-17T12:05:00Z"}},
		{"6 fields every 15 seconds", "*/15 * * * * *", "", "2025-05-17T10:20:30Z", 3,
			[]string{"2025-05-17T10:20:45Z", "2025-05-17T10:21:00Z", "2025-05-17T10:21:15Z"}},
		{"6 fields seconds set", "30 0 12 * * *", "", "2025-05-17T10:20:30Z", 2,
			[]string{"2025-05-17T12:00:30Z", "2025-05-18T12:00:30Z"}},
		{"6 fields new year", "0 0 0 1 1 *", "", "2025-05-17T10:20:30Z", 1,
			[]string{"2026-01-01T00:00:00Z"}},
		{"strictly after", "0 0 * * *", "", "2025-05-17T00:00:00Z", 1,
			[]string{"2025-05-18T00:00:00Z"}},
		{"sub-second after", "* * * * * *", "", "2025-05-17T10:20:30.5Z", 2,
			[]string{"2025-05-17T10:20:31Z", "2025-05-17T10:20:32Z"}},
		{"month names", "0 9 1 jan,jul *", "", "2025-05-17T10:20:30Z", 2,
			[]string{"2025-07-01T09:00:00Z", "2026-01-01T09:00:00Z"}},
		{"weekday range", "0 9 * * MON-FRI", "", "2025-05-16T10:00:00Z", 2,
			[]string{"2025-05-19T09:00:00Z", "2025-05-20T09:00:00Z"}},
		{"year end rollover", "59 23 31 12 *", "", "2025-12-31T23:59:00Z", 1,
			[]string{"2026-12-31T23:59:00Z"}},
	})
}

func TestCron_NextDayOfMonthDayOfWeek(t *testing.T) {
	// January 2025: the 1st is a Wednesday, Fridays are 3, 10, 17, 24, 31,
	// Sundays 5, 12, 19, 26; the 13th is a Monday.
	const after = "2025-01-01T00:00:00Z"
	runNextCases(t, []nextCase{
		{"both restricted is OR", "0 0 13 * 5", "", after, 4,
			[]string{"2025-01-03T00:00:00Z", "2025-01-10T00:00:00Z", "2025-01-13T00:00:00Z", "2025-01-17T00:00:00Z"}},
		{"day-of-month only", "0 0 13 * *", "", after, 2,
			[]string{"2025-01-13T00:00:00Z", "2025-02-13T00:00:00Z"}},
		{"day-of-week only", "0 0 * * 5", "", after, 2,
			[]string{"2025-01-03T00:00:00Z", "2025-01-10T00:00:00Z"}},
		{"question mark is a star", "0 0 ? * fri", "", after, 2,
			[]string{"2025-01-03T00:00:00Z", "2025-01-10T00:00:00Z"}},
		{"star step 1 is a star", "0 0 */1 * 5", "", after, 2,
			[]string{"2025-01-03T00:00:00Z", "2025-01-10T00:00:00Z"}},
		{"full range is not a star", "0 0 1-31 * 5", "", after, 2,
			[]string{"2025-01-02T00:00:00Z", "2025-01-03T00:00:00Z"}},
		{"stepped star is not a star", "0 0 */10 * 0", "", after, 5,
			[]string{"2025-01-05T00:00:00Z", "2025-01-11T00:00:00Z", "2025-01-12T00:00:00Z", "2025-01-19T00:00:00Z", "2025-01-21T00:00:00Z"}},
		{"Feb 29 or Monday", "0 0 29 2 1", "", after, 4,
			[]string{"2025-02-03T00:00:00Z", "2025-02-10T00:00:00Z", "2025-02-17T00:00:00Z", "2025-02-24T00:00:00Z"}},
	})
}

func TestCron_NextImpossibleDates(t *testing.T) {
	runNextCases(t, []nextCase{
		{"Feb 29 leap years", "0 0 29 2 *", "", "2025-01-01T00:00:00Z", 3,
			[]string{"2028-02-29T00:00:00Z", "2032-02-29T00:00:00Z", "2036-02-29T00:00:00Z"}},
		{"Feb 29 on the day", "0 12 29 2 *", "Europe/Berlin", "2028-02-29T11:00:00+01:00", 1,
			[]string{"2028-02-29T12:00:00+01:00"}},
		{"Feb 29 beyond five years", "0 0 29 2 *", "", "2097-03-01T00:00:00Z", 1, nil},
		{"Feb 30 never", "0 0 30 2 *", "", "2025-01-01T00:00:00Z", 1, nil},
		{"31st of short months never", "0 0 31 4,6,9,11 *", "", "2025-01-01T00:00:00Z", 1, nil},
		{"31st skips short months", "0 0 31 * *", "", "2025-01-31T00:00:00Z", 3,
			[]string{"2025-03-31T00:00:00Z", "2025-05-31T00:00:00Z", "2025-07-31T00:00:00Z"}},
	})
}

func TestCron_NextDescriptors(t *testing.T) {
	// 2025-05-17 is a Saturday.
	const after = "2025-05-17T10:20:30Z"
	runNextCases(t, []nextCase{
		{"yearly", "@yearly", "", after, 1, []string{"2026-01-01T00:00:00Z"}},
		{"annually", "@annually", "", after, 1, []string{"2026-01-01T00:00:00Z"}},
		{"monthly", "@monthly", "", after, 1, []string{"2025-06-01T00:00:00Z"}},
		{"weekly", "@weekly", "", after, 2, []string{"2025-05-18T00:00:00Z", "2025-05-25T00:00:00Z"}},
		{"daily", "@daily", "", after, 1, []string{"2025-05-18T00:00:00Z"}},
		{"midnight", "@midnight", "", after, 1, []string{"2025-05-18T00:00:00Z"}},
		{"hourly", "@hourly", "", after, 2, []string{"2025-05-17T11:00:00Z", "2025-05-17T12:00:00Z"}},
		{"daily in New York", "@daily", "America/New_York", after, 1, []string{"2025-05-18T00:00:00-04:00"}},
		{"every hour", "@every 1h", "", after, 2, []string{"2025-05-17T11:00:00Z", "2025-05-17T12:00:00Z"}},
		{"every day in Kolkata is anchored at UTC midnight", "@every 24h", "Asia/Kolkata", after, 1,
			[]string{"2025-05-18T05:30:00+05:30"}},
	})
}

func TestCron_NextEveryAnchored(t *testing.T) {
	tests := []struct {
		name  string
		expr  string
		after time.Time
		want  time.Time
	}{
		{"between multiples", "@every 7s", time.Unix(100, 0), time.Unix(105, 0)},
		{"on a multiple", "@every 7s", time.Unix(105, 0), time.Unix(112, 0)},
		{"just before a multiple", "@every 7s", time.Unix(104, 999999999), time.Unix(105, 0)},
		{"before the epoch", "@every 5s", time.Unix(-3, 0), time.Unix(0, 0)},
		{"on the epoch", "@every 5s", time.Unix(0, 0), time.Unix(5, 0)},
		{"start of the hour", "@every 1h", mustTime(t, "2025-05-17T10:00:01Z"), mustTime(t, "2025-05-17T11:00:00Z")},
		{"end of the hour", "@every 1h", mustTime(t, "2025-05-17T10:59:59Z"), mustTime(t, "2025-05-17T11:00:00Z")},
		{"90 minutes", "@every 90m", mustTime(t, "2025-05-17T10:20:30Z"), mustTime(t, "2025-05-17T10:30:00Z")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := mustParseCron(t, tt.expr, "").Next(tt.after)
			if !got.Equal(tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestCron_NextEveryProperty(t *testing.T) {
	periods := []time.Duration{time.Second, 7 * time.Second, time.Minute, 90 * time.Minute, 7 * time.Hour, 24 * time.Hour, 1000 * time.Hour}
	base := mustTime(t, "2025-05-17T10:20:30.123456789Z")
	for _, d := range periods {
		s := mustParseCron(t, "@every "+d.String(), "Europe/Berlin")
		for i := range 200 {
			after := base.Add(time.Duration(i) * 7919 * time.Second / 3)
			got := s.Next(after)
			if got.UnixNano()%int64(d) != 0 || !got.After(after) || got.Add(-d).After(after) {
				t.Errorf("@every %s: got Next(%v) = %v, want the first epoch multiple after it", d, after, got)
			}
		}
	}
}

func TestCron_NextShanghai(t *testing.T) {
	// No DST: 02:00 China Standard Time is 18:00 UTC the day before.
	s := mustParseCron(t, "0 2 * * *", "Asia/Shanghai")
	got := NextN(s, mustTime(t, "2025-01-01T00:00:00Z"), 3)
	utc := make([]time.Time, len(got))
	for i, g := range got {
		utc[i] = g.UTC()
	}
	checkTimes(t, utc, []string{"2025-01-01T18:00:00Z", "2025-01-02T18:00:00Z", "2025-01-03T18:00:00Z"})
	checkTimes(t, got, []string{"2025-01-02T02:00:00+08:00", "2025-01-03T02:00:00+08:00", "2025-01-04T02:00:00+08:00"})
}
