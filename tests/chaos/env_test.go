package chaos

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/client"
	"github.com/ax-scheduler/ax/internal/localcluster"
)

// lease is the agents' -lease in the chaos cluster: short, so that a cut
// executor's attempt is re-leased (and any overlap shows) within a
// scenario.
const lease = 3 * time.Second

var build struct {
	once sync.Once
	dir  string
	bin  string
	err  error
}

// axBinary builds ax once per test binary, with the faults build tag so
// that AX_FAULT_CLOCK_OFFSET offsets an agent's clock.
func axBinary(t *testing.T) string {
	t.Helper()
	build.once.Do(func() {
		build.dir, build.err = os.MkdirTemp("", "ax-chaos-bin-")
		if build.err != nil {
			return
		}
		build.bin = filepath.Join(build.dir, "ax")
		_, build.err = localcluster.Install(build.bin, "github.com/ax-scheduler/ax/cmd/ax", "faults")
	})
	if build.err != nil {
		t.Fatal(build.err)
	}
	return build.bin
}

// env is one scenario's world: a namespace per agent (n1..n3) and per
// executor (e1, e2) on a private bridge, the cluster, the executors, the
// action script and its log, and the faults injected so far.
type env struct {
	t       *testing.T
	net     *Net
	c       *localcluster.Cluster
	dir     string
	script  string
	logPath string

	execs map[string]*localcluster.Node // the executors, by name

	mu      sync.Mutex
	offsets map[string]string // node id -> AX_FAULT_CLOCK_OFFSET at its next start
	faults  []Fault
	leaders []Leadership
	watch   sync.WaitGroup
	stop    chan struct{}
}

var agents = []string{"n1", "n2", "n3"}
var executors = []string{"e1", "e2"}

// newEnv builds the network, starts the cluster and the executors, and
// registers their teardown (processes first, then namespaces), which runs
// even when the test fails.
func newEnv(t *testing.T) *env {
	t.Helper()
	if err := Available(); err != nil {
		t.Fatal(err)
	}
	bin := axBinary(t)
	dir := t.TempDir() // removed after the namespaces and what runs in them
	net, err := NewNet(append(append([]string(nil), agents...), executors...)...)
	if err != nil {
		t.Fatalf("network namespaces: %v", err)
	}
	t.Cleanup(func() {
		if err := net.Close(); err != nil {
			t.Errorf("tearing down the namespaces: %v", err)
		}
	})
	e := &env{t: t, net: net, dir: dir, offsets: map[string]string{}, stop: make(chan struct{})}
	e.script = filepath.Join(e.dir, "act.sh")
	e.logPath = filepath.Join(e.dir, "actions.log")
	if err := os.WriteFile(e.script, []byte(ActionScript), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cfg := localcluster.Config{
		Binary: bin, Nodes: len(agents), Dir: e.dir,
		Args: []string{"-insecure", "-executor", "false", "-lease", lease.String(), "-log-level", "debug"},
		Listen: func(id string) (string, string) {
			ip := net.Host(id).IP
			return ip + ":7070", ip + ":7071"
		},
		Wrap: e.wrap,
	}
	t.Cleanup(e.close)
	c, err := localcluster.Start(ctx, cfg)
	if err != nil {
		t.Fatalf("start cluster: %v", err)
	}
	e.c = c
	e.watchLeaders()
	e.execs = map[string]*localcluster.Node{}
	for _, name := range executors {
		n, err := c.StartExecutor(name, "-capacity", "64", "-log-level", "debug")
		if err != nil {
			t.Fatalf("start executor %s: %v", name, err)
		}
		e.execs[name] = n
	}
	return e
}

// wrap runs process id in its namespace, with its clock offset if one is
// set.
func (e *env) wrap(id string) []string {
	e.mu.Lock()
	off := e.offsets[id]
	e.mu.Unlock()
	if off != "" {
		return e.net.Exec(id, "AX_FAULT_CLOCK_OFFSET="+off)
	}
	return e.net.Exec(id)
}

// setOffset sets the clock offset node id gets at its next start ("" for
// none).
func (e *env) setOffset(id, off string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.offsets[id] = off
}

// close stops every process, fails the test on a panic or data race in
// any log, prints the logs' tails if the test failed, and keeps the run's
// files in AX_CHAOS_KEEP if set.
func (e *env) close() {
	t := e.t
	close(e.stop)
	e.watch.Wait()
	if e.c != nil {
		e.c.Close()
	}
	logs, _ := filepath.Glob(filepath.Join(e.dir, "*.log"))
	for _, l := range logs {
		if filepath.Base(l) == "actions.log" {
			continue
		}
		b, _ := os.ReadFile(l)
		for _, bad := range []string{"WARNING: DATA RACE", "panic:", "fatal error:"} {
			if strings.Contains(string(b), bad) {
				t.Errorf("%s: %q in the log", filepath.Base(l), bad)
			}
		}
		if t.Failed() && os.Getenv("AX_CHAOS_KEEP") == "" {
			lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
			if len(lines) > 40 {
				lines = lines[len(lines)-40:]
			}
			t.Logf("==== %s (last %d lines)\n%s", filepath.Base(l), len(lines), strings.Join(lines, "\n"))
		}
	}
	if keep := os.Getenv("AX_CHAOS_KEEP"); keep != "" {
		dst := filepath.Join(keep, strings.ReplaceAll(t.Name(), "/", "_"))
		_ = os.RemoveAll(dst)
		if out, err := exec.Command("cp", "-a", e.dir, dst).CombinedOutput(); err != nil {
			t.Logf("keeping the run's files: %v: %s", err, out)
		} else {
			t.Logf("run files kept in %s", dst)
		}
	}
}

// leader waits for the running agents to agree on a leader.
func (e *env) leader(ctx context.Context, within time.Duration) (*localcluster.Node, error) {
	return e.c.Leader(ctx, within)
}

// follower returns an agent other than the leader.
func (e *env) follower(leader *localcluster.Node) *localcluster.Node {
	for _, n := range e.c.Nodes {
		if n != leader {
			return n
		}
	}
	return nil
}

// inject runs do (the fault), records the fault under name from now until
// heal succeeds, and returns heal's error. hold waits while the fault is
// on.
func (e *env) inject(name string, do func() error, hold func(), heal func() error) error {
	start := time.Now()
	err := do()
	if err == nil {
		hold()
	}
	if herr := heal(); herr != nil {
		err = fmt.Errorf("%w; heal: %v", err, herr)
	}
	e.mu.Lock()
	e.faults = append(e.faults, Fault{Name: name, Start: start, End: time.Now()})
	e.mu.Unlock()
	e.t.Logf("fault %s: %s → %s", name, clock(start), clock(time.Now()))
	return err
}

// recordedFaults returns the faults injected so far.
func (e *env) recordedFaults() []Fault {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]Fault(nil), e.faults...)
}

