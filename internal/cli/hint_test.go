package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"

	"github.com/ax-scheduler/ax/client"
	"github.com/ax-scheduler/ax/model"
)

// TestHint: each kind of failure names its fix.
func TestHint(t *testing.T) {
	t.Parallel()
	dial := &net.OpError{Op: "dial", Net: "tcp", Addr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1}, Err: errors.New("connection refused")}
	notSent := client.New(client.Config{Addrs: []string{"127.0.0.1:1"}, FailFast: true})
	_, sendErr := notSent.ListTasks(context.Background(), model.TaskFilter{})
	// The hint names the addresses as given, not as resolved (it said
	// 127.0.0.1:7999 for AX_ADDR=localhost:7999).
	byName := client.New(client.Config{Addrs: []string{"localhost:1", "http://localhost:2", "localhost:1"}, FailFast: true})
	_, byNameErr := byName.ListTasks(context.Background(), model.TaskFilter{})
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"401", &model.Error{Code: model.CodeUnauthorized, Message: "missing token"}, "-token or AX_TOKEN (or -token-file)"},
		{"401 of a TLS node without tokens", &model.Error{Code: model.CodeUnauthorized,
			Message: "this node has TLS and no tokens: present a client certificate of the cluster CA (-client-cert, -client-key)"}, "pass -client-cert and -client-key"},
		{"403 with role", &model.Error{Code: model.CodeForbidden, Message: "token ci (role reader) may not PUT /v1/tasks/x: it needs role writer"}, "role writer"},
		{"refused", sendErr, "is an agent running at 127.0.0.1:1? set -addr or AX_ADDR"},
		{"refused, by name", byNameErr, "is an agent running at localhost:1, localhost:2? set -addr or AX_ADDR"},
		{"plain", fmt.Errorf("x: %w", dial), ""},
		{"not found", model.ErrNotFound, ""},
		{"read without a leader", &model.Error{Code: model.CodeUnavailable, Message: "no leader: node n1 knows no cluster leader (it waited 1s for one), so it cannot answer a linearizable read; add ?stale=true to read this node's own state, which may be out of date"}, "-stale"},
		{"other 503", &model.Error{Code: model.CodeUnavailable, Message: "no leader reachable within 5s; retry shortly"}, ""},
	} {
		if got := Hint(tc.err); (tc.want == "" && got != "") || !strings.Contains(got, tc.want) {
			t.Errorf("%s: Hint(%v) = %q, want %q", tc.name, tc.err, got, tc.want)
		}
	}
}
