package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/cluster"
	"github.com/ax-scheduler/ax/fsm/command"
	"github.com/ax-scheduler/ax/internal/testkit"
	"github.com/ax-scheduler/ax/model/member"
)

// healthz asks a's /healthz as a client would.
func healthz(t *testing.T, a *Agent) (int, *member.Health) {
	t.Helper()
	rec := httptest.NewRecorder()
	a.http.Handler.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/healthz", nil))
	var h member.Health
	if err := json.Unmarshal(rec.Body.Bytes(), &h); err != nil {
		t.Fatalf("GET /healthz: %d %s: %v", rec.Code, rec.Body, err)
	}
	return rec.Code, &h
}

// applyNoops appends n entries to the Raft log through l (one entry each,
// not grouped), a few at a time.
func applyNoops(t *testing.T, l *Agent, n int) {
	t.Helper()
	c, err := command.New(command.TypeNoop, "", "test", nil)
	if err != nil {
		t.Fatal(err)
	}
	data := c.Encode()
	var wg sync.WaitGroup
	var failed atomic.Value
	per := n / 16
	for g := 0; g < 16; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < per; i++ {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				_, _, err := l.node.Apply(ctx, data)
				cancel()
				if err != nil {
					failed.Store(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err, ok := failed.Load().(error); ok {
		t.Fatalf("apply on the leader: %v", err)
	}
}

// TestAgent_HealthFollowerCannotAppend: a follower whose Raft log takes
// no entries (a full disk) keeps its leader and, by its own Raft, lags
// nothing; its /healthz answers 503 saying it cannot append, and, once
// the leader has committed more than the bound beyond it, how far behind
// it is. The cluster status shows it unhealthy with the reason, its
// metrics count the failures, and once appends succeed again it catches
// up and answers 200 by itself.
func TestAgent_HealthFollowerCannotAppend(t *testing.T) {
	full := fmt.Errorf("write raft.db: %w", syscall.ENOSPC)
	var failing atomic.Bool
	tc := startCluster(t, 3, func(cfg *Config) {
		if cfg.NodeID == "n3" {
			cfg.testAppendFault = func() error {
				if failing.Load() {
					return full
				}
				return nil
			}
		}
	})
	ctx := context.Background()
	f := tc.agents[2]
	l := tc.leader()
	if l == f {
		tctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := f.node.TransferLeadership(tctx, "n1")
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		l = tc.waitLeader(t, f)
	}
	testkit.Eventually(t, 10*time.Second, func() error {
		if code, h := healthz(t, f); code != http.StatusOK || h.Problem != "" {
			return fmt.Errorf("follower /healthz %d %q before the fault, want 200", code, h.Problem)
		}
		return nil
	})

	failing.Store(true)
	applyNoops(t, l, cluster.MaxLag+200)
	commit := l.node.CommitIndex()
	testkit.Eventually(t, 20*time.Second, func() error {
		code, h := healthz(t, f)
		if code != http.StatusServiceUnavailable || !strings.Contains(h.Problem, "cannot append to the Raft log: write raft.db: no space left on device (since ") {
			return fmt.Errorf("follower /healthz %d %q, want 503 saying it cannot append", code, h.Problem)
		}
		if !strings.Contains(h.Problem, "lags the commit index") || h.CommitIndex < commit {
			return fmt.Errorf("follower /healthz problem %q, commit index %d: want its lag behind the leader's %d", h.Problem, h.CommitIndex, commit)
		}
		return nil
	})
	if id, _ := f.node.Leader(); id != l.cfg.NodeID || f.node.CommitIndex() >= commit {
		t.Fatalf("follower's leader %q, own commit index %d: want %s and below %d (the case Raft alone hides)", id, f.node.CommitIndex(), l.cfg.NodeID, commit)
	}
	st, err := l.cl.Cluster(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range st.Nodes {
		if n.ID == f.cfg.NodeID && (n.Status != "unhealthy" || !strings.Contains(n.Problem, "cannot append to the Raft log")) {
			t.Fatalf("cluster status shows %s as %s %q, want unhealthy, cannot append", n.ID, n.Status, n.Problem)
		}
	}
	fams := gather(t, f)
	if m := series(fams, "ax_raft_log_append_failing", map[string]string{}); m == nil || m.GetGauge().GetValue() != 1 {
		t.Fatalf("ax_raft_log_append_failing %v, want 1", m)
	}
	if m := series(fams, "ax_raft_log_append_failures_total", map[string]string{}); m == nil || m.GetCounter().GetValue() < 1 {
		t.Fatalf("ax_raft_log_append_failures_total %v, want at least 1", m)
	}

	failing.Store(false)
	testkit.Eventually(t, 60*time.Second, func() error {
		code, h := healthz(t, f)
		if code != http.StatusOK || h.Problem != "" || h.AppliedIndex < l.node.StateIndex(commit) {
			return fmt.Errorf("follower /healthz %d %q applied %d, want 200 at %d once appends succeed", code, h.Problem, h.AppliedIndex, commit)
		}
		return nil
	})
	if m := series(gather(t, f), "ax_raft_log_append_failing", map[string]string{}); m == nil || m.GetGauge().GetValue() != 0 {
		t.Fatalf("ax_raft_log_append_failing %v after recovery, want 0", m)
	}
}
