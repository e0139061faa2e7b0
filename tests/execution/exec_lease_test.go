package execution

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/client"
	"github.com/ax-scheduler/ax/internal/agenttest"
	"github.com/ax-scheduler/ax/internal/localcluster"
	"github.com/ax-scheduler/ax/internal/testkit"
	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/model/member"
	"github.com/ax-scheduler/ax/worker"
)

// cutProxy forwards TCP connections to one address until it is cut: then
// every connection through it is closed and new ones are refused, as if
// the network between its clients and the address were gone.
type cutProxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	conns  []net.Conn
	cut    bool
}

func newCutProxy(t *testing.T, target string) *cutProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{ln: ln, target: target}
	go p.serve()
	t.Cleanup(p.Cut)
	return p
}

func (p *cutProxy) Addr() string { return p.ln.Addr().String() }

func (p *cutProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		u, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		if p.cut {
			p.mu.Unlock()
			c.Close()
			u.Close()
			return
		}
		p.conns = append(p.conns, c, u)
		p.mu.Unlock()
		go func() { _, _ = io.Copy(u, c); u.Close() }()
		go func() { _, _ = io.Copy(c, u); c.Close() }()
	}
}

// Cut closes the proxy and every connection through it.
func (p *cutProxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = true
	p.ln.Close()
	for _, c := range p.conns {
		c.Close()
	}
}

// ledgerTimes reads "<what> <attempt> <unix ns>" lines (none while the
// file does not exist).
func ledgerTimes(path string) map[string]time.Time {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	out := map[string]time.Time{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) != 3 {
			continue
		}
		ns, _ := strconv.ParseInt(fs[2], 10, 64)
		out[fs[0]+" "+fs[1]] = time.Unix(0, ns)
	}
	return out
}

// TestExec_CutOffExecutorStopsItsAttempt: an executor cut off from the
// cluster mid-attempt stops the attempt itself once it could not renew
// its lease, before the cluster hands the instance to another executor:
// the two attempts never overlap.
func TestExec_CutOffExecutorStopsItsAttempt(t *testing.T) {
	c := startCluster(t, 3, withArgs("-lease", "2s"))
	cl := c.Client()
	ctx := ctxT(t, 90*time.Second)
	ledger := filepath.Join(t.TempDir(), "ledger")
	// Attempt 1 runs long and says when it starts and stops; attempt 2
	// says when it starts.
	cmd := `echo start $AX_ATTEMPT $(date +%s%N) >> ` + ledger + `
if [ "$AX_ATTEMPT" = 1 ]; then
  trap 'echo stop 1 $(date +%s%N) >> ` + ledger + `; exit 143' TERM
  sleep 60 & wait
fi`
	if _, err := cl.PutTask(ctx, shellTask("fenced", cmd, model.Policy{MaxRetries: 1, RetryInterval: model.Duration(100 * time.Millisecond)})); err != nil {
		t.Fatal(err)
	}
	var proxied []string
	var proxies []*cutProxy
	for _, a := range c.Addrs() {
		p := newCutProxy(t, a)
		proxies = append(proxies, p)
		proxied = append(proxied, p.Addr())
	}
	if _, err := c.StartExecutorAt("cut-off", proxied, "-log-level", "debug"); err != nil {
		t.Fatal(err)
	}
	id := trigger(t, cl, "fenced")
	in := agenttest.WaitState(t, cl, id, 20*time.Second, model.StateRunning)
	if in.Executor != "cut-off" {
		t.Fatalf("running on %q", in.Executor)
	}
	testkit.Eventually(t, 10*time.Second, func() error {
		if _, ok := ledgerTimes(ledger)["start 1"]; !ok {
			return fmt.Errorf("attempt 1 has not started")
		}
		return nil
	})
	if _, err := c.StartExecutor("other"); err != nil {
		t.Fatal(err)
	}
	for _, p := range proxies {
		p.Cut()
	}
	in = agenttest.WaitState(t, cl, id, 40*time.Second, model.StateSuccess)
	if in.Attempts != 2 || in.AttemptList[1].Executor != "other" {
		t.Fatalf("attempts %+v, want attempt 1 on cut-off lost, attempt 2 on other", in.AttemptList)
	}
	times := ledgerTimes(ledger)
	stop1, start2 := times["stop 1"], times["start 2"]
	if stop1.IsZero() || start2.IsZero() {
		t.Fatalf("ledger %v: want attempt 1's stop and attempt 2's start", times)
	}
	if !stop1.Before(start2) {
		t.Fatalf("attempt 1 stopped at %s, after attempt 2 started at %s: they overlapped", stop1.Format(time.RFC3339Nano), start2.Format(time.RFC3339Nano))
	}
	t.Logf("attempt 1 stopped %s before attempt 2 started", start2.Sub(stop1))
}

