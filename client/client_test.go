package client

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/internal/testkit"
	"github.com/ax-scheduler/ax/model"
)

// TestClient_RetriesKeepIdempotencyKey: a write retried after a 503 or a
// broken connection, on the same server or another, carries the same
// Idempotency-Key, so the cluster returns its first outcome.
func TestClient_RetriesKeepIdempotencyKey(t *testing.T) {
	var mu sync.Mutex
	var keys []string
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		keys = append(keys, r.Header.Get(HeaderIdempotencyKey))
		n++
		try := n
		mu.Unlock()
		switch try {
		case 1:
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(`{"error":{"code":"unavailable","message":"outcome unknown"}}`))
		case 2:
			c, _, _ := w.(http.Hijacker).Hijack() // the connection breaks mid-request
			c.Close()
		default:
			_, _ = w.Write([]byte(`{"id":"7"}`))
		}
	}))
	defer srv.Close()
	c := New(Config{Addrs: []string{srv.Listener.Addr().String()}, RetryFor: 10 * time.Second})
	got, err := c.Trigger(context.Background(), "job", model.TriggerRequest{})
	if err != nil || got.ID != "7" {
		t.Fatalf("trigger: %+v, %v", got, err)
	}
	if len(keys) != 3 || keys[0] == "" || keys[1] != keys[0] || keys[2] != keys[0] {
		t.Fatalf("Idempotency-Keys of the tries: %q, want one key three times", keys)
	}
}

// TestClient_NotSent: a server that refuses the connection is a failure
// to send (ErrNotSent), still an unavailable *model.Error.
func TestClient_NotSent(t *testing.T) {
	addr := testkit.FreeAddr(t)
	c := New(Config{Addrs: []string{addr}, Once: true})
	_, err := c.Trigger(context.Background(), "job", model.TriggerRequest{})
	var me *model.Error
	if !errors.Is(err, ErrNotSent) || !errors.As(err, &me) || me.Code != model.CodeUnavailable || !strings.Contains(err.Error(), addr) {
		t.Fatalf("got %v, want a not-sent unavailable error naming %s", err, addr)
	}
}

// TestClient_TryTimeoutFailsOver: a server that never answers costs one
// TryTimeout, then the next address answers; the client remembers it.
func TestClient_TryTimeoutFailsOver(t *testing.T) {
	hung := hangingServer(t)
	var served atomic.Int32
	good := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"stop":[]}`))
	}))
	defer good.Close()
	c := New(Config{Addrs: []string{hung.URL, good.URL}})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req := Request{Method: http.MethodPost, Path: "/v1/executors/heartbeat", Body: model.HeartbeatRequest{Executor: "e"}, TryTimeout: 200 * time.Millisecond}
	start := time.Now()
	var out model.HeartbeatResponse
	if err := c.Do(ctx, req, &out); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > time.Second {
		t.Fatalf("took %s, want about one TryTimeout (200ms)", took)
	}
	// The next call goes to the address that answered.
	start = time.Now()
	if err := c.Do(ctx, req, &out); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 100*time.Millisecond || served.Load() != 2 {
		t.Fatalf("second call took %s (served %d), want the good address first", took, served.Load())
	}
}

// TestClient_TryTimeoutBoundedByContext: when every server hangs, the call
// ends with ctx and says it was unavailable.
func TestClient_TryTimeoutBoundedByContext(t *testing.T) {
	hung := hangingServer(t)
	c := New(Config{Addrs: []string{hung.URL}})
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := c.Do(ctx, Request{Method: http.MethodGet, Path: "/healthz", TryTimeout: 100 * time.Millisecond}, nil)
	if !errors.Is(err, model.ErrUnavailable) {
		t.Fatalf("got %v, want unavailable", err)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("took %s, want the context's 500ms", took)
	}
}

// hangingServer answers nothing until the test ends.
func hangingServer(t *testing.T) *httptest.Server {
	t.Helper()
	release := make(chan struct{})
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	t.Cleanup(func() { close(release); s.Close() })
	return s
}

// TestClient_UnrepeatableNotRetried: a leadership transfer answered 503
// (it may have taken effect) is not sent again, to this server or
// another; one that could not be sent is tried on the next address.
func TestClient_UnrepeatableNotRetried(t *testing.T) {
	var tries atomic.Int32
	busy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tries.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte(`{"error":{"code":"unavailable","message":"outcome unknown"}}`))
	}))
	defer busy.Close()
	c := New(Config{Addrs: []string{busy.URL, busy.URL}, RetryFor: 5 * time.Second})
	if err := c.Transfer(context.Background(), "n2"); err == nil {
		t.Fatal("transfer answered 503 succeeded")
	}
	if n := tries.Load(); n != 1 {
		t.Fatalf("transfer sent %d times, want once", n)
	}
	closed := testkit.FreeAddr(t)
	var ok atomic.Int32
	good := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { ok.Add(1) }))
	defer good.Close()
	c = New(Config{Addrs: []string{closed, good.URL}, RetryFor: 5 * time.Second})
	if err := c.Transfer(context.Background(), "n2"); err != nil || ok.Load() != 1 {
		t.Fatalf("transfer after a refused connection: %v (served %d), want it sent to the next address", err, ok.Load())
	}
}

// TestClient_WatchFailsOverFromASilentServer: a long request parked on a
// server that stops answering (its /livez hangs too, as behind a cut
// link) ends within a few Watch periods and goes to the next address; a
// slow answer from a server whose /livez answers is waited for.
func TestClient_WatchFailsOverFromASilentServer(t *testing.T) {
	silent := hangingServer(t)
	var served atomic.Int32
	good := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"jobs":[]}`))
	}))
	defer good.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req := Request{Method: http.MethodPost, Path: "/v1/executors/poll", Body: model.PollRequest{Executor: "e"}, Watch: 100 * time.Millisecond}
	start := time.Now()
	var out model.PollResponse
	if err := New(Config{Addrs: []string{silent.URL, good.URL}}).Do(ctx, req, &out); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 5*time.Second || served.Load() != 1 {
		t.Fatalf("took %s (good server asked %d times); want the silent server given up after about 3 watches", took, served.Load())
	}

	// A server that answered the probes, then went silent (cut off while
	// the request was parked on it).
	var cut atomic.Bool
	release := make(chan struct{})
	wasAlive := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/livez" && !cut.Load() {
			return
		}
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer func() { close(release); wasAlive.Close() }()
	time.AfterFunc(350*time.Millisecond, func() { cut.Store(true) })
	served.Store(0)
	start = time.Now()
	if err := New(Config{Addrs: []string{wasAlive.URL, good.URL}}).Do(ctx, req, &out); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 5*time.Second || served.Load() != 1 {
		t.Fatalf("took %s (good server asked %d times); want the server given up once it went silent", took, served.Load())
	}

	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/livez" {
			return
		}
		time.Sleep(600 * time.Millisecond) // a long poll that ends with work
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"jobs":[{"instanceId":"0000000000100000"}]}`))
	}))
	defer slow.Close()
	if err := New(Config{Addrs: []string{slow.URL, good.URL}}).Do(ctx, req, &out); err != nil || len(out.Jobs) != 1 {
		t.Fatalf("slow but alive server: %+v, %v; want its answer (the watch must not give it up)", out, err)
	}
}
