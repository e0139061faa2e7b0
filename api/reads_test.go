package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/ax-scheduler/ax/api"
	"github.com/ax-scheduler/ax/model"
)

// nodeLocalReads are the GET routes that answer without a read barrier:
// the node's own health and metrics, the static API description, who the
// caller's credentials make it, and the executors, which the leader alone
// knows (a follower asks it).
var nodeLocalReads = map[string]bool{
	"GET /healthz":         true,
	"GET /livez":           true,
	"GET /metrics":         true,
	"GET /v1/openapi.json": true,
	"GET /v1/acl/whoami":   true,
	"GET /v1/executors":    true,
}

// requiredQuery is the query a GET route needs to reach its read.
var requiredQuery = map[string]string{
	"GET /v1/instances/{id}/approval": "attempt=1",
}

// withQuery adds the route's required query and q ("?k=v...") to path.
func withQuery(path, pattern, q string) string {
	req := requiredQuery[pattern]
	switch {
	case req == "":
		return path + q
	case q == "":
		return path + "?" + req
	}
	return path + "?" + req + "&" + q[1:]
}

// TestServer_ReadsLinearizableByDefault checks every GET route: all but
// the node-local ones wait for a read barrier before reading anything
// (a failed barrier is answered 503 with no backend call), with or
// without ?consistent=true; ?stale=true reads without one; both together
// are a 400 naming stale.
func TestServer_ReadsLinearizableByDefault(t *testing.T) {
	cfg := api.Config{Metrics: http.NotFoundHandler()}
	noLeader := model.Errorf(model.CodeUnavailable, "no leader: add ?stale=true")
	fill := strings.NewReplacer("{name}", "daily", "{id}", "00000000000000ff")
	n := 0
	for _, r := range api.New(cfg).Routes() {
		method, pattern, _ := strings.Cut(r.Pattern, " ")
		if method != http.MethodGet {
			continue
		}
		n++
		path := fill.Replace(pattern)
		t.Run(r.Pattern, func(t *testing.T) {
			if nodeLocalReads[r.Pattern] {
				fb := &fakeBackend{BarrierErr: noLeader}
				serve(t, cfg, fb, getReq(withQuery(path, r.Pattern, "")))
				if fb.Barriers() != 0 {
					t.Errorf("a node-local read asked for %d read barrier(s)", fb.Barriers())
				}
				return
			}
			for _, q := range []string{"", "?consistent=true"} {
				fb := &fakeBackend{BarrierErr: noLeader}
				rec := serve(t, cfg, fb, getReq(withQuery(path, r.Pattern, q)))
				if rec.Code != http.StatusServiceUnavailable || fb.Barriers() != 1 || len(fb.Calls()) != 0 {
					t.Errorf("GET %s%s with a failing barrier: %d after %d barrier(s) and calls %v, want 503 after one barrier and no call (body %s)",
						path, q, rec.Code, fb.Barriers(), fb.Methods(), rec.Body)
				}
			}
			fb := &fakeBackend{BarrierErr: noLeader}
			rec := serve(t, cfg, fb, getReq(withQuery(path, r.Pattern, "?stale=true")))
			if fb.Barriers() != 0 || len(fb.Calls()) == 0 || rec.Code == http.StatusServiceUnavailable {
				t.Errorf("GET %s?stale=true: %d after %d barrier(s) and calls %v, want the local read without a barrier (body %s)",
					path, rec.Code, fb.Barriers(), fb.Methods(), rec.Body)
			}
			for _, q := range []string{"?stale=true&consistent=true", "?stale=maybe"} {
				fb = &fakeBackend{}
				rec = serve(t, cfg, fb, getReq(withQuery(path, r.Pattern, q)))
				if e := errorOf(t, rec); rec.Code != http.StatusBadRequest || e.Field != "stale" || fb.Barriers() != 0 || len(fb.Calls()) != 0 {
					t.Errorf("GET %s%s: %d %+v after calls %v, want 400 naming stale and no call", path, q, rec.Code, e, fb.Methods())
				}
			}
		})
	}
	if n < 20 {
		t.Errorf("checked %d GET routes, want every one", n)
	}
}
