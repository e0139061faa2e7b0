package agent

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
)

func TestServerLog_RateLimits(t *testing.T) {
	var out bytes.Buffer
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	s := &serverLog{log: hclog.New(&hclog.LoggerOptions{Output: &out}), now: func() time.Time { return now }, tokens: serverLogBurst, last: now}
	for range 100 {
		_, _ = s.Write([]byte("http: TLS handshake error from 10.0.0.9:5555: EOF\n"))
	}
	if got := strings.Count(out.String(), "handshake error"); got != serverLogBurst {
		t.Fatalf("logged %d of 100 lines at once, want the burst of %d", got, serverLogBurst)
	}
	now = now.Add(time.Second)
	_, _ = s.Write([]byte("http: TLS handshake error from 10.0.0.9:5556: EOF\n"))
	if !strings.Contains(out.String(), "dropped_before=90") {
		t.Errorf("the line after a second does not say 90 were dropped:\n%s", out.String())
	}
}
