package replica

import (
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
)

var clockT0 = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

func TestStamper_stamp(t *testing.T) {
	now := clockT0.UnixMilli()
	cases := []struct {
		name string
		hwm  int64
		want int64
	}{
		{"no mark yet", 0, now},
		{"the clock is ahead of the mark", now - 5000, now},
		{"a predecessor's clock was ahead", now + 5000, now + 5000},
		{"ten minutes ahead", now + (10 * time.Minute).Milliseconds(), now + (10 * time.Minute).Milliseconds()},
		{"beyond the cap: not followed", now + (2 * time.Hour).Milliseconds(), now},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var log strings.Builder
			s := &stamper{now: func() time.Time { return clockT0 }, hwm: func() int64 { return tc.hwm }, max: time.Second,
				log: hclog.New(&hclog.LoggerOptions{Output: &log})}
			if got := s.stamp(); got != tc.want {
				t.Fatalf("stamp() = %d, want %d (now %d, mark %d)", got, tc.want, now, tc.hwm)
			}
			if warned := log.Len() > 0; warned != (tc.hwm > now+1000) {
				t.Fatalf("logged %q for a mark %d ms ahead", log.String(), tc.hwm-now)
			}
		})
	}
}
