package journeys

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/internal/localcluster"
	"github.com/ax-scheduler/ax/internal/testkit"
	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/model/member"
)

// Reads are linearizable by default on every node (DESIGN §11): a client
// that wrote through any node and then reads through any node sees its
// write; ?stale=true is the node's local state, answered even without a
// leader.

// rawCall sends one HTTP request as curl would (no client retries) and
// returns the status and body.
func rawCall(ctx context.Context, t *testing.T, method, addr, path string, body any) (int, []byte) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://"+addr+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s%s: %v", method, addr, path, err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, out
}

// leaderAndFollowers returns c's leader and its other nodes.
func leaderAndFollowers(ctx context.Context, t *testing.T, c *localcluster.Cluster) (*localcluster.Node, []*localcluster.Node) {
	t.Helper()
	leader, err := c.Leader(ctx, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var fs []*localcluster.Node
	for _, n := range c.Nodes {
		if n != leader {
			fs = append(fs, n)
		}
	}
	return leader, fs
}

// TestReads_YourWritesThroughAnyNode writes through one node and reads
// at once through another, with plain HTTP and with the SDK: every read
// finds the write (before reads were linearizable by default, a read
// through a follower answered 404 for a write it had not applied yet).
func TestReads_YourWritesThroughAnyNode(t *testing.T) {
	c := startCluster(t, 3)
	ctx := ctxT(t, 90*time.Second)
	leader, fs := leaderAndFollowers(ctx, t, c)
	pairs := [][2]*localcluster.Node{{fs[0], fs[1]}, {leader, fs[0]}, {fs[1], leader}, {fs[1], fs[0]}}
	for i := 0; i < 10; i++ {
		for j, p := range pairs {
			name := fmt.Sprintf("ryw-%d-%d", i, j)
			if code, b := rawCall(ctx, t, http.MethodPut, p[0].HTTPAddr, "/v1/tasks/"+name, eventTask(name)); code != http.StatusOK {
				t.Fatalf("PUT %s through %s: %d %s", name, p[0].ID, code, b)
			}
			code, b := rawCall(ctx, t, http.MethodGet, p[1].HTTPAddr, "/v1/tasks/"+name, nil)
			if code != http.StatusOK {
				t.Fatalf("PUT %s through %s, then GET through %s: %d %s, want 200", name, p[0].ID, p[1].ID, code, b)
			}
		}
	}
	// The SDK: Trigger and Submit through one node, then GetInstance and
	// its log through another.
	for i := 0; i < 10; i++ {
		p := pairs[i%len(pairs)]
		w, r := p[0].Client(), p[1].Client()
		sub, err := w.Trigger(ctx, "ryw-0-0", model.TriggerRequest{})
		if err != nil {
			t.Fatalf("trigger through %s: %v", p[0].ID, err)
		}
		if _, err := r.GetInstance(ctx, sub.ID); err != nil {
			t.Fatalf("trigger through %s, then GetInstance %s through %s: %v", p[0].ID, sub.ID, p[1].ID, err)
		}
		if _, err := p[0].Client().InstanceLog(ctx, sub.ID, 0); err != nil {
			t.Fatalf("InstanceLog %s through %s: %v", sub.ID, p[0].ID, err)
		}
		sub, err = w.Submit(ctx, "ryw-0-1", model.SubmitRequest{Delay: model.Duration(time.Hour)})
		if err != nil {
			t.Fatalf("submit through %s: %v", p[0].ID, err)
		}
		if _, err := r.GetInstance(ctx, sub.ID); err != nil {
			t.Fatalf("submit through %s, then GetInstance %s through %s: %v", p[0].ID, sub.ID, p[1].ID, err)
		}
		if _, err := r.InstanceLog(ctx, sub.ID, 0); err != nil {
			t.Fatalf("submit through %s, then InstanceLog %s through %s: %v", p[0].ID, sub.ID, p[1].ID, err)
		}
	}
}

// TestReads_NoLeader cuts a node off (the two others stop): a default read
// answers 503 quickly, naming ?stale=true; a stale read answers the
// node's own state, through curl and the CLI's -stale.
func TestReads_NoLeader(t *testing.T) {
	c := startCluster(t, 3)
	ctx := ctxT(t, 90*time.Second)
	leader, fs := leaderAndFollowers(ctx, t, c)
	if _, err := leader.Client().PutTask(ctx, eventTask("kept")); err != nil {
		t.Fatal(err)
	}
	alone := fs[0]
	testkit.Eventually(t, 10*time.Second, func() error {
		_, err := alone.Client().GetTask(ctx, "kept")
		return err
	})
	leader.Kill()
	fs[1].Kill()
	waitHealth(ctx, t, alone, 20*time.Second, func(h *member.Health) error {
		if h.Leader != "" {
			return fmt.Errorf("%s still knows leader %q", alone.ID, h.Leader)
		}
		return nil
	})
	for _, path := range []string{"/v1/tasks/kept", "/v1/tasks", "/v1/instances", "/v1/cluster", "/v1/overview", "/v1/events"} {
		start := time.Now()
		code, b := rawCall(ctx, t, http.MethodGet, alone.HTTPAddr, path, nil)
		took := time.Since(start)
		if code != http.StatusServiceUnavailable || !strings.Contains(string(b), "stale=true") {
			t.Fatalf("GET %s without a leader: %d %s, want 503 naming stale=true", path, code, b)
		}
		if took > 3*time.Second {
			t.Fatalf("GET %s without a leader took %s, want an answer within 3s", path, took)
		}
		t.Logf("GET %s without a leader: 503 in %s: %s", path, took.Round(time.Millisecond), bytes.TrimSpace(b))
	}
	code, b := rawCall(ctx, t, http.MethodGet, alone.HTTPAddr, "/v1/tasks/kept?stale=true", nil)
	var got model.Task
	if code != http.StatusOK || json.Unmarshal(b, &got) != nil || got.Name != "kept" {
		t.Fatalf("stale GET without a leader: %d %s, want 200 with the task", code, b)
	}
	for _, path := range []string{"/v1/instances?stale=true", "/v1/cluster?stale=true", "/v1/overview?stale=true"} {
		if code, b := rawCall(ctx, t, http.MethodGet, alone.HTTPAddr, path, nil); code != http.StatusOK {
			t.Fatalf("GET %s without a leader: %d %s, want 200", path, code, b)
		}
	}
	env := []string{"AX_ADDR=" + alone.HTTPAddr}
	if r := axExec(t, env, "task", "get", "kept", "-stale").want(t, 0, "task", "get", "kept", "-stale"); !strings.Contains(r.stdout, "kept") {
		t.Fatalf("ax task get -stale printed:\n%s", r.stdout)
	}
	axExec(t, env, "status", "-stale").want(t, 0, "status", "-stale")
	r := axExec(t, env, "task", "get", "kept").want(t, 1, "task", "get", "kept")
	if !strings.Contains(r.stderr, "-stale") {
		t.Fatalf("ax task get without a leader: stderr %q, want a hint naming -stale", r.stderr)
	}
}
