package agent

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/internal/testkit"
	"github.com/ax-scheduler/ax/model/member"
)

// TestAgent_HealthAndClusterStatus: every member's status shows its role,
// version and lag; a stopped member shows as unreachable (with when the
// leader last heard from it over Raft), and a node without a leader
// answers /healthz 503 with its health, saying why.
func TestAgent_HealthAndClusterStatus(t *testing.T) {
	tc := startCluster(t, 3, func(cfg *Config) { cfg.Version = "v-test" })
	ctx := context.Background()
	l := tc.leader()
	if h := l.cl.Health(ctx); h.Problem != "" || h.Version != "v-test" || h.Proto == 0 || h.Protocol == 0 {
		t.Fatalf("leader health %+v, want healthy with version and protocols", h)
	}
	st, err := l.cl.Cluster(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range st.Nodes {
		if n.Status != "ok" || n.Version != "v-test" || n.Lag == nil || n.Role == "" {
			t.Fatalf("member %+v, want ok with role, version and lag", n)
		}
	}
	f := tc.follower(l)
	down, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := f.Shutdown(down); err != nil {
		t.Fatal(err)
	}
	testkit.Until(t, 10*time.Second, "the stopped member to show as unreachable", func() bool {
		st, err := l.cl.Cluster(ctx)
		if err != nil {
			return false
		}
		for _, n := range st.Nodes {
			if n.ID == f.cfg.NodeID {
				return n.Status == "unreachable" && n.Lag == nil && n.RaftContact > 0
			}
		}
		return false
	})
	g := tc.follower2(l, f)
	if err := g.Shutdown(down); err != nil {
		t.Fatal(err)
	}
	testkit.Until(t, 10*time.Second, "the survivor to lose its leader", func() bool {
		return strings.Contains(l.cl.Health(ctx).Problem, "no leader")
	})
	rec := httptest.NewRecorder()
	l.http.Handler.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/healthz", nil))
	var h member.Health
	if err := json.Unmarshal(rec.Body.Bytes(), &h); err != nil || rec.Code != http.StatusServiceUnavailable || h.Node != l.cfg.NodeID {
		t.Fatalf("GET /healthz without a leader: %d %s, want 503 with the node's health", rec.Code, rec.Body)
	}
	rec = httptest.NewRecorder()
	l.http.Handler.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/livez", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /livez: %d, want 200 (the process answers)", rec.Code)
	}
}
