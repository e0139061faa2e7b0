package client

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/internal/testkit"
	"github.com/ax-scheduler/ax/model"
)

// TestClient_FailFast: with FailFast each address is tried once: refused
// connections fail at once with each URL named once, a 503 moves to the
// next address, and a call whose every address answered 503 fails
// without going round again.
func TestClient_FailFast(t *testing.T) {
	ctx := context.Background()
	a, b := testkit.FreeAddr(t), testkit.FreeAddr(t)

	start := time.Now()
	_, err := New(Config{Addrs: []string{a}, FailFast: true}).ListTasks(ctx, model.TaskFilter{})
	if !errors.Is(err, ErrNotSent) || strings.Count(err.Error(), a) != 1 || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("one refused address: got %v, want a not-sent error naming %s once", err, a)
	}
	var oe *net.OpError
	if !errors.As(err, &oe) || oe.Addr.String() != a {
		t.Errorf("one refused address: the dial error is not in the chain: %v", err)
	}
	_, err = New(Config{Addrs: []string{a, b}, FailFast: true}).ListTasks(ctx, model.TaskFilter{})
	if !errors.Is(err, ErrNotSent) || strings.Count(err.Error(), a) != 1 || strings.Count(err.Error(), b) != 1 {
		t.Errorf("two refused addresses: got %v, want each named once", err)
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("refused addresses took %s, want no retries", took)
	}

	var tries atomic.Int32
	busy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tries.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte(`{"error":{"code":"unavailable","message":"no leader elected within 5s; retry shortly"}}`))
	}))
	defer busy.Close()
	good := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`{"id":"7"}`))
	}))
	defer good.Close()
	got, err := New(Config{Addrs: []string{busy.URL, good.URL}, FailFast: true}).Trigger(ctx, "job", model.TriggerRequest{})
	if err != nil || got.ID != "7" || tries.Load() != 1 {
		t.Errorf("503 then a good address: %+v, %v (busy asked %d times), want the good one's answer", got, err, tries.Load())
	}
	tries.Store(0)
	_, err = New(Config{Addrs: []string{busy.URL, a}, FailFast: true}).Trigger(ctx, "job", model.TriggerRequest{})
	if err == nil || errors.Is(err, ErrNotSent) || !strings.Contains(err.Error(), "no leader") || tries.Load() != 1 {
		t.Errorf("503 and a refused address: %v (busy asked %d times), want one round, the 503 named, not ErrNotSent", err, tries.Load())
	}
}

// TestClient_StreamEvents: Stream skips an address that answers 503,
// hands over each event (type, id, multi-line data; comments skipped)
// and returns nil when the server ends the stream; an error answer
// other than 503 is returned as is.
func TestClient_StreamEvents(t *testing.T) {
	busy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte(`{"error":{"code":"unavailable","message":"too many streams"}}`))
	}))
	defer busy.Close()
	var gotQuery atomic.Value
	sse := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/events" {
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"error":{"code":"not_found","message":"no such route"}}`))
			return
		}
		gotQuery.Store(r.URL.RawQuery)
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, ": keepalive\n\nevent: instance\nid: 7\ndata: {\"id\":\"a\"}\n\nevent: log\ndata: one\ndata: two\n\n")
	}))
	defer sse.Close()
	c := New(Config{Addrs: []string{busy.URL, sse.URL}, FailFast: true})
	var got []Event
	err := c.Stream(context.Background(), "/v1/events", url.Values{"task": {"x"}}, func(e Event) error {
		got = append(got, e)
		return nil
	})
	if err != nil {
		t.Fatalf("stream: %v", err)
	}
	if len(got) != 2 || got[0].Type != "instance" || got[0].ID != "7" || string(got[0].Data) != `{"id":"a"}` ||
		got[1].Type != "log" || string(got[1].Data) != "one\ntwo" {
		t.Errorf("events %+v", got)
	}
	if q, _ := gotQuery.Load().(string); q != "task=x" {
		t.Errorf("query %q, want task=x", q)
	}
	stop := errors.New("stop")
	if err := c.Stream(context.Background(), "/v1/events", nil, func(Event) error { return stop }); !errors.Is(err, stop) {
		t.Errorf("fn's error: got %v", err)
	}
	err = c.Stream(context.Background(), "/v1/nothing", nil, func(Event) error { return nil })
	if !errors.Is(err, model.ErrNotFound) {
		t.Errorf("404: got %v, want not found", err)
	}
}
