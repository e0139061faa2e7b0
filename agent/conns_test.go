package agent

import (
	"bytes"
	"crypto/tls"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ax-scheduler/ax/internal/testkit"
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

func TestEvictRank(t *testing.T) {
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		in   connInfo
		want int
	}{
		{"in a handler (event stream, long poll)", connInfo{state: http.StateActive, served: true, handlers: 1, since: now.Add(-time.Hour)}, 0},
		{"finishing an answer", connInfo{state: http.StateActive, served: true, since: now.Add(-time.Minute)}, 0},
		{"bare connect, stalled", connInfo{state: http.StateNew, since: now.Add(-stalledAfter)}, 1},
		{"first headers dribbled, stalled", connInfo{state: http.StateActive, since: now.Add(-time.Minute)}, 1},
		{"idle keep-alive", connInfo{state: http.StateIdle, served: true, since: now.Add(-time.Hour)}, 2},
		{"new, in its handshake", connInfo{state: http.StateNew, since: now.Add(-time.Millisecond)}, 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := evictRank(&tc.in, now); got != tc.want {
				t.Errorf("got rank %d, want %d", got, tc.want)
			}
		})
	}
}

// TestConnLimiter_KeysByAcceptedConn: the server's hooks see the value
// Accept returned (a *tls.Conn on a TLS node); the limiter follows its
// states by it and forgets it once closed.
func TestConnLimiter_KeysByAcceptedConn(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	l := newConnLimiter(tls.NewListener(ln, &tls.Config{}), 2)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			l.track(c, http.StateNew)
			l.track(c, http.StateActive)
			l.track(c, http.StateClosed)
		}
	}()
	for range 5 {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
	}
	testkit.Until(t, 5*time.Second, "every closed connection forgotten", func() bool { return l.open() == 0 })
	if l.evicted.Load() != 0 || l.refused.Load() != 0 {
		t.Errorf("evicted %d, refused %d: want none (closed connections free their place)", l.evicted.Load(), l.refused.Load())
	}
}

// TestMaxConnsFor: -max-conns's default is half the open-file limit,
// within 1,024..8,192.
func TestMaxConnsFor(t *testing.T) {
	for _, tt := range []struct {
		nofile uint64
		want   int
	}{{256, 1024}, {1024, 1024}, {2048, 1024}, {4096, 2048}, {20000, 8192}, {1 << 20, 8192}, {1<<63 - 1, 8192}} {
		if got := maxConnsFor(tt.nofile); got != tt.want {
			t.Errorf("maxConnsFor(%d) = %d, want %d", tt.nofile, got, tt.want)
		}
	}
	if d := DefaultMaxConns(); d < 1024 || d > 8192 {
		t.Errorf("DefaultMaxConns() = %d", d)
	}
}