// caughtUp waits until agent n has applied what the leader has committed
// and knows the leader.
func (e *env) caughtUp(ctx context.Context, n *localcluster.Node, within time.Duration) error {
	return localcluster.WaitFor(ctx, within, func() error {
		h, err := n.Client().Health(ctx)
		if err != nil {
			return err
		}
		if h.Leader == "" {
			return fmt.Errorf("%s knows no leader", n.ID)
		}
		lead, err := e.leader(ctx, time.Second)
		if err != nil {
			return err
		}
		lh, err := lead.Client().Health(ctx)
		if err != nil {
			return err
		}
		if h.AppliedIndex+16 < lh.CommitIndex {
			return fmt.Errorf("%s applied %d, leader committed %d", n.ID, h.AppliedIndex, lh.CommitIndex)
		}
		return nil
	})
}

// runs parses the action log as it is now.
func (e *env) runs() []Run {
	f, err := os.Open(e.logPath)
	if err != nil {
		return nil
	}
	defer f.Close()
	runs, _, _ := ParseRuns(f)
	return runs
}

// watchLeaders polls every agent's /healthz every 250 ms until the env
// closes and records each leadership (term, leader) when first seen.
func (e *env) watchLeaders() {
	for _, n := range e.c.Nodes {
		e.watch.Add(1)
		go func() {
			defer e.watch.Done()
			cl := client.New(client.Config{Addrs: []string{n.HTTPAddr}, RetryFor: time.Second})
			for {
				select {
				case <-e.stop:
					return
				case <-time.After(250 * time.Millisecond):
				}
				ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
				h, err := cl.Health(ctx)
				cancel()
				if err != nil || h.Leader == "" {
					continue
				}
				e.mu.Lock()
				seen := false
				for _, l := range e.leaders {
					seen = seen || l.Term == h.Term && l.Leader == h.Leader
				}
				if !seen {
					e.leaders = append(e.leaders, Leadership{Term: h.Term, Leader: h.Leader, Seen: time.Now()})
				}
				e.mu.Unlock()
			}
		}()
	}
}

// leaderships returns the leaderships seen so far, by term.
func (e *env) leaderships() []Leadership {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := append([]Leadership(nil), e.leaders...)
	sort.Slice(out, func(i, j int) bool { return out[i].Term < out[j].Term })
	return out
}

// startHogs starts stress-ng with a CPU hog per core and returns what
// stops it. Without stress-ng the test fails if AX_REQUIRE_STRESS is set
// (CI installs it), else it is skipped.
func startHogs(t *testing.T) func() {
	t.Helper()
	bin, err := exec.LookPath("stress-ng")
	if err != nil {
		if os.Getenv("AX_REQUIRE_STRESS") != "" {
			t.Fatal("stress-ng not found (apt-get install stress-ng)")
		}
		t.Skip("stress-ng not found: the starved scenarios need it (apt-get install stress-ng)")
	}
	cmd := exec.Command(bin, "--cpu", fmt.Sprint(runtime.NumCPU()), "--timeout", "30m", "--quiet")
	if err := cmd.Start(); err != nil {
		t.Fatalf("stress-ng: %v", err)
	}
	t.Logf("CPU hogs: stress-ng --cpu %d (pid %d)", runtime.NumCPU(), cmd.Process.Pid)
	return func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	}
}
