package execution

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/client"
	"github.com/ax-scheduler/ax/internal/agenttest"
	"github.com/ax-scheduler/ax/internal/clustertest"
	"github.com/ax-scheduler/ax/internal/localcluster"
	"github.com/ax-scheduler/ax/internal/testkit"
	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/model/member"
)

// execCluster starts 3 agents (no embedded executor, 2s leases) and two
// `ax executor` processes.
func execCluster(t *testing.T) (*localcluster.Cluster, []*localcluster.Node) {
	t.Helper()
	c := startCluster(t, 3, withArgs("-lease", "2s"))
	var execs []*localcluster.Node
	for _, name := range []string{"exec-a", "exec-b"} {
		e, err := c.StartExecutor(name, "-capacity", "8", "-log-level", "debug")
		if err != nil {
			t.Fatal(err)
		}
		execs = append(execs, e)
	}
	return c, execs
}

func TestExec_TriggersRunExactlyOnce(t *testing.T) {
	c, _ := execCluster(t)
	cl := c.Client()
	ledger := filepath.Join(t.TempDir(), "ledger")
	task := shellTask("ledger", "echo $AX_EXECUTION_ID >> "+ledger, model.Policy{MaxConcurrency: 20})
	if _, err := cl.PutTask(ctxT(t, 10*time.Second), task); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for i := 0; i < 20; i++ {
		ids = append(ids, trigger(t, cl, "ledger"))
	}
	for _, id := range ids {
		agenttest.WaitState(t, cl, id, 30*time.Second, model.StateSuccess)
	}
	data, _ := os.ReadFile(ledger)
	lines := strings.Fields(string(data))
	sort.Strings(lines)
	var want []string
	for _, id := range ids {
		want = append(want, id+"-1")
	}
	sort.Strings(want)
	if strings.Join(lines, ",") != strings.Join(want, ",") {
		t.Fatalf("ledger has %d runs %v, want exactly one per instance %v", len(lines), lines, want)
	}
}

func TestExec_RetriesThenFails(t *testing.T) {
	c, _ := execCluster(t)
	cl := c.Client()
	task := shellTask("exit3", "echo try $AX_ATTEMPT; exit 3", model.Policy{MaxRetries: 2, RetryInterval: model.Duration(200 * time.Millisecond)})
	if _, err := cl.PutTask(ctxT(t, 10*time.Second), task); err != nil {
		t.Fatal(err)
	}
	id := trigger(t, cl, "exit3")
	in := agenttest.WaitState(t, cl, id, 30*time.Second, model.StateFailed)
	if in.Attempts != 3 || len(in.AttemptList) != 3 {
		t.Fatalf("got %d attempts, want 3", in.Attempts)
	}
	for _, a := range in.AttemptList {
		if a.ExitCode == nil || *a.ExitCode != 3 || !strings.Contains(a.Output, "try "+strconv.Itoa(a.Number)) {
			t.Fatalf("attempt %+v, want exit 3 with its output", a)
		}
	}
	l, err := cl.InstanceLog(ctxT(t, 5*time.Second), id, 0)
	if err != nil || !strings.Contains(l.Output, "try 3") {
		t.Fatalf("log: %+v %v", l, err)
	}
}

func TestExec_TimeoutKillsProcessGroup(t *testing.T) {
	c, _ := execCluster(t)
	cl := c.Client()
	pidfile := filepath.Join(t.TempDir(), "child.pid")
	task := shellTask("slow", "sleep 300 & echo $! > "+pidfile+"; sleep 300", model.Policy{Timeout: model.Timeout(time.Second)})
	task.Policy.MaxRetries = 0
	if _, err := cl.PutTask(ctxT(t, 10*time.Second), task); err != nil {
		t.Fatal(err)
	}
	id := trigger(t, cl, "slow")
	in := agenttest.WaitState(t, cl, id, 30*time.Second, model.StateFailed)
	if in.AttemptList[0].Outcome != model.OutcomeTimeout {
		t.Fatalf("outcome %q, want timeout", in.AttemptList[0].Outcome)
	}
	data, err := os.ReadFile(pidfile)
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(data)))
	testkit.Eventually(t, 10*time.Second, func() error {
		if err := syscall.Kill(pid, 0); err == nil {
			return fmt.Errorf("background child %d still alive", pid)
		}
		return nil
	})
}

