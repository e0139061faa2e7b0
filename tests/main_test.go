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
	"github.com/ax-scheduler/ax/internal/localcluster"
	"github.com/ax-scheduler/ax/internal/testkit"
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

// clusterOption adjusts the cluster startCluster starts.
type clusterOption func(*localcluster.Config)

// withArgs gives every agent extra flags.
func withArgs(args ...string) clusterOption {
	return func(c *localcluster.Config) { c.Args = append(c.Args, args...) }
}

// withFirstArgs gives the first (bootstrapping) agent extra flags.
func withFirstArgs(args ...string) clusterOption {
	return func(c *localcluster.Config) { c.FirstArgs = append(c.FirstArgs, args...) }
}

// withToken protects the cluster with a token that the clients,
// executors and CLI of localcluster present.
func withToken(token string) clusterOption {
	return func(c *localcluster.Config) { c.Token = token }
}

// withTLS makes a TLS cluster with the CA and certificates in dir
// (whatever is missing is created).
func withTLS(dir string) clusterOption {
	return func(c *localcluster.Config) { c.TLSDir = dir }
}

// withBinary runs the agents from path in place of the ax built for the
// suite (a build with fault hooks, say).
func withBinary(path string) clusterOption {
	return func(c *localcluster.Config) { c.Binary = path }
}

// withNodeEnv adds variables ("K=V") to the environment of agent id.
func withNodeEnv(id string, env ...string) clusterOption {
	return func(c *localcluster.Config) {
		if c.NodeEnv == nil {
			c.NodeEnv = map[string][]string{}
		}
		c.NodeEnv[id] = append(c.NodeEnv[id], env...)
	}
}

// startCluster starts n agents of the suite's ax in a temp dir, with
// debug logs and no embedded executor unless an option asks (tests that
// run work start ax executor processes of their own), and stops them
// when the test ends. A data race (with AX_TEST_RACE=1), a panic or a
// fatal error in any agent's log fails the test; on failure the logs are
// printed. Skipped in -short mode.
func startCluster(t testing.TB, n int, opts ...clusterOption) *localcluster.Cluster {
	t.Helper()
	if testing.Short() {
		t.Skip("multi-process test skipped in -short mode")
	}
	dir := t.TempDir()
	cfg := localcluster.Config{Nodes: n, Binary: axBinary, Dir: dir}
	for _, o := range opts {
		o(&cfg)
	}
	cfg.Args = append([]string{"-log-level", "debug", "-executor", "false"}, cfg.Args...)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := localcluster.Start(ctx, cfg)
	if err != nil {
		dumpLogs(t, dir)
		t.Fatalf("start cluster: %v", err)
	}
	t.Cleanup(func() {
		c.Close()
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

// waitHealth polls n's /healthz (200, or 503 with the same JSON) until
// cond holds, failing the test after within.
func waitHealth(ctx context.Context, t *testing.T, n *localcluster.Node, within time.Duration, cond func(*model.Health) error) {
	t.Helper()
	testkit.Eventually(t, within, func() error {
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
