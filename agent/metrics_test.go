package agent

import (
	"bufio"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/ax-scheduler/ax/api"
	"github.com/ax-scheduler/ax/internal/testkit"
	"github.com/ax-scheduler/ax/model"
)

// gather returns an agent's metric families by name.
func gather(t *testing.T, a *Agent) map[string]*dto.MetricFamily {
	t.Helper()
	fams, err := a.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*dto.MetricFamily{}
	for _, f := range fams {
		out[f.GetName()] = f
	}
	return out
}

// series returns the metric of a family whose labels are exactly want,
// or nil.
func series(fams map[string]*dto.MetricFamily, name string, want map[string]string) *dto.Metric {
	f := fams[name]
	if f == nil {
		return nil
	}
	for _, m := range f.GetMetric() {
		got := map[string]string{}
		for _, l := range m.GetLabel() {
			got[l.GetName()] = l.GetValue()
		}
		if len(got) != len(want) {
			continue
		}
		match := true
		for k, v := range want {
			if got[k] != v {
				match = false
			}
		}
		if match {
			return m
		}
	}
	return nil
}

// labelValues lists the values a family has for one label.
func labelValues(fams map[string]*dto.MetricFamily, name, label string) []string {
	var out []string
	for _, m := range fams[name].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == label {
				out = append(out, l.GetValue())
			}
		}
	}
	sort.Strings(out)
	return out
}

func shellTask(name string, labels map[string]string, notify ...string) *model.Task {
	return &model.Task{Name: name, Trigger: model.Trigger{Type: model.TriggerInterval, Every: model.Duration(time.Hour)},
		Action: model.Action{Type: model.ActionShell, Command: "true"}, Policy: model.Policy{ExecutorLabels: labels, Notify: notify}}
}

// waitState waits until an instance is in state on a.
func waitState(t *testing.T, a *Agent, id, state string) {
	t.Helper()
	testkit.Until(t, 30*time.Second, "instance "+id+" "+state, func() bool {
		in, err := a.tasks.GetInstance(context.Background(), id)
		return err == nil && in.State == state
	})
}