// TestExec_HeartbeatsFailOverFromFrozenNode: an executor whose first
// server stops answering (SIGSTOP) renews its leases through the others
// within the lease: its attempt runs once, to the end.
func TestExec_HeartbeatsFailOverFromFrozenNode(t *testing.T) {
	c := startCluster(t, 3, withArgs("-lease", "2s"))
	cl := c.Client()
	ctx := ctxT(t, 60*time.Second)
	leader, err := c.Leader(ctx, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var frozen *localcluster.Node
	addrs := []string{}
	for _, n := range c.Nodes {
		if n != leader && frozen == nil {
			frozen = n
			addrs = append([]string{n.HTTPAddr}, addrs...)
			continue
		}
		addrs = append(addrs, n.HTTPAddr)
	}
	// The freeze comes once the attempt runs on the executor: RUNNING is
	// visible from its lease on, while the poll's answer may still be on
	// its way through the node about to freeze (on a busy machine it
	// was, and that lease lapsed unconfirmed: an attempt that never ran).
	started := filepath.Join(t.TempDir(), "started")
	if _, err := cl.PutTask(ctx, shellTask("steady", "echo run >> "+started+"; sleep 6; echo done", model.Policy{MaxRetries: 1})); err != nil {
		t.Fatal(err)
	}
	if _, err := c.StartExecutorAt("frozen-first", addrs); err != nil {
		t.Fatal(err)
	}
	id := trigger(t, cl, "steady")
	testkit.Eventually(t, 20*time.Second, func() error {
		_, err := os.Stat(started)
		return err
	})
	if err := frozen.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = frozen.Signal(syscall.SIGCONT) })
	in := agenttest.WaitState(t, client.New(client.Config{Addrs: without(c.Addrs(), frozen.HTTPAddr)}), id, 30*time.Second, model.StateSuccess)
	// The script ran once, and every attempt but the last never started
	// (a lease that lapsed unconfirmed on the way, under load).
	b, err := os.ReadFile(started)
	if err != nil {
		t.Fatal(err)
	}
	if runs := strings.Count(string(b), "run"); runs != 1 {
		t.Fatalf("the script ran %d times (attempts %+v), want once, renewed through the other nodes", runs, in.AttemptList)
	}
	for _, a := range in.AttemptList[:len(in.AttemptList)-1] {
		if a.Outcome != model.OutcomeInterrupted || !strings.Contains(a.Error, "before executor") {
			t.Fatalf("attempt %d: %s %q, want only the one attempt that ran, renewed through the other nodes", a.Number, a.Outcome, a.Error)
		}
	}
	if in.Attempts > 1 {
		t.Logf("%d attempts before the one that ran lapsed unconfirmed (a busy machine)", in.Attempts-1)
	}
}

func without(addrs []string, drop string) []string {
	var out []string
	for _, a := range addrs {
		if a != drop {
			out = append(out, a)
		}
	}
	return out
}

