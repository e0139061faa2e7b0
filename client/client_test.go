package client

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"ax/model"
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
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	c := New(Config{Addrs: []string{addr}, Once: true})
	_, err = c.Trigger(context.Background(), "job", model.TriggerRequest{})
	var me *model.Error
	if !errors.Is(err, ErrNotSent) || !errors.As(err, &me) || me.Code != model.CodeUnavailable || !strings.Contains(err.Error(), addr) {
		t.Fatalf("got %v, want a not-sent unavailable error naming %s", err, addr)
	}
}