// TestAgent_OpsMetrics: after delayed submissions fire late and run to
// success on a three-node cluster with embedded executors, the leader
// has per-task fire lateness, dispatch latency and attempt duration
// (the third task folded into task="other" by the cap of 2), every node
// has the tasks' last success and expected interval, and the leader
// shows READY depth by route, executor slots and peer contact. A
// failure whose webhook answers 500 counts a failed notification. Then
// every metric name the shipped rules and dashboard use must be in some
// node's /metrics output, so they cannot drift from the code.
func TestAgent_OpsMetrics(t *testing.T) {
	tc := startCluster(t, 3, func(cfg *Config) {
		cfg.Executor, cfg.ExecutorCapacity, cfg.MetricsMaxTasks = true, 4, 2
	})
	ctx := context.Background()
	c := api.Caller{Actor: "tester"}
	l := tc.leader()
	start := time.Now()
	for _, name := range []string{"a", "b", "c"} {
		if _, err := l.tasks.PutTask(ctx, c, shellTask(name, nil), api.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	at := model.Time{Time: time.Now().Add(-5 * time.Second).Truncate(time.Millisecond)}
	var ids []string
	for _, name := range []string{"a", "b", "c"} {
		res, err := l.tasks.Submit(ctx, c, name, []model.SubmitRequest{{At: &at}})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, res.Instances[0].ID)
	}
	for _, id := range ids {
		waitState(t, l, id, model.StateSuccess)
	}
	// A task no executor serves stays READY.
	if _, err := l.tasks.PutTask(ctx, c, shellTask("stuck", map[string]string{"region": "nowhere", "disk": "ssd"}), api.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.tasks.Trigger(ctx, c, "stuck", model.TriggerRequest{}); err != nil {
		t.Fatal(err)
	}
	// A failure whose webhook fails for good (a 404 is not retried).
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNotFound) }))
	defer hook.Close()
	failing := shellTask("failing", nil, hook.URL)
	failing.Action.Command = "exit 3"
	if _, err := l.tasks.PutTask(ctx, c, failing, api.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	in, err := l.tasks.Trigger(ctx, c, "failing", model.TriggerRequest{})
	if err != nil {
		t.Fatal(err)
	}
	waitState(t, l, in.ID, model.StateFailed)

	testkit.Until(t, 20*time.Second, "a failed webhook notification to be counted", func() bool {
		m := series(gather(t, l), "ax_notifications_total", map[string]string{"channel_type": "webhook", "result": "failure"})
		return m != nil && m.GetCounter().GetValue() >= 1 // the loop tries the transition again
	})
	fams := gather(t, l)
	if got := labelValues(fams, "ax_fire_lateness_seconds", "task"); strings.Join(got, ",") != "a,b,other" {
		t.Errorf("fire lateness task labels %v, want a, b and other (cap 2)", got)
	}
	for _, task := range []string{"a", "b", "other"} {
		h := series(fams, "ax_fire_lateness_seconds", map[string]string{"task": task}).GetHistogram()
		if h.GetSampleCount() != 1 || h.GetSampleSum() < 4.9 || h.GetSampleSum() > 60 {
			t.Errorf("task %s: fire lateness count %d sum %.3fs, want one of about 5s", task, h.GetSampleCount(), h.GetSampleSum())
		}
		want := uint64(1)
		if task == "other" {
			want = 2 // c and failing
		}
		if d := series(fams, "ax_dispatch_latency_seconds", map[string]string{"task": task}); d.GetHistogram().GetSampleCount() != want {
			t.Errorf("task %s: dispatch latency %v, want %d observations", task, d, want)
		}
		if d := series(fams, "ax_attempt_duration_seconds", map[string]string{"task": task, "outcome": "success"}); d.GetHistogram().GetSampleCount() != 1 {
			t.Errorf("task %s: attempt duration %v, want one success", task, d)
		}
	}
	if d := series(fams, "ax_attempt_duration_seconds", map[string]string{"task": "other", "outcome": "failure"}); d.GetHistogram().GetSampleCount() != 1 {
		t.Errorf("failing task: attempt duration %v, want one failure under other", d)
	}
	if m := series(fams, "ax_ready_instances", map[string]string{"action": "shell", "handler": "", "executor_labels": "disk=ssd,region=nowhere"}); m.GetGauge().GetValue() != 1 {
		t.Errorf("READY depth of the unserved route %v, want 1; have %v", m, fams["ax_ready_instances"])
	}
	if got := labelValues(fams, "ax_executor_slots", "executor"); len(got) != 6 {
		t.Errorf("executor slots for %v, want busy and free for n1, n2, n3", got)
	}
	if m := series(fams, "ax_executor_slots", map[string]string{"executor": "n1", "state": "busy"}); m == nil || m.GetGauge().GetValue() != 0 {
		t.Errorf("n1 busy slots %v, want 0", m)
	}
	for _, p := range []*Agent{tc.follower(l), tc.follower2(l, tc.follower(l))} {
		if m := series(fams, "ax_raft_peer_last_contact_seconds", map[string]string{"peer": p.cfg.NodeID}); m == nil || m.GetGauge().GetValue() != 0 {
			t.Errorf("peer %s contact %v, want 0 (heartbeats succeed)", p.cfg.NodeID, m)
		}
	}
	if m := series(fams, "ax_alerts_total", map[string]string{"event": "instance_failed"}); m.GetCounter().GetValue() != 1 {
		t.Errorf("alerts %v, want 1", m)
	}
	for _, a := range tc.agents {
		fams := gather(t, a)
		for _, task := range []string{"a", "b", "c"} {
			m := series(fams, "ax_task_last_success_timestamp_seconds", map[string]string{"task": task})
			if v := m.GetGauge().GetValue(); v < float64(start.Unix()) || v > float64(time.Now().Unix()+1) {
				t.Errorf("%s: task %s last success %v, want between the start and now", a.cfg.NodeID, task, m)
			}
			if m := series(fams, "ax_task_expected_interval_seconds", map[string]string{"task": task}); m.GetGauge().GetValue() != 3600 {
				t.Errorf("%s: task %s expected interval %v, want 3600", a.cfg.NodeID, task, m)
			}
		}
		if m := series(fams, "ax_task_last_success_timestamp_seconds", map[string]string{"task": "failing"}); m != nil {
			t.Errorf("%s: a task that never succeeded has a last success %v", a.cfg.NodeID, m)
		}
		if a != l && fams["ax_fire_lateness_seconds"] != nil {
			t.Errorf("follower %s observes fire lateness: %v", a.cfg.NodeID, fams["ax_fire_lateness_seconds"])
		}
	}

	// Pausing drops the expected interval; deleting drops the last success.
	if _, err := l.tasks.PauseTask(ctx, c, "a"); err != nil {
		t.Fatal(err)
	}
	if _, err := l.tasks.DeleteTask(ctx, c, "b"); err != nil {
		t.Fatal(err)
	}
	testkit.Until(t, 10*time.Second, "the paused and deleted tasks to leave the gauges", func() bool {
		for _, a := range tc.agents {
			fams := gather(t, a)
			if series(fams, "ax_task_expected_interval_seconds", map[string]string{"task": "a"}) != nil ||
				series(fams, "ax_task_last_success_timestamp_seconds", map[string]string{"task": "a"}) == nil ||
				series(fams, "ax_task_last_success_timestamp_seconds", map[string]string{"task": "b"}) != nil {
				return false
			}
		}
		return true
	})

	checkShippedMetricNames(t, tc.agents)
}

