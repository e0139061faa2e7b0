package trigger

import (
	"strings"
	"testing"
	"time"
)

// TestQuartz_DayExtensions: the examples of Quartz's CronTrigger
// documentation (weekdays renumbered: Quartz's 6 = Friday is 5 here),
// checked against dates worked out by hand, and the refusals.
func TestQuartz_DayExtensions(t *testing.T) {
	tests := []struct {
		expr, tz, after string
		want            []string // the next fires, UTC
	}{
		// "0 15 10 L * ?": 10:15 on the last day of every month.
		{"0 15 10 L * ?", "", "2026-01-30T00:00:00Z", []string{"2026-01-31T10:15:00Z", "2026-02-28T10:15:00Z", "2026-03-31T10:15:00Z"}},
		{"0 15 10 L * ?", "", "2028-02-01T00:00:00Z", []string{"2028-02-29T10:15:00Z"}}, // leap year
		// "0 15 10 L-2 * ?": the second-to-last day.
		{"0 15 10 L-2 * ?", "", "2026-02-01T00:00:00Z", []string{"2026-02-26T10:15:00Z", "2026-03-29T10:15:00Z"}},
		// "0 15 10 ? * 6L" (Quartz): the last Friday of every month.
		{"0 15 10 ? * 5L", "", "2026-01-01T00:00:00Z", []string{"2026-01-30T10:15:00Z", "2026-02-27T10:15:00Z", "2026-03-27T10:15:00Z"}},
		{"15 10 ? * FRIL", "", "2026-01-01T00:00:00Z", []string{"2026-01-30T10:15:00Z"}},
		// "0 15 10 ? * 6#3": the third Friday.
		{"0 15 10 ? * 5#3", "", "2026-01-01T00:00:00Z", []string{"2026-01-16T10:15:00Z", "2026-02-20T10:15:00Z"}},
		{"15 10 ? * MON#1", "", "2026-06-01T11:00:00Z", []string{"2026-07-06T10:15:00Z"}},
		// "5#5": months with a fifth Friday only (2026: Jan, May, Jul, Oct).
		{"0 0 ? * 5#5", "", "2026-01-31T00:00:00Z", []string{"2026-05-29T00:00:00Z", "2026-07-31T00:00:00Z"}},
		// "15W": the weekday nearest the 15th (2026-02-15 is a Sunday:
		// Monday the 16th; 2026-08-15 a Saturday: Friday the 14th).
		{"0 9 15W * ?", "", "2026-02-01T00:00:00Z", []string{"2026-02-16T09:00:00Z", "2026-03-16T09:00:00Z"}},
		{"0 9 15W * ?", "", "2026-08-01T00:00:00Z", []string{"2026-08-14T09:00:00Z"}},
		// "1W" never leaves the month: 2026-08-01 is a Saturday, so Monday the 3rd.
		{"0 9 1W * ?", "", "2026-07-31T00:00:00Z", []string{"2026-08-03T09:00:00Z"}},
		// "31W" when the 31st is a Sunday (2026-05-31): Friday the 29th, not June 1st.
		{"0 9 31W * ?", "", "2026-05-01T00:00:00Z", []string{"2026-05-29T09:00:00Z", "2026-07-31T09:00:00Z"}},
		// "LW": the last weekday (2026-01-31 is a Saturday: the 30th).
		{"0 18 LW * ?", "", "2026-01-01T00:00:00Z", []string{"2026-01-30T18:00:00Z", "2026-02-27T18:00:00Z"}},
		// Mixed with a plain value, in a time zone with DST.
		{"0 2 1,L * ?", "Europe/Berlin", "2026-03-02T00:00:00Z", []string{"2026-03-31T00:00:00Z", "2026-04-01T00:00:00Z"}},
	}
	for _, tc := range tests {
		s, err := ParseCron(tc.expr, tc.tz)
		if err != nil {
			t.Fatalf("%q: %v", tc.expr, err)
		}
		at, _ := time.Parse(time.RFC3339, tc.after)
		for _, w := range tc.want {
			at = s.Next(at)
			if got := at.UTC().Format(time.RFC3339); got != w {
				t.Errorf("%q after %s: %s, want %s", tc.expr, tc.after, got, w)
				break
			}
		}
		if !UsesQuartz(tc.expr) {
			t.Errorf("UsesQuartz(%q) = false", tc.expr)
		}
	}
	for _, bad := range []struct{ expr, msg string }{
		{"0 0 L-31 * ?", "day-of-month field"},
		{"0 0 32W * ?", "day-of-month field"},
		{"0 0 ? * 7L", "weekday 7 above 6"},
		{"0 0 ? * 5#6", "# takes a week from 1 to 5"},
		{"0 0 ? * XYZ#1", "unknown weekday"},
	} {
		if _, err := ParseCron(bad.expr, ""); err == nil || !strings.Contains(err.Error(), bad.msg) {
			t.Errorf("%q: %v, want %q", bad.expr, err, bad.msg)
		}
	}
	if UsesQuartz("0 0 1 * *") || UsesQuartz("@daily") {
		t.Error("UsesQuartz on a plain expression")
	}
}
