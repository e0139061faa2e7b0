package trigger

import (
	"testing"
	"time"
)

func BenchmarkCron_Next(b *testing.B) {
	cases := []struct {
		name, expr, tz string
	}{
		{"every minute UTC", "* * * * *", ""},
		{"hourly New York", "0 * * * *", "America/New_York"},
		{"daily 02:30 Berlin", "30 2 * * *", "Europe/Berlin"},
		{"weekdays 09:00 Shanghai", "0 9 * * 1-5", "Asia/Shanghai"},
		{"every 10s", "*/10 * * * * *", "America/New_York"},
		{"Feb 29", "0 0 29 2 *", ""},
		{"Feb 30 never", "0 0 30 2 *", ""},
		{"every 90m", "@every 90m", ""},
	}
	start := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			s := mustParseCron(b, c.expr, c.tz)
			t := start
			for b.Loop() {
				t = s.Next(t)
				if t.IsZero() {
					t = start
				}
			}
		})
	}
}