func TestExec_ExecutorKilledMidRunIsRetriedElsewhere(t *testing.T) {
	c, execs := execCluster(t)
	cl := c.Client()
	task := shellTask("long", "sleep 3; echo done on $AX_EXECUTOR", model.Policy{MaxRetries: 1, RetryInterval: model.Duration(100 * time.Millisecond)})
	if _, err := cl.PutTask(ctxT(t, 10*time.Second), task); err != nil {
		t.Fatal(err)
	}
	id := trigger(t, cl, "long")
	in := agenttest.WaitState(t, cl, id, 20*time.Second, model.StateRunning)
	var victim *localcluster.Node
	for _, e := range execs {
		if e.ID == in.Executor {
			victim = e
		}
	}
	if victim == nil {
		t.Fatalf("running on unknown executor %q", in.Executor)
	}
	victim.Kill()
	in = agenttest.WaitState(t, cl, id, 40*time.Second, model.StateSuccess)
	// Lost once its executor confirmed it with a heartbeat, interrupted
	// if it was killed before (fsm's lease tests tell the two apart).
	if first := in.AttemptList[0].Outcome; in.Attempts != 2 || first != model.OutcomeLost && first != model.OutcomeInterrupted ||
		in.AttemptList[1].Executor == victim.ID {
		t.Fatalf("attempts %+v, want a lost (or interrupted) attempt on %s then a success elsewhere", in.AttemptList, victim.ID)
	}
}

// TestExec_LeaderKilledMidRunRecordsOnce (on both implementations): an
// attempt running through a leader failover that is shorter than the
// lease (here the default 10s; with a lease shorter than an election the
// executor rightly stops it) is recorded once.
func TestExec_LeaderKilledMidRunRecordsOnce(t *testing.T) {
	clustertest.Each(t, both, 3, func(t *testing.T, c clustertest.Cluster) {
		if _, err := c.StartExecutor("exec-a"); err != nil {
			t.Fatal(err)
		}
		cl := c.Client()
		task := shellTask("through-failover", "sleep 4; echo finished", model.Policy{MaxRetries: 2})
		if _, err := cl.PutTask(ctxT(t, 10*time.Second), task); err != nil {
			t.Fatal(err)
		}
		id := trigger(t, cl, "through-failover")
		agenttest.WaitState(t, cl, id, 20*time.Second, model.StateRunning)
		leader, err := c.Leader(context.Background(), 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		leader.Kill()
		in := agenttest.WaitState(t, cl, id, 40*time.Second, model.StateSuccess)
		if in.Attempts != 1 || len(in.AttemptList) != 1 || in.AttemptList[0].Outcome != model.OutcomeSuccess {
			t.Fatalf("attempts %+v, want the one attempt recorded once as success", in.AttemptList)
		}
	})
}

func TestExec_HTTPActionRetriesAndClassifies(t *testing.T) {
	c, _ := execCluster(t)
	cl := c.Client()
	var hits atomic.Int32
	var ids []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/missing" {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		ids = append(ids, r.Header.Get("X-AX-Request-ID")+" "+r.Header.Get("X-AX-Attempt"))
		if hits.Add(1) == 1 {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		fmt.Fprint(w, "ok")
	}))
	defer srv.Close()
	ctx := ctxT(t, 10*time.Second)
	flaky := &model.Task{Name: "hook", Trigger: model.Trigger{Type: model.TriggerEvent},
		Action: model.Action{Type: model.ActionHTTP, Method: "POST", URL: srv.URL + "/hook", Body: `{"at":"{{.ScheduledAt}}"}`},
		Policy: model.Policy{MaxRetries: 2, RetryInterval: model.Duration(100 * time.Millisecond)}}
	missing := &model.Task{Name: "missing", Trigger: model.Trigger{Type: model.TriggerEvent},
		Action: model.Action{Type: model.ActionHTTP, URL: srv.URL + "/missing"}, Policy: model.Policy{MaxRetries: 2}}
	for _, task := range []*model.Task{flaky, missing} {
		if _, err := cl.PutTask(ctx, task); err != nil {
			t.Fatal(err)
		}
	}
	id := trigger(t, cl, "hook")
	in := agenttest.WaitState(t, cl, id, 30*time.Second, model.StateSuccess)
	if in.Attempts != 2 || in.AttemptList[0].HTTPStatus != 500 {
		t.Fatalf("attempts %+v, want a 500 then a success", in.AttemptList)
	}
	if len(ids) != 2 || ids[0] != id+" 1" || ids[1] != id+" 2" {
		t.Fatalf("X-AX-Request-ID and X-AX-Attempt headers %v, want the instance id (stable across retries) and attempts 1, 2", ids)
	}
	id = trigger(t, cl, "missing")
	in = agenttest.WaitState(t, cl, id, 30*time.Second, model.StateFailed)
	if in.Attempts != 1 || in.AttemptList[0].HTTPStatus != 404 {
		t.Fatalf("404: attempts %+v, want one, not retried", in.AttemptList)
	}
}