// TestExec_LeaderlessNodeAnswersExecutorsAtOnce: a node that knows no
// leader answers the executor protocol 503 at once (within lease/8), so
// an executor tries its next server instead of waiting.
func TestExec_LeaderlessNodeAnswersExecutorsAtOnce(t *testing.T) {
	c := startCluster(t, 3, withArgs("-lease", "2s"))
	ctx := ctxT(t, 60*time.Second)
	leader, err := c.Leader(ctx, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var lone *localcluster.Node
	for _, n := range c.Nodes {
		if n != leader && lone == nil {
			lone = n
			continue
		}
		n.Kill()
	}
	waitHealth(ctx, t, lone, 20*time.Second, func(h *member.Health) error {
		if h.Leader != "" {
			return fmt.Errorf("%s still follows %s", lone.ID, h.Leader)
		}
		return nil
	})
	cl := client.New(client.Config{Addrs: []string{lone.HTTPAddr}})
	for _, req := range []client.Request{
		{Method: "POST", Path: "/v1/executors/heartbeat", Body: model.HeartbeatRequest{Executor: "e1", Running: []model.RunningAttempt{{InstanceID: "0000000000100000", Attempt: 1}}}, NoRetry: true},
		{Method: "POST", Path: "/v1/attempts/complete", Body: []model.CompleteItem{{ExecutionID: "0000000000100000-1", Report: model.CompleteRequest{Executor: "e1"}}}, NoRetry: true},
		{Method: "POST", Path: "/v1/executors/poll", Body: model.PollRequest{Executor: "e1", Free: 1, WaitMs: 10_000}, NoRetry: true},
	} {
		start := time.Now()
		err := cl.Do(ctx, req, nil)
		took := time.Since(start)
		if !errorsIsUnavailable(err) || took > time.Second {
			t.Errorf("%s: %v after %s, want 503 unavailable within a second", req.Path, err, took)
		}
	}
}

func errorsIsUnavailable(err error) bool { return errors.Is(err, model.ErrUnavailable) }

// TestExec_KilledExecutorTakesItsProcesses: after kill -9 of an executor,
// its running attempt's processes are gone within seconds (its reaper
// stops them).
func TestExec_KilledExecutorTakesItsProcesses(t *testing.T) {
	c := startCluster(t, 3, withArgs("-lease", "2s"))
	cl := c.Client()
	ctx := ctxT(t, 60*time.Second)
	pidfile := filepath.Join(t.TempDir(), "pid")
	if _, err := cl.PutTask(ctx, shellTask("orphan", "sleep 60 & echo $! > "+pidfile+"; wait", model.Policy{})); err != nil {
		t.Fatal(err)
	}
	e, err := c.StartExecutor("doomed")
	if err != nil {
		t.Fatal(err)
	}
	trigger(t, cl, "orphan")
	var pid int
	testkit.Eventually(t, 20*time.Second, func() error {
		b, err := os.ReadFile(pidfile)
		if err == nil {
			pid, err = strconv.Atoi(strings.TrimSpace(string(b)))
		}
		return err
	})
	if procGone(pid) {
		t.Fatalf("sleep %d is not running", pid)
	}
	e.Kill()
	start := time.Now()
	testkit.Eventually(t, 10*time.Second, func() error {
		if !procGone(pid) {
			return fmt.Errorf("sleep %d still runs %s after its executor was killed", pid, time.Since(start))
		}
		return nil
	})
	t.Logf("sleep gone %s after kill -9 of its executor", time.Since(start))
}

// TestExec_CapabilitiesRouteWork: an sdk worker gets only its handlers'
// instances; a shell task nobody can run waits READY with an event
// saying why (never FAILED), and runs once a shell executor comes.
func TestExec_CapabilitiesRouteWork(t *testing.T) {
	c := startCluster(t, 3, withArgs("-lease", "2s"))
	cl := c.Client()
	ctx := ctxT(t, 90*time.Second)
	for _, task := range []*model.Task{
		shellTask("hello", "echo hello", model.Policy{}),
		{Name: "greet", Trigger: model.Trigger{Type: model.TriggerEvent}, Action: model.Action{Type: model.ActionSDK, Handler: "greet"}},
	} {
		if _, err := cl.PutTask(ctx, task); err != nil {
			t.Fatal(err)
		}
	}
	w, err := worker.New(worker.Config{Servers: c.Addrs(), Name: "sdk-only", PollWait: time.Second,
		Handlers: map[string]worker.Handler{"greet": func(context.Context, worker.Job) error { return nil }}})
	if err != nil {
		t.Fatal(err)
	}
	wctx, stop := context.WithCancel(context.Background())
	wdone := make(chan struct{})
	go func() { defer close(wdone); _ = w.Run(wctx) }()
	t.Cleanup(func() { stop(); <-wdone })

	hello := trigger(t, cl, "hello")
	if in := agenttest.WaitState(t, cl, trigger(t, cl, "greet"), 20*time.Second, model.StateSuccess); in.Executor != "sdk-only" {
		t.Fatalf("greet ran on %q", in.Executor)
	}
	testkit.Eventually(t, 30*time.Second, func() error {
		in, err := cl.GetInstance(ctx, hello, client.Consistent())
		if err != nil {
			return err
		}
		if in.State != model.StateReady || in.Attempts != 0 {
			return fmt.Errorf("hello is %s with %d attempts, want READY with none", in.State, in.Attempts)
		}
		for _, e := range in.Events {
			if e.Type == "no_executor" && strings.Contains(e.Message, "running shell actions") {
				return nil
			}
		}
		return fmt.Errorf("no no_executor event yet: %+v", in.Events)
	})
	if _, err := c.StartExecutor("shell-box", "-http=false"); err != nil {
		t.Fatal(err)
	}
	in := agenttest.WaitState(t, cl, hello, 20*time.Second, model.StateSuccess)
	n := 0
	for _, e := range in.Events {
		if e.Type == "no_executor" {
			n++
		}
	}
	if in.Executor != "shell-box" || n != 1 {
		t.Fatalf("hello ran on %q with %d no_executor events, want shell-box and one", in.Executor, n)
	}
}
