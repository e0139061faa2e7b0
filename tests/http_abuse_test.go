package tests

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"testing"
	"time"
)

// TestHTTP_IdleAndSlowConnections: a client that opens many idle
// connections and dribbles headers on others neither blocks /healthz nor
// takes the node past its connection cap.
func TestHTTP_IdleAndSlowConnections(t *testing.T) {
	const maxConns = 64
	c := startCluster(t, 1, withArgs("-max-conns", strconv.Itoa(maxConns)))
	ctx := ctxT(t, 60*time.Second)
	if _, err := c.Leader(ctx, 15*time.Second); err != nil {
		t.Fatal(err)
	}
	addr := c.Nodes[0].HTTPAddr
	var conns []net.Conn
	t.Cleanup(func() {
		for _, cn := range conns {
			cn.Close()
		}
	})
	for i := range 4 * maxConns {
		cn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatalf("dial %d: %v", i, err)
		}
		conns = append(conns, cn)
		if i%4 == 0 {
			// Slowloris: half a request line, never finished.
			_, _ = cn.Write([]byte("GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: "))
		}
	}
	hc := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	get := func(path string) (string, time.Duration, error) {
		start := time.Now()
		resp, err := hc.Get("http://" + addr + path)
		if err != nil {
			return "", 0, err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			return "", 0, fmt.Errorf("%s: HTTP %d", path, resp.StatusCode)
		}
		return string(b), time.Since(start), err
	}
	var worst time.Duration
	for range 20 {
		_, d, err := get("/healthz")
		if err != nil {
			t.Fatalf("healthz while %d connections are held: %v", len(conns), err)
		}
		worst = max(worst, d)
	}
	if worst > time.Second {
		t.Errorf("healthz took up to %s while connections were held", worst)
	}
	metrics, _, err := get("/metrics")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^ax_http_connections (\d+)`).FindStringSubmatch(metrics)
	if m == nil {
		t.Fatal("no ax_http_connections in /metrics")
	}
	if open, _ := strconv.Atoi(m[1]); open > maxConns {
		t.Errorf("open connections: got %d, want at most %d", open, maxConns)
	}
	if ev := regexp.MustCompile(`(?m)^ax_http_connections_evicted_total (\d+)`).FindStringSubmatch(metrics); ev == nil || ev[1] == "0" {
		t.Errorf("evictions: got %v, want some", ev)
	}
	t.Logf("healthz worst %s with %d connections opened against a cap of %d", worst, len(conns), maxConns)
}
