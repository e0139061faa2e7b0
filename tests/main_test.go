package tests

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/client"
	"github.com/ax-scheduler/ax/localcluster"
	"github.com/ax-scheduler/ax/model"
)

// axBinary is the ax executable built once for all tests; benchBinary is
// ax-bench, the load tool, whose temporary clusters run axBinary.
var axBinary, benchBinary string

func TestMain(m *testing.M) {
	mark := markRun()
	dir, err := os.MkdirTemp("", "ax-tests-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	axBinary = filepath.Join(dir, "ax")
	// AX_TEST_RACE=1 go test ./tests/ runs race-enabled agents.
	if err := localcluster.Build(axBinary); err != nil {
		fmt.Fprintln(os.Stderr, "building ax:", err)
		os.Exit(1)
	}
	benchBinary = filepath.Join(dir, "ax-bench")
	if err := localcluster.BuildCommand(benchBinary, "github.com/ax-scheduler/ax/cmd/ax-bench"); err != nil {
		fmt.Fprintln(os.Stderr, "building ax-bench:", err)
		os.Exit(1)
	}
	code := m.Run()
	// Last: nothing the suite started may outlive it (agents, executors,
	// the attempts they ran, `ax approval request`...). Killed executors'
	// reapers get their grace to stop what ran.
	if left := checkLeftovers(mark, dir, 15*time.Second); len(left) > 0 {
		fmt.Fprintf(os.Stderr, "FAIL: %d process(es) of this test run outlived it (killed now):\n\t%s\n", len(left), strings.Join(left, "\n\t"))
		code = 1
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

// startCluster starts n agents and stops them when the test ends. On
// failure the agents' logs are printed.
func startCluster(t *testing.T, n int, args ...string) *localcluster.Cluster {
	t.Helper()
	return startClusterToken(t, n, "", args...)
}

func startClusterToken(t *testing.T, n int, token string, args ...string) *localcluster.Cluster {
	t.Helper()
	if testing.Short() {
		t.Skip("multi-process test skipped in -short mode")
	}
	return startClusterCfg(t, localcluster.Config{Nodes: n, Args: args, Token: token})
}

// startClusterCfg starts a cluster of the test binary (cfg.Binary if set)
// in a temp dir and stops it, checking every log for races and panics,
// when the test ends.
func startClusterCfg(t testing.TB, cfg localcluster.Config) *localcluster.Cluster {
	t.Helper()
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// No embedded executor unless a test asks: tests that run work start
	// ax executor processes of their own.
	cfg.Args = append([]string{"-log-level", "debug", "-executor", "false"}, cfg.Args...)
	if cfg.Binary == "" {
		cfg.Binary = axBinary
	}
	cfg.Dir = dir
	c, err := localcluster.Start(ctx, cfg)
	if err != nil {
		dumpLogs(t, dir)
		t.Fatalf("start cluster: %v", err)
	}
	t.Cleanup(func() {
		c.Close()
		// A data race (with AX_TEST_RACE=1) or a panic in any process
		// fails the test even if what the test checked looked right.
		logs, _ := filepath.Glob(filepath.Join(dir, "*.log"))
		for _, l := range logs {
			b, _ := os.ReadFile(l)
			for _, bad := range []string{"WARNING: DATA RACE", "panic:", "fatal error:"} {
				if strings.Contains(string(b), bad) {
					t.Errorf("%s: %q in the log", filepath.Base(l), bad)
				}
			}
		}
		if t.Failed() {
			dumpLogs(t, dir)
		}
	})
	return c
}

func dumpLogs(t testing.TB, dir string) {
	t.Helper()
	logs, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	for _, l := range logs {
		b, _ := os.ReadFile(l)
		lines := strings.Split(string(b), "\n")
		if len(lines) > 150 {
			lines = lines[len(lines)-150:]
		}
		t.Logf("==== %s (last %d lines)\n%s", filepath.Base(l), len(lines), strings.Join(lines, "\n"))
	}
}

func ctxT(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func eventTask(name string) *model.Task {
	return &model.Task{
		Name:    name,
		Trigger: model.Trigger{Type: model.TriggerEvent},
		Action:  model.Action{Type: model.ActionShell, Command: "echo " + name},
		Labels:  map[string]string{"suite": "tests"},
	}
}

// waitFor polls cond until it holds or fails the test after within.
func waitFor(t *testing.T, within time.Duration, cond func() error) {
	t.Helper()
	if err := localcluster.WaitFor(context.Background(), within, cond); err != nil {
		t.Fatal(err)
	}
}

// waitHealth polls n's /healthz (200, or 503 with the same JSON) until
// cond holds, failing the test after within.
func waitHealth(ctx context.Context, t *testing.T, n *localcluster.Node, within time.Duration, cond func(*model.Health) error) {
	t.Helper()
	waitFor(t, within, func() error {
		h, err := n.Client().Health(ctx)
		if h == nil {
			return err
		}
		// An unhealthy node answers 503 with its health: cond judges it.
		return cond(h)
	})
}

// countTasks lists every task a node holds locally.
func countTasks(ctx context.Context, c *client.Client, opts ...client.ReadOption) (map[string]uint64, error) {
	out := map[string]uint64{}
	f := model.TaskFilter{Limit: 1000}
	for {
		page, err := c.ListTasks(ctx, f, opts...)
		if err != nil {
			return nil, err
		}
		for _, t := range page.Tasks {
			out[t.Name] = t.Version
		}
		if page.NextCursor == "" {
			return out, nil
		}
		f.Cursor = page.NextCursor
	}
}

// hasAll checks that node c holds every name in want.
func hasAll(ctx context.Context, c *client.Client, want map[string]bool) error {
	got, err := countTasks(ctx, c)
	if err != nil {
		return err
	}
	missing := 0
	for n := range want {
		if _, ok := got[n]; !ok {
			missing++
		}
	}
	if missing > 0 {
		return fmt.Errorf("%d of %d acknowledged tasks missing", missing, len(want))
	}
	return nil
}