func TestExec_OverlapSkipAndQueueAndTerminate(t *testing.T) {
	c, _ := execCluster(t)
	cl := c.Client()
	ctx := ctxT(t, 60*time.Second)
	skip := shellTask("skipper", "sleep 30", model.Policy{Overlap: "skip"})
	queue := shellTask("queuer", "sleep 1", model.Policy{Overlap: "queue"})
	for _, task := range []*model.Task{skip, queue} {
		if _, err := cl.PutTask(ctx, task); err != nil {
			t.Fatal(err)
		}
	}
	first := trigger(t, cl, "skipper")
	agenttest.WaitState(t, cl, first, 20*time.Second, model.StateRunning)
	second := trigger(t, cl, "skipper")
	agenttest.WaitState(t, cl, second, 5*time.Second, model.StateSkipped)
	// Terminate kills the running attempt's process group.
	if _, err := cl.Decide(ctx, first, client.Terminate, "stop it"); err != nil {
		t.Fatal(err)
	}
	agenttest.WaitState(t, cl, first, 5*time.Second, model.StateTerminated)

	var qs []string
	for i := 0; i < 3; i++ {
		qs = append(qs, trigger(t, cl, "queuer"))
	}
	for _, id := range qs {
		agenttest.WaitState(t, cl, id, 30*time.Second, model.StateSuccess)
	}
	// Queued instances ran one at a time, in order.
	var prevEnd time.Time
	for _, id := range qs {
		in, _ := cl.GetInstance(ctx, id, client.Consistent())
		if in.StartedAt.Before(prevEnd) {
			t.Fatalf("instance %s started %s before the previous ended %s", id, in.StartedAt, prevEnd)
		}
		prevEnd = in.FinishedAt.Time
	}
}

func TestExec_SDKHandlers(t *testing.T) {
	c := startCluster(t, 3, withArgs("-lease", "2s"))
	dir := t.TempDir()
	bin := filepath.Join(dir, "sdk-worker")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/ax-scheduler/ax/examples/sdk-worker").CombinedOutput(); err != nil {
		t.Fatalf("build example: %v\n%s", err, out)
	}
	ledger := filepath.Join(dir, "ledger")
	worker := exec.Command(bin, "-server", strings.Join(c.Addrs(), ","), "-ledger", ledger)
	worker.Stdout, worker.Stderr = os.Stderr, os.Stderr
	if err := worker.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { worker.Process.Kill(); worker.Wait() })
	cl := c.Client()
	ctx := ctxT(t, 60*time.Second)
	for _, task := range []*model.Task{
		{Name: "greet", Trigger: model.Trigger{Type: model.TriggerEvent}, Action: model.Action{Type: model.ActionSDK, Handler: "greet"}, Policy: model.Policy{MaxConcurrency: 5}},
		{Name: "charge", Trigger: model.Trigger{Type: model.TriggerEvent}, Action: model.Action{Type: model.ActionSDK, Handler: "charge"}, Policy: model.Policy{MaxRetries: 3}},
	} {
		if _, err := cl.PutTask(ctx, task); err != nil {
			t.Fatal(err)
		}
	}
	var ids []string
	for i := 0; i < 5; i++ {
		s, err := cl.Trigger(ctx, "greet", model.TriggerRequest{Params: map[string]string{"who": fmt.Sprint("w", i)}})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, s.ID)
	}
	for i, id := range ids {
		agenttest.WaitState(t, cl, id, 30*time.Second, model.StateSuccess)
		// What the handler wrote to worker.Output is the instance's log.
		l, err := cl.InstanceLog(ctx, id, 0)
		if want := fmt.Sprintf("hello, w%d (execution %s-1)\n", i, id); err != nil || l.Output != want {
			t.Fatalf("log of %s: %+v, %v; want %q", id, l, err, want)
		}
	}
	data, _ := os.ReadFile(ledger)
	if n := len(strings.Fields(string(data))); n != 5 {
		t.Fatalf("ledger has %d runs, want 5", n)
	}
	// A permanent handler error is not retried.
	s, err := cl.Submit(ctx, "charge", model.SubmitRequest{Payload: []byte(`{"amount":0}`)})
	if err != nil {
		t.Fatal(err)
	}
	in := agenttest.WaitState(t, cl, s.ID, 30*time.Second, model.StateFailed)
	if in.Attempts != 1 {
		t.Fatalf("permanent error retried: %d attempts", in.Attempts)
	}
	// The failed attempt's log is kept too.
	l, err := cl.InstanceLog(ctx, s.ID, 0)
	if want := "charging payload {\"amount\":0}\nrefusing: the amount must be a positive integer\n"; err != nil || l.Output != want {
		t.Fatalf("log of the failed charge: %+v, %v; want %q", l, err, want)
	}
}

