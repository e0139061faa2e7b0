package security

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/client"
	"github.com/ax-scheduler/ax/internal/agenttest"
	"github.com/ax-scheduler/ax/internal/testkit"
	"github.com/ax-scheduler/ax/model"
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

// TestHTTP_TLSBareConnectsKeepAuthenticatedStreams: on a TLS node with a
// token, 1,500 bare TCP connects (no TLS handshake, no certificate, no
// token) neither cut an authenticated /v1/events stream nor an executor's
// long poll, the node holds at most -max-conns connections throughout,
// a new authenticated client still gets in, and once the connects are
// gone the count of open connections falls back (the limiter tracks TLS
// connections).
func TestHTTP_TLSBareConnectsKeepAuthenticatedStreams(t *testing.T) {
	for _, maxConns := range []int{64, 1024} {
		t.Run(fmt.Sprintf("max-conns %d", maxConns), func(t *testing.T) { bareConnectFlood(t, maxConns, 1500) })
	}
}

func bareConnectFlood(t *testing.T, maxConns, flood int) {
	c := startCluster(t, 1, withTLS(t.TempDir()), withToken("tls-flood-management-token"), withArgs("-max-conns", strconv.Itoa(maxConns)))
	ctx := ctxT(t, 120*time.Second)
	if _, err := c.Leader(ctx, 15*time.Second); err != nil {
		t.Fatal(err)
	}
	cl := c.Client()
	exe, err := c.StartExecutor("flood-exec")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cl.PutTask(ctx, shellTask("flood-job", "true", model.Policy{})); err != nil {
		t.Fatal(err)
	}
	// The executor has polled once it ran a first instance.
	agenttest.WaitState(t, cl, trigger(t, cl, "flood-job"), 30*time.Second, model.StateSuccess)

	events := make(chan string, 1024)
	streamErr := make(chan error, 1)
	sctx, stop := context.WithCancel(ctx)
	defer stop()
	go func() {
		streamErr <- cl.Stream(sctx, "/v1/events", nil, func(e client.Event) error {
			events <- string(e.Data)
			return nil
		})
	}()
	// seen waits for an event naming s on the stream.
	seen := func(what, s string) {
		t.Helper()
		deadline := time.After(20 * time.Second)
		for {
			select {
			case e := <-events:
				if strings.Contains(e, s) {
					return
				}
			case err := <-streamErr:
				t.Fatalf("%s: the authenticated event stream ended: %v", what, err)
			case <-deadline:
				t.Fatalf("%s: no event about %s on the stream within 20s", what, s)
			}
		}
	}
	testkit.Eventually(t, 20*time.Second, func() error {
		_, err := cl.Trigger(ctx, "flood-job", model.TriggerRequest{})
		select {
		case e := <-events:
			if strings.Contains(e, "flood-job") {
				return nil
			}
		case <-time.After(time.Second):
		}
		return fmt.Errorf("the stream shows nothing yet (trigger: %v)", err)
	})
	floodStart := time.Now()

	addr := c.Nodes[0].HTTPAddr
	var conns []net.Conn
	defer func() {
		for _, cn := range conns {
			cn.Close()
		}
	}()
	for i := range flood {
		cn, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			t.Fatalf("bare connect %d: %v", i, err)
		}
		conns = append(conns, cn)
	}
	t.Logf("%d bare connects in %s", flood, time.Since(floodStart).Round(time.Millisecond))

	metric := func(name string) int {
		t.Helper()
		hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: c.TLS(), DisableKeepAlives: true}}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+addr+"/metrics", nil)
		req.Header.Set("Authorization", "Bearer tls-flood-management-token")
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatalf("GET /metrics during the flood (a new authenticated client): %v", err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		m := regexp.MustCompile(`(?m)^` + name + ` (\d+)`).FindSubmatch(b)
		if resp.StatusCode != 200 || m == nil {
			t.Fatalf("GET /metrics: HTTP %d, no %s", resp.StatusCode, name)
		}
		n, _ := strconv.Atoi(string(m[1]))
		return n
	}
	if open := metric("ax_http_connections"); open > maxConns {
		t.Errorf("open connections with %d bare connects held: got %d, want at most %d", flood, open, maxConns)
	}
	// The stream and the executor's long poll are still up: a new task's
	// change and its instance arrive on the stream, the executor runs it.
	if _, err := cl.PutTask(ctx, shellTask("after-flood", "true", model.Policy{})); err != nil {
		t.Fatalf("a write during the flood: %v", err)
	}
	seen("after the flood", "after-flood")
	agenttest.WaitState(t, cl, trigger(t, cl, "after-flood"), 30*time.Second, model.StateSuccess)
	if b, _ := os.ReadFile(exe.LogPath); strings.Contains(string(b), "cannot reach the cluster") || strings.Contains(string(b), "poll failed") {
		t.Errorf("the executor's long poll was cut:\n%s", b)
	}
	evicted := metric("ax_http_connections_evicted_total")

	for _, cn := range conns {
		cn.Close()
	}
	conns = nil
	var open int
	testkit.Eventually(t, 20*time.Second, func() error {
		if open = metric("ax_http_connections"); open > 8 {
			return fmt.Errorf("%d connections still counted open after the bare connects closed", open)
		}
		return nil
	})
	select {
	case err := <-streamErr:
		t.Fatalf("the stream ended: %v", err)
	default:
	}
	t.Logf("%d bare connects against a cap of %d: %d evicted, stream and executor kept, %d open after", flood, maxConns, evicted, open)
}
