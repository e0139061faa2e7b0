package client_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/ax-scheduler/ax/client"
	"github.com/ax-scheduler/ax/model"
)

// TestClient_StaleReads: reads are linearizable unless asked (no query
// parameter: the server's default); Stale() or Config.StaleReads adds
// ?stale=true to reads of /v1 only, and a call's own Consistent() or
// Stale() wins over the Config.
func TestClient_StaleReads(t *testing.T) {
	var mu sync.Mutex
	var got string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = r.Method + " " + r.URL.Path + "?" + r.URL.RawQuery
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{}`))
	}))
	defer srv.Close()
	ctx := context.Background()
	plain := client.New(client.Config{Addrs: []string{srv.URL}})
	stale := client.New(client.Config{Addrs: []string{srv.URL}, StaleReads: true})
	for _, tc := range []struct {
		name string
		call func() error
		want string
	}{
		{"default read", func() error { _, err := plain.GetTask(ctx, "t"); return err }, "GET /v1/tasks/t?"},
		{"Stale option", func() error { _, err := plain.GetTask(ctx, "t", client.Stale()); return err }, "GET /v1/tasks/t?stale=true"},
		{"Consistent option (the default, sent as asked)", func() error { _, err := plain.GetInstance(ctx, "00000000000000ff", client.Consistent()); return err },
			"GET /v1/instances/00000000000000ff?consistent=true"},
		{"StaleReads", func() error { _, err := stale.Cluster(ctx); return err }, "GET /v1/cluster?stale=true"},
		{"StaleReads keeps the query", func() error { _, err := stale.InstanceLog(ctx, "00000000000000ff", 5); return err },
			"GET /v1/instances/00000000000000ff/log?offset=5&stale=true"},
		{"StaleReads, Consistent wins", func() error { _, err := stale.GetTask(ctx, "t", client.Consistent()); return err }, "GET /v1/tasks/t?consistent=true"},
		{"StaleReads, not /healthz", func() error { _, err := stale.Health(ctx); return err }, "GET /healthz?"},
		{"StaleReads, not writes", func() error { _, err := stale.Trigger(ctx, "t", model.TriggerRequest{}); return err }, "POST /v1/tasks/t/trigger?"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.call(); err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			defer mu.Unlock()
			if got != tc.want {
				t.Errorf("sent %q, want %q", got, tc.want)
			}
		})
	}
}
