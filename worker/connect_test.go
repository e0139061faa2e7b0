package worker

import (
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ax-scheduler/ax/internal/testkit"
	"github.com/ax-scheduler/ax/model"
)

// TestWorker_reportsUnreachableServers: an executor started with nothing
// at its server's address warns within 2 s, naming the address and the
// error, then again at each retry with a growing backoff; once a server
// answers there it says it is connected.
func TestWorker_reportsUnreachableServers(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now

	var logs testkit.Buffer
	logger := hclog.New(&hclog.LoggerOptions{Output: &logs, Level: hclog.Info})
	start := time.Now()
	startWorker(t, Config{Servers: []string{addr}, Logger: logger})

	warn := regexp.MustCompile(`\[WARN\]  executor: cannot reach the cluster; retrying: .*servers=` + regexp.QuoteMeta(addr) +
		` error=.*connection refused.* retry_in=(\S+)`)
	var first time.Duration
	testkit.Eventually(t, 2*time.Second, func() error {
		if !warn.MatchString(logs.String()) {
			return errors.New("no warning yet:\n" + logs.String())
		}
		first = time.Since(start)
		return nil
	})
	t.Logf("first warning %s after the start", first.Round(time.Millisecond))
	// Each retry is logged, with a backoff that grows.
	testkit.Eventually(t, 10*time.Second, func() error {
		if n := len(warn.FindAllString(logs.String(), -1)); n < 4 {
			return errors.New("fewer than 4 warnings yet")
		}
		return nil
	})
	var waits []time.Duration
	for _, m := range warn.FindAllStringSubmatch(logs.String(), 4) {
		d, err := time.ParseDuration(m[1])
		if err != nil {
			t.Fatalf("retry_in %q: %v", m[1], err)
		}
		waits = append(waits, d)
	}
	for i := 1; i < len(waits); i++ {
		if waits[i] <= waits[i-1] {
			t.Errorf("retry_in %v: want a growing backoff", waits)
		}
	}

	// A server comes up at the address: the executor says it connected.
	l, err = net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("the port was taken meanwhile: %v", err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path != "/v1/executors/poll" {
			_, _ = w.Write([]byte(`{}`))
			return
		}
		select { // a long poll with nothing to hand out
		case <-r.Context().Done():
		case <-time.After(200 * time.Millisecond):
		}
		_ = json.NewEncoder(w).Encode(model.PollResponse{Jobs: []model.Job{}, LeaseMs: 10000, HeartbeatMs: 2500, Protocol: 8})
	}))
	srv.Listener.Close()
	srv.Listener = l
	srv.Start()
	defer srv.Close()
	testkit.Eventually(t, 10*time.Second, func() error {
		if !strings.Contains(logs.String(), "[INFO]  executor: connected to the cluster: executor=w1 servers="+addr) {
			return errors.New("not connected yet:\n" + logs.String())
		}
		return nil
	})
}
