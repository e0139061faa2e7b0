package work

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/ax-scheduler/ax/internal/cli"
	"github.com/ax-scheduler/ax/internal/command"
	"github.com/ax-scheduler/ax/model/member"
)

// healthServer answers GET /healthz as a node of the given binary protocol.
func healthServer(t *testing.T, node string, proto int) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/healthz" {
			t.Errorf("unexpected request %s %s", r.Method, r.URL)
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(member.Health{Node: node, Proto: proto})
	}))
	t.Cleanup(srv.Close)
	return srv.Listener.Addr().String()
}

// closedAddr is an address nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// TestCheckDryRun: a dry run is refused when a node it may reach is older
// than protocol 5 (it would ignore ?dryRun and write) or when none answers.
func TestCheckDryRun(t *testing.T) {
	t.Parallel()
	current, older, down := healthServer(t, "n1", dryRunProto), healthServer(t, "n2", dryRunProto-1), closedAddr(t)
	tests := []struct {
		name    string
		addrs   []string
		wantErr string
	}{
		{"one current node", []string{current}, ""},
		{"a node down is skipped", []string{down, current}, ""},
		{"an older node", []string{current, older}, "node n2 (" + older + ") runs protocol 4, which ignores dry runs and would write"},
		{"no node answers", []string{down}, "no node answered"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := checkDryRun(context.Background(), &command.ClientFlags{ClientFlags: cli.ClientFlags{Addr: strings.Join(tt.addrs, ","), Getenv: func(string) string { return "" }}})
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("got %v, want nil", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("got %v, want %q", err, tt.wantErr)
			}
		})
	}
}
