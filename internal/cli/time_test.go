package cli

import (
	"strings"
	"testing"
	"time"
)

func TestParseTime(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		in   string
		want time.Time
	}{
		{"30m", now.Add(-30 * time.Minute)},
		{"1h", now.Add(-time.Hour)},
		{"2d", now.Add(-48 * time.Hour)},
		{"1d12h", now.Add(-36 * time.Hour)},
		{"2026-11-01", time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)},
		{"2026-11-01T09:30", time.Date(2026, 11, 1, 9, 30, 0, 0, time.UTC)},
		{"2026-11-01T09:30:15", time.Date(2026, 11, 1, 9, 30, 15, 0, time.UTC)},
		{"2026-11-01T09:30:00+08:00", time.Date(2026, 11, 1, 1, 30, 0, 0, time.UTC)},
	} {
		got, err := parseTime(tc.in, now)
		if err != nil || !got.Equal(tc.want) {
			t.Errorf("parseTime(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{"", "yesterday", "-1h", "2026-13-01", "1x"} {
		_, err := parseTime(bad, now)
		if err == nil || !strings.Contains(err.Error(), "2006-01-02T15:04") || !strings.Contains(err.Error(), "2d") {
			t.Errorf("parseTime(%q): %v, want an error listing the accepted forms", bad, err)
		}
	}
	if _, err := ParseDate("1h"); err == nil || !strings.Contains(err.Error(), "RFC 3339") {
		t.Errorf("ParseDate(1h): %v, want an error listing the date forms", err)
	}
}
