package trigger

import (
	"slices"
	"testing"
	"time"
)

// mustParseCron parses expr in tz or fails the test.
func mustParseCron(t testing.TB, expr, tz string) Schedule {
	t.Helper()
	s, err := ParseCron(expr, tz)
	if err != nil {
		t.Fatalf("ParseCron(%q, %q): %v", expr, tz, err)
	}
	return s
}

// mustTime parses an RFC 3339 time or fails the test.
func mustTime(t testing.TB, s string) time.Time {
	t.Helper()
	tm, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatalf("parse time %q: %v", s, err)
	}
	return tm
}

// format renders times as RFC 3339 in their own location, so comparisons
// check the offset as well as the instant.
func format(ts []time.Time) []string {
	out := make([]string, 0, len(ts))
	for _, t := range ts {
		out = append(out, t.Format(time.RFC3339))
	}
	return out
}

// checkTimes compares rendered fire times.
func checkTimes(t *testing.T, got []time.Time, want []string) {
	t.Helper()
	if want == nil {
		want = []string{}
	}
	if g := format(got); !slices.Equal(g, want) {
		t.Errorf("got %q, want %q", g, want)
	}
}