// checkShippedMetricNames fails for any ax_ metric the shipped rules or
// dashboard use that no agent's /metrics output has.
func checkShippedMetricNames(t *testing.T, agents []*Agent) {
	t.Helper()
	have := map[string]bool{}
	for _, a := range agents {
		resp, err := http.Get("http://" + a.HTTPAddr() + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			if f := strings.Fields(sc.Text()); len(f) >= 3 && f[0] == "#" && f[1] == "TYPE" {
				have[f[2]] = true
			}
		}
		resp.Body.Close()
	}
	name := regexp.MustCompile(`\bax_[a-z0-9_]*[a-z0-9]`)
	for _, path := range []string{"../deploy/prometheus/ax-rules.yml", "../deploy/prometheus/ax-rules_test.yml", "../deploy/grafana/ax.json"} {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		used := map[string]bool{}
		for _, n := range name.FindAllString(string(b), -1) {
			for _, suffix := range []string{"_bucket", "_sum", "_count"} {
				if base := strings.TrimSuffix(n, suffix); base != n && have[base] {
					n = base
				}
			}
			used[n] = true
		}
		if len(used) < 5 {
			t.Errorf("%s: found only %d metric names; is the pattern right?", path, len(used))
		}
		for n := range used {
			if !have[n] {
				t.Errorf("%s uses %s, which no agent's /metrics has", path, n)
			}
		}
	}
}

// TestAgent_LastSuccessAfterRestart: a node that restarts reads its
// tasks' last successes from the state machine (the observer saw them
// before the restart), so the gauge is right on whichever node leads
// before any task succeeds again.
func TestAgent_LastSuccessAfterRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("in-process agent skipped in -short mode")
	}
	dir := t.TempDir()
	raftAddr := testkit.FreeAddr(t)
	start := func() *Agent {
		a := newAgent(t, Config{NodeID: "n1", DataDir: dir, HTTPAddr: "127.0.0.1:0", RaftAddr: raftAddr, Executor: true,
			Logger: testkit.Logger(t, "")})
		testkit.Until(t, 20*time.Second, "leadership", func() bool { return a.exec.Dispatcher() != nil })
		return a
	}
	ctx := context.Background()
	c := api.Caller{Actor: "tester"}
	a := start()
	if _, err := a.tasks.PutTask(ctx, c, shellTask("job", nil), api.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	in, err := a.tasks.Trigger(ctx, c, "job", model.TriggerRequest{})
	if err != nil {
		t.Fatal(err)
	}
	waitState(t, a, in.ID, model.StateSuccess)
	done, err := a.tasks.GetInstance(ctx, in.ID)
	if err != nil {
		t.Fatal(err)
	}
	want := float64(done.FinishedAt.UnixMilli()) / 1000
	check := func(a *Agent, when string) {
		t.Helper()
		m := series(gather(t, a), "ax_task_last_success_timestamp_seconds", map[string]string{"task": "job"})
		if got := m.GetGauge().GetValue(); got != want {
			t.Fatalf("%s: last success %v, want %v", when, m, want)
		}
	}
	check(a, "before the restart")
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := a.Shutdown(sctx); err != nil {
		t.Fatal(err)
	}
	check(start(), "after the restart")
}