func TestExec_LabelRouting(t *testing.T) {
	c := startCluster(t, 3)
	if _, err := c.StartExecutor("plain"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.StartExecutor("gpu-box", "-labels", "pool=gpu"); err != nil {
		t.Fatal(err)
	}
	cl := c.Client()
	task := shellTask("train", "echo training", model.Policy{MaxConcurrency: 3, ExecutorLabels: map[string]string{"pool": "gpu"}})
	if _, err := cl.PutTask(ctxT(t, 10*time.Second), task); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		in := agenttest.WaitState(t, cl, trigger(t, cl, "train"), 30*time.Second, model.StateSuccess)
		if in.Executor != "gpu-box" {
			t.Fatalf("ran on %q, want gpu-box (the only executor with pool=gpu)", in.Executor)
		}
	}
	// GET /v1/executors lists both executors with their labels (a
	// follower asks the leader); the leader's /healthz counts them.
	ctx := ctxT(t, 30*time.Second)
	leader, err := c.Leader(ctx, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	waitHealth(ctx, t, leader, 10*time.Second, func(h *member.Health) error {
		if h.Executors != 2 {
			return fmt.Errorf("healthz counts %d executors, want 2", h.Executors)
		}
		return nil
	})
	testkit.Eventually(t, 10*time.Second, func() error {
		el, err := c.Client().Executors(ctx)
		if err != nil {
			return err
		}
		got := map[string]string{}
		for _, e := range el.Executors {
			got[e.Name] = e.Labels["pool"]
			if e.LastSeen.IsZero() || e.Host == "" {
				return fmt.Errorf("executor %+v: no host or last-seen time", e)
			}
		}
		if len(got) != 2 || got["gpu-box"] != "gpu" || got["plain"] != "" {
			return fmt.Errorf("executors %+v, want plain and gpu-box (pool=gpu)", el.Executors)
		}
		return nil
	})
}

// TestExec_Retention: finished instances are deleted once past their
// task's retention, or beyond its history limits (keepSuccessful,
// keepFailed).
func TestExec_Retention(t *testing.T) {
	c := startCluster(t, 3, withArgs("-retention-interval", "300ms"))
	if _, err := c.StartExecutor("worker"); err != nil {
		t.Fatal(err)
	}
	cl := c.Client()
	ctx := ctxT(t, 60*time.Second)
	if _, err := cl.PutTask(ctx, shellTask("short-lived", "true", model.Policy{Retention: model.Duration(time.Second)})); err != nil {
		t.Fatal(err)
	}
	id := trigger(t, cl, "short-lived")
	agenttest.WaitState(t, cl, id, 30*time.Second, model.StateSuccess)
	testkit.Eventually(t, 20*time.Second, func() error {
		_, err := cl.GetInstance(ctx, id, client.Consistent())
		if errors.Is(err, model.ErrNotFound) {
			return nil
		}
		return fmt.Errorf("instance still there (%v)", err)
	})

	// History limits: the newest 2 successes and the newest failure
	// stay, whatever the time-based retention (the default: 7 days).
	if _, err := cl.PutTask(ctx, shellTask("kept", `exit "$AX_PARAM_CODE"`, model.Policy{KeepSuccessful: 2, KeepFailed: 1})); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, code := range []string{"0", "1", "0", "0", "1", "0"} {
		s, err := cl.Trigger(ctx, "kept", model.TriggerRequest{Params: map[string]string{"code": code}})
		if err != nil {
			t.Fatal(err)
		}
		// One at a time, so that finish order is trigger order.
		agenttest.WaitState(t, cl, s.ID, 30*time.Second, map[string]string{"0": model.StateSuccess, "1": model.StateFailed}[code])
		ids = append(ids, s.ID)
	}
	want := []string{ids[3], ids[4], ids[5]} // successes 4 and 6, failure 5
	testkit.Eventually(t, 20*time.Second, func() error {
		l, err := cl.ListInstances(ctx, model.InstanceFilter{Task: "kept"})
		if err != nil {
			return err
		}
		var got []string
		for _, in := range l.Instances {
			got = append(got, in.ID)
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			return fmt.Errorf("instances %v, want %v", got, want)
		}
		return nil
	})
}
