package agent

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/api"
	"github.com/ax-scheduler/ax/model"
)

// snapSink is a raft.SnapshotSink into memory.
type snapSink struct{ bytes.Buffer }

func (*snapSink) ID() string    { return "test" }
func (*snapSink) Cancel() error { return nil }
func (*snapSink) Close() error  { return nil }

// httpStatus answers GET path on a's API without credentials.
func httpStatus(t *testing.T, a *Agent, path string) int {
	t.Helper()
	resp, err := http.Get("http://" + a.HTTPAddr() + path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

// TestAgent_FailedRestoreFailsClosed: a node without -token whose state
// machine failed a restore admits nobody (it used to take the unreadable
// ACL state for "not bootstrapped" and admit everyone as admin) and
// serves nothing but /livez and a 503 /healthz until a restore succeeds.
func TestAgent_FailedRestoreFailsClosed(t *testing.T) {
	a := startAgent(t, func(c *Config) { c.WatchInterval = time.Hour })
	ctx := context.Background()
	if _, err := a.acc.ACLBootstrap(ctx, api.Caller{Actor: "tester"}); err != nil {
		t.Fatal(err)
	}
	anon, _ := http.NewRequest(http.MethodGet, "/v1/tasks", nil)
	if _, err := a.acc.Authenticate(anon); !errors.Is(err, model.ErrUnauthorized) {
		t.Fatalf("no token after the bootstrap: got %v, want unauthorized", err)
	}
	// A write after that check: the auth state cached for it is stale, so
	// the next check reads the state machine.
	task := &model.Task{Name: "job", Trigger: model.Trigger{Type: model.TriggerEvent}, Action: model.Action{Type: model.ActionShell, Command: "true"}}
	if _, err := a.tasks.PutTask(ctx, api.Caller{Actor: "tester"}, task, api.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	var good snapSink
	snap, err := a.fsm.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	if err := snap.Persist(&good); err != nil {
		t.Fatal(err)
	}
	snap.Release()
	// Raft stops first: it applies nothing to a state machine whose
	// restore failed (it installs a snapshot again), and this test has no
	// leader to send one.
	if err := a.node.Close(); err != nil {
		t.Fatal(err)
	}

	if err := a.fsm.Restore(io.NopCloser(strings.NewReader("not a state machine"))); err == nil {
		t.Fatal("restoring garbage succeeded")
	}
	id, err := a.acc.Authenticate(anon)
	if !errors.Is(err, model.ErrUnavailable) || id.Principal != nil {
		t.Fatalf("no token while the state is unreadable: got %+v, %v; want unavailable and no identity", id.Principal, err)
	}
	for path, want := range map[string]int{"/livez": 200, "/healthz": 503, "/v1/tasks": 503, "/metrics": 503, "/v1/openapi.json": 503, "/ui/": 503} {
		if got := httpStatus(t, a, path); got != want {
			t.Errorf("GET %s on a node whose restore failed: HTTP %d, want %d", path, got, want)
		}
	}
	if h := a.cl.Health(ctx); !strings.Contains(h.Problem, "state machine") {
		t.Errorf("health problem %q does not name the state machine", h.Problem)
	}

	if err := a.fsm.Restore(io.NopCloser(&good.Buffer)); err != nil {
		t.Fatal(err)
	}
	if got := httpStatus(t, a, "/v1/tasks"); got != http.StatusUnauthorized {
		t.Errorf("GET /v1/tasks without a token once restored: HTTP %d, want 401", got)
	}
	if h := a.cl.Health(ctx); strings.Contains(h.Problem, "state machine") {
		t.Errorf("health problem once restored: %q", h.Problem)
	}
}

// TestAgent_TransferOnOneNodeIsAConflict: a leadership transfer on a
// one-node cluster answers 409 with why (it answered 503, which clients
// retry in vain).
func TestAgent_TransferOnOneNodeIsAConflict(t *testing.T) {
	a := startAgent(t)
	for _, body := range []string{`{}`, `{"id":"n2"}`} {
		var out model.ErrorBody
		if code := apiCall(t, a, http.MethodPost, "/v1/cluster/transfer", body, &out); code != http.StatusConflict ||
			out.Error == nil || !strings.Contains(out.Error.Message, "only voter") {
			t.Errorf("POST /v1/cluster/transfer %s on one node: HTTP %d %+v, want 409 saying it is the only voter", body, code, out.Error)
		}
	}
}
