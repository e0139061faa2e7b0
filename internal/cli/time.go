package cli

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// TimeForms says which forms a TimeFlag accepts, for its errors and the
// flags' help.
const TimeForms = "a duration ago (30m, 1h, 2d, 1d12h), a date (2006-01-02), a time " +
	"(2006-01-02T15:04, 2006-01-02T15:04:05; UTC) or RFC 3339 (2006-01-02T15:04:05+08:00)"

// dateLayouts are the zone-less layouts parseTime accepts, read as UTC
// (the CLI shows times in UTC too).
var dateLayouts = []string{"2006-01-02", "2006-01-02T15:04", "2006-01-02T15:04:05", "2006-01-02 15:04", "2006-01-02 15:04:05"}

// parseTime reads a -since/-until/-from/-to value: a duration meaning
// that long before now, or a date or time.
func parseTime(s string, now time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}, fmt.Errorf("empty; want %s", TimeForms)
	}
	if d, err := parseDuration(s); err == nil {
		if d < 0 {
			return time.Time{}, fmt.Errorf("a negative duration: want %s", TimeForms)
		}
		return now.Add(-d), nil
	}
	if t, ok := parseLayouts(s); ok {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("not a time: want %s", TimeForms)
}

// DateForms says which forms ParseDate accepts.
const DateForms = "RFC 3339 (2006-01-02T15:04:05+08:00), or a date or time in UTC (2006-01-02, 2006-01-02T15:04, 2006-01-02T15:04:05)"

// ParseDate reads a point in time (no duration): -at, -until of a
// silence.
func ParseDate(s string) (time.Time, error) {
	if t, ok := parseLayouts(strings.TrimSpace(s)); ok {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("%q is not a time: want %s", s, DateForms)
}

// parseLayouts reads s as RFC 3339 or one of dateLayouts.
func parseLayouts(s string) (time.Time, bool) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, true
	}
	for _, l := range dateLayouts {
		if t, err := time.Parse(l, s); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

// parseDuration reads a Go duration, optionally led by whole days: 2d,
// 1d12h, 90m.
func parseDuration(s string) (time.Duration, error) {
	days, rest := 0, s
	if i := strings.IndexByte(s, 'd'); i > 0 {
		n, err := strconv.Atoi(s[:i])
		if err != nil || n > 1<<16 {
			return 0, fmt.Errorf("%q: bad day count", s)
		}
		days, rest = n, s[i+1:]
	}
	var d time.Duration
	if rest != "" {
		var err error
		if d, err = time.ParseDuration(rest); err != nil {
			return 0, err
		}
	}
	return time.Duration(days)*24*time.Hour + d, nil
}

// TimeFlag is a flag holding a time in any form of TimeForms; the
// value is resolved against now when the flag is set.
type TimeFlag struct {
	// Time is the flag's value, the zero time when it is not set.
	Time time.Time
	now  func() time.Time
}

// String implements flag.Value.
func (f *TimeFlag) String() string {
	if f == nil || f.Time.IsZero() {
		return ""
	}
	return f.Time.UTC().Format(time.RFC3339)
}

// Set implements flag.Value.
func (f *TimeFlag) Set(s string) error {
	now := time.Now
	if f.now != nil {
		now = f.now
	}
	t, err := parseTime(s, now())
	if err != nil {
		return err
	}
	f.Time = t
	return nil
}
