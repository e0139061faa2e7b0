package journeys

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/client"
	"github.com/ax-scheduler/ax/internal/agenttest"
	"github.com/ax-scheduler/ax/internal/localcluster"
	"github.com/ax-scheduler/ax/internal/testkit"
	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/model/live"
	"github.com/ax-scheduler/ax/model/member"
	"github.com/ax-scheduler/ax/worker"
)

// journeys are the matrix's rows (journeymatrix_test.go): what a user
// does, written once against a deployment. Each works in its own names
// (c.n) and routes its work to the deployment's runners by label, so the
// journeys of a deployment can run side by side.
var journeys = []journey{
	{name: "sigterm-executor", alone: true, run: journeySIGTERMExecutor},
	{name: "sigterm-agent", alone: true, run: journeySIGTERMAgent},
	{name: "readme-tour", run: journeyTour},
	{name: "approval", run: journeyApproval},
	{name: "sdk-worker", run: journeySDK},
	{name: "sdk-worker-example", run: journeySDKExample},
	{name: "trigger-wait-log", run: journeyTriggerWaitLog},
	{name: "backfill-depends-on", run: journeyBackfill},
	{name: "rerun-depends-on", run: journeyRerun},
	{name: "failure-alert", run: journeyFailureAlert},
	{name: "terminate-cancel", run: journeyTerminateCancel},
	{name: "shards-pool", run: journeyShardsPool},
	{name: "results", run: journeyResults},
}

// put defines tasks as the user.
func (c *cell) put(t *testing.T, tasks ...*model.Task) {
	t.Helper()
	for _, task := range tasks {
		if _, err := c.d.User().PutTask(c.ctx, task); err != nil {
			t.Fatalf("put task %s: %v", task.Name, err)
		}
	}
}

// journeyTour is the README's tour, with the ax CLI: a first task, its
// versions, a cron task that fires, triggers with parameters and -wait
// -log, a keyed delayed submission, a backfill, events, status, /healthz
// and /metrics.
func journeyTour(c *cell) {
	d := c.d
	report, tick := c.n("daily_report"), c.n("tick")
	file := filepath.Join(c.t.TempDir(), "daily_report.json")
	c.step("first-task", func(t *testing.T) {
		def := fmt.Sprintf(`{"name": %q,
 "trigger": {"type": "cron", "expression": "0 2 * * *", "timezone": "Asia/Shanghai"},
 "action": {"type": "shell", "command": "echo report for {{.Yesterday}} date=$AX_PARAM_DATE"},
 "policy": {"maxRetries": 2, "retryInterval": "5m", "timeout": "20m"},
 "labels": {"team": "data"}}`, report)
		if err := os.WriteFile(file, []byte(def), 0o644); err != nil {
			t.Fatal(err)
		}
		if r := d.ax(t, 0, "task", "apply", "-f", file); !strings.Contains(r.stdout, report+" created (version 1)") {
			t.Fatalf("ax task apply printed %q", r.stdout)
		}
		if r := d.ax(t, 0, "task", "get", report); !strings.Contains(r.stdout, "Asia/Shanghai") {
			t.Fatalf("ax task get printed:\n%s", r.stdout)
		}
		var got model.Task
		if err := unmarshalYAML(d.ax(t, 0, "task", "get", report, "-o", "yaml").stdout, &got); err != nil ||
			got.Trigger.Expression != "0 2 * * *" || got.Policy.MaxRetries != 2 || len(got.NextFireTimes) == 0 {
			t.Fatalf("ax task get -o yaml: %+v, %v", got, err)
		}
		if r := d.ax(t, 0, "task", "list", "-label", "team=data"); !strings.Contains(r.stdout, report) {
			t.Fatalf("ax task list -label team=data printed:\n%s", r.stdout)
		}
	})
	c.step("versions", func(t *testing.T) {
		d.ax(t, 0, "task", "pause", report)
		r := d.ax(t, 0, "task", "history", report)
		if !strings.Contains(r.stdout, "create") || !strings.Contains(r.stdout, "pause") {
			t.Fatalf("ax task history printed:\n%s", r.stdout)
		}
		if d.user != "" && !strings.Contains(r.stdout, "deployer (for ") {
			t.Fatalf("ax task history does not name the token:\n%s", r.stdout)
		}
		if r := d.ax(t, 0, "task", "apply", "-f", file); !strings.Contains(r.stdout, report+" unchanged (version 2)") {
			t.Fatalf("re-applying printed %q, want unchanged at version 2", r.stdout)
		}
		if tk, err := d.User().GetTask(c.ctx, report); err != nil || !tk.Paused {
			t.Fatalf("after re-applying: %+v, %v; want it still paused", tk, err)
		}
	})
	var first string
	c.step("cron-fires", func(t *testing.T) {
		def := fmt.Sprintf(`{"name":%q,"trigger":{"type":"cron","expression":"*/2 * * * * *"},
       "action":{"type":"shell","command":"echo tick {{.ScheduledAt}} $AX_EXECUTION_ID"},
       "policy":{"catchup":"all"}}`, tick)
		if r := axStdin(t, d.CLIEnv(), def, "task", "apply", "-f", "-").want(t, 0, "task", "apply", "-f", "-"); !strings.Contains(r.stdout, tick+" created") {
			t.Fatalf("ax task apply -f - printed %q", r.stdout)
		}
		testkit.Eventually(t, 30*time.Second, func() error {
			var l model.InstanceList
			if err := json.Unmarshal([]byte(d.ax(t, 0, "instance", "list", "-task", tick, "-o", "json").stdout), &l); err != nil {
				return err
			}
			for _, in := range l.Instances {
				if in.State == model.StateSuccess && in.Source == model.SourceCron {
					first = in.ID
					return nil
				}
			}
			return fmt.Errorf("no SUCCESS of %s yet: %d instances", tick, len(l.Instances))
		})
		if r := d.ax(t, 0, "instance", "get", first); !regexp.MustCompile(`State:\s+SUCCESS`).MatchString(r.stdout) {
			t.Fatalf("ax instance get printed:\n%s", r.stdout)
		}
		for _, args := range [][]string{{"instance", "log", first}, {"instance", "log", "-f", first}} {
			if r := d.ax(t, 0, args...); !strings.Contains(r.stdout, "tick ") || !strings.Contains(r.stdout, first+"-1") {
				t.Fatalf("ax %s printed %q", strings.Join(args, " "), r.stdout)
			}
		}
	})
	c.step("trigger-with-params", func(t *testing.T) {
		r := d.ax(t, 0, "trigger", report, "-p", "date=2026-11-29")
		in := agenttest.WaitState(t, d.User(), strings.Fields(r.stdout)[0], 30*time.Second, model.StateSuccess)
		if !strings.Contains(in.AttemptList[0].Output, "date=2026-11-29") {
			t.Fatalf("output %q, want the parameter", in.AttemptList[0].Output)
		}
		r = d.ax(t, 0, "trigger", tick, "-wait", "-log")
		if !strings.Contains(r.stdout, "tick ") || !strings.Contains(r.stdout, " SUCCESS (took ") {
			t.Fatalf("ax trigger -wait -log printed:\n%s", r.stdout)
		}
	})
	c.step("submit-and-backfill", func(t *testing.T) {
		args := []string{"submit", report, "-payload", `{"order":42}`, "-delay", "30m", "-key", "order-42"}
		r := d.ax(t, 0, args...)
		again := d.ax(t, 0, args...)
		if id := strings.Fields(r.stdout)[0]; !strings.Contains(r.stdout, " SCHEDULED due ") || !strings.HasPrefix(again.stdout, id+" SCHEDULED") ||
			!strings.Contains(again.stdout, "(existing)") {
			t.Fatalf("ax submit printed %q, then %q: want the same SCHEDULED instance, existing", r.stdout, again.stdout)
		}
		day := time.Now().UTC().AddDate(0, 0, -3).Format(time.DateOnly)
		to := time.Now().UTC().AddDate(0, 0, -2).Format(time.DateOnly)
		if r := d.ax(t, 0, "backfill", report, "-from", day, "-to", to); !strings.Contains(r.stdout, "1 created, 0 already had an instance") {
			t.Fatalf("ax backfill printed %q, want one fire time (02:00 Asia/Shanghai of one day)", r.stdout)
		}
	})
	c.step("status", func(t *testing.T) {
		d.ax(t, 0, "task", "events", tick)
		// A leader, not necessarily d.leaderID: on a busy machine an
		// election may move it during the journey.
		if r := d.ax(t, 0, "status"); !regexp.MustCompile(`Cluster: leader n\d+ at `).MatchString(r.stdout) {
			t.Fatalf("ax status printed:\n%s", r.stdout)
		}
		var h member.Health
		if code, body := d.get(c.ctx, t, "/healthz"); code != http.StatusOK || json.Unmarshal([]byte(body), &h) != nil || h.Leader == "" {
			t.Fatalf("GET /healthz: %d %s", code, body)
		}
		if code, body := d.get(c.ctx, t, "/metrics"); code != http.StatusOK || !strings.Contains(body, "\nax_") {
			t.Fatalf("GET /metrics: %d %.300s", code, body)
		}
		d.ax(t, 0, "task", "pause", tick)
	})
}

// waitCanceledAttempt waits until instance id is CANCELED and the report
// of its one attempt, stopped while it waited for a mid-run approval, is
// in: the attempt is canceled with its script's exit 7 (its rejection
// path ran) and output holding each of outputs, on executor.
func (c *cell) waitCanceledAttempt(t *testing.T, id, executor string, outputs ...string) {
	t.Helper()
	agenttest.WaitState(t, c.d.User(), id, 10*time.Second, model.StateCanceled)
	testkit.Eventually(t, 20*time.Second, func() error {
		in, err := c.d.User().GetInstance(c.ctx, id)
		if err != nil {
			return err
		}
		if len(in.AttemptList) != 1 {
			return fmt.Errorf("attempts %+v, want the canceled one", in.AttemptList)
		}
		a := in.AttemptList[0]
		if a.Outcome != model.OutcomeCanceled || a.ExitCode == nil || *a.ExitCode != 7 || a.Executor != executor {
			return fmt.Errorf("attempt %+v, want canceled on %s with the script's exit 7", a, executor)
		}
		for _, o := range outputs {
			if !strings.Contains(a.Output, o) {
				return fmt.Errorf("attempt %+v: output lacks %q", a, o)
			}
		}
		return nil
	})
}

// midRunScript asks for approval in the middle of its work: exit 0 on the
// approved path, 7 on the rejected one (`ax approval request` exits 1).
func midRunScript() string {
	return `echo before; ` + axBinary + ` approval request -summary "drop table?" && echo approved-path || { echo rejected-path; exit 7; }`
}

// journeyApproval runs, on each of the deployment's runners, approval
// before the run (approve, reject) and mid-run with `ax approval request`
// run by the executor's own credential (approve, reject), and a script
// that ends while it waits (its task's only slot is freed). Under ACLs an
// executor token reads the decision on its own attempts only, and no
// instance.
func journeyApproval(c *cell) {
	d, user, ops := c.d, c.d.User(), c.d.Operator()
	mids := map[string]string{} // an instance of the mid-run task, by runner
	for _, r := range d.runners {
		on := "-on-" + r.executor
		gated, mid, givesUp := c.n("gated-"+r.executor), c.n("mid-"+r.executor), c.n("gives-up-"+r.executor)
		c.step("define"+on, func(t *testing.T) {
			p := model.Policy{MaxConcurrency: 1, Overlap: "queue"}
			c.put(t, r.route(shellTask(gated, "echo ran", model.Policy{Approval: "before_run"})), r.route(shellTask(mid, midRunScript(), p)),
				r.route(shellTask(givesUp, axBinary+` approval request -summary "wait for me" & sleep 2; exit 3`, p)))
		})
		c.step("approve-before-run"+on, func(t *testing.T) {
			id := trigger(t, user, gated)
			agenttest.WaitState(t, user, id, 20*time.Second, model.StateWaitingApproval)
			if _, err := ops.Decide(c.ctx, id, client.Approve, "looks fine"); err != nil {
				t.Fatal(err)
			}
			if in := agenttest.WaitState(t, user, id, 30*time.Second, model.StateSuccess); in.Executor != r.executor || !strings.Contains(in.AttemptList[0].Output, "ran") {
				t.Fatalf("ran on %q with output %q, want %s", in.Executor, in.AttemptList[0].Output, r.executor)
			}
		})
		c.step("reject-before-run"+on, func(t *testing.T) {
			id := trigger(t, user, gated)
			agenttest.WaitState(t, user, id, 20*time.Second, model.StateWaitingApproval)
			if _, err := ops.Decide(c.ctx, id, client.Reject, "no"); err != nil {
				t.Fatal(err)
			}
			if in := agenttest.WaitState(t, user, id, 10*time.Second, model.StateCanceled); in.Attempts != 0 {
				t.Fatalf("a rejected instance ran: %+v", in.AttemptList)
			}
		})
		c.step("approve-mid-run"+on, func(t *testing.T) {
			id := trigger(t, user, mid)
			agenttest.WaitState(t, user, id, 30*time.Second, model.StateWaitingApproval)
			if r := d.axOperator(t, 0, "instance", "approve", id, "-comment", "go ahead"); !strings.Contains(r.stdout, id+" RUNNING") {
				t.Fatalf("ax instance approve printed %q", r.stdout)
			}
			in := agenttest.WaitState(t, user, id, 30*time.Second, model.StateSuccess)
			if out := in.AttemptList[0].Output; in.Executor != r.executor || !strings.Contains(out, "approved by ") || !strings.Contains(out, "approved-path") {
				t.Fatalf("ran on %q with output %q, want the approved path on %s", in.Executor, out, r.executor)
			}
			mids[r.executor] = id
		})
		c.step("reject-mid-run"+on, func(t *testing.T) {
			// ax approval request exits 1, the rejection path runs, the
			// instance is CANCELED and keeps that output.
			id := trigger(t, user, mid)
			agenttest.WaitState(t, user, id, 30*time.Second, model.StateWaitingApproval)
			d.axOperator(t, 0, "instance", "reject", id, "-comment", "not today")
			c.waitCanceledAttempt(t, id, r.executor, "rejected by ", "rejected-path")
		})
		c.step("ends-while-waiting"+on, func(t *testing.T) {
			// A script that ends while it waits frees the task's only
			// slot: the next instance runs (before, it stayed BLOCKED for
			// good).
			agenttest.WaitState(t, user, trigger(t, user, givesUp), 30*time.Second, model.StateFailed)
			agenttest.WaitState(t, user, trigger(t, user, givesUp), 30*time.Second, model.StateFailed)
			counts, err := user.TaskCounts(c.ctx, givesUp, live.CountFilter{})
			if err != nil {
				t.Fatal(err)
			}
			if counts.Slots == nil || counts.Slots.Busy != 0 || counts.Counts[model.StateFailed] != 2 {
				t.Fatalf("counts %+v, slots %+v: want two FAILED and no busy slot", counts, counts.Slots)
			}
		})
	}
	if d.admin == "" {
		return
	}
	c.step("executor-token-scope", func(t *testing.T) {
		for _, r := range d.runners {
			if r.host != nil {
				continue // an embedded executor's credential is in its agent's memory only
			}
			tok := d.executorToken(t, r.executor, r.labels)
			as := client.New(client.Config{Addrs: []string{d.entry.HTTPAddr}, Token: tok, TLS: d.clientTLS})
			p := worker.NewProtocol(as)
			for other, id := range mids {
				st, err := p.ApprovalStatus(c.ctx, id, 1)
				switch {
				case other == r.executor && (err != nil || st.Decision == ""):
					t.Fatalf("%s reads the decision on its own attempt %s: %+v, %v", r.executor, id, st, err)
				case other != r.executor:
					wantCode(t, r.executor+" reads the decision on "+other+"'s attempt", err, model.CodeForbidden)
				}
				_, err = as.GetInstance(c.ctx, id)
				wantCode(t, r.executor+" reads an instance", err, model.CodeForbidden)
			}
		}
	})
}

// sdkHandler is the SDK journey's handler: it writes the order it got to
// the attempt's log, refuses one marked fail (for good), and fails the
// first attempt of one marked flaky.
func sdkHandler(ctx context.Context, job worker.Job) error {
	var p struct {
		Order       int
		Fail, Flaky bool
	}
	if err := json.Unmarshal(job.Payload, &p); err != nil {
		return worker.Permanent(err)
	}
	fmt.Fprintf(worker.Output(ctx), "order %d attempt %d execution %s\n", p.Order, job.Attempt, job.ExecutionID)
	switch {
	case p.Fail:
		return worker.Permanent(errors.New("refused"))
	case p.Flaky && job.Attempt == 1:
		return errors.New("try again")
	}
	return nil
}

// journeySDK is a Go program's journey: a worker of its own (an executor
// token under ACLs) runs an sdk handler; the program submits a keyed
// delayed job, waits for it and reads its result; a refused job fails at
// once, a flaky one is retried.
func journeySDK(c *cell) {
	d, user := c.d, c.d.User()
	name, task := c.n("sdk-worker"), c.n("orders")
	c.step("start-worker", func(t *testing.T) {
		labels := map[string]string{"runner": name}
		c.put(t, &model.Task{Name: task, Trigger: model.Trigger{Type: model.TriggerEvent},
			Action: model.Action{Type: model.ActionSDK, Handler: "order"},
			Policy: model.Policy{MaxConcurrency: 4, MaxRetries: 1, RetryInterval: model.Duration(100 * time.Millisecond), ExecutorLabels: labels}})
		c.t.Cleanup(d.StartWorker(t, name, labels, map[string]worker.Handler{"order": sdkHandler}))
	})
	var sub *model.Submitted
	c.step("submit", func(t *testing.T) {
		req := model.SubmitRequest{Payload: json.RawMessage(`{"order":42}`), Delay: model.Duration(time.Second), IdempotencyKey: c.n("order-42")}
		var err error
		if sub, err = user.Submit(c.ctx, task, req); err != nil || sub.State != model.StateScheduled {
			t.Fatalf("submit: %+v, %v", sub, err)
		}
		again, err := user.Submit(c.ctx, task, req)
		if err != nil || again.ID != sub.ID || !again.Existing {
			t.Fatalf("the same key again: %+v, %v; want %s, existing", again, err, sub.ID)
		}
	})
	c.step("wait-and-result", func(t *testing.T) {
		in := agenttest.WaitState(t, user, sub.ID, 30*time.Second, model.StateSuccess)
		if in.Executor != name || in.StartedAt.Before(sub.ScheduledAt.Time) {
			t.Fatalf("ran on %q at %s, want %s not before %s", in.Executor, in.StartedAt, name, sub.ScheduledAt)
		}
		l, err := user.InstanceLog(c.ctx, sub.ID, 0)
		if want := fmt.Sprintf("order 42 attempt 1 execution %s-1\n", sub.ID); err != nil || l.Output != want {
			t.Fatalf("result: %+v, %v; want %q", l, err, want)
		}
	})
	c.step("refused-for-good", func(t *testing.T) {
		s, err := user.Submit(c.ctx, task, model.SubmitRequest{Payload: json.RawMessage(`{"order":0,"fail":true}`)})
		if err != nil {
			t.Fatal(err)
		}
		in := agenttest.WaitState(t, user, s.ID, 30*time.Second, model.StateFailed)
		if in.Attempts != 1 || !strings.Contains(in.AttemptList[0].Output, "order 0 attempt 1") {
			t.Fatalf("attempts %+v, want one, not retried, its log kept", in.AttemptList)
		}
	})
	c.step("retried", func(t *testing.T) {
		s, err := user.Submit(c.ctx, task, model.SubmitRequest{Payload: json.RawMessage(`{"order":7,"flaky":true}`)})
		if err != nil {
			t.Fatal(err)
		}
		if in := agenttest.WaitState(t, user, s.ID, 30*time.Second, model.StateSuccess); in.Attempts != 2 {
			t.Fatalf("attempts %+v, want a failed one, then a success", in.AttemptList)
		}
	})
}

// journeySDKExample runs examples/sdk-worker as a user would, as a
// process with the credentials of the deployment on its command line (an
// executor token, the CA and the client certificate under TLS), and
// triggers its greet handler.
func journeySDKExample(c *cell) {
	d, user := c.d, c.d.User()
	name, task := c.n("sdk-example"), c.n("greet")
	var logs testkit.Buffer
	c.step("start-example", func(t *testing.T) {
		args := []string{"-server", d.entry.HTTPAddr, "-name", name}
		if tok := d.executorToken(t, name, nil); tok != "" {
			args = append(args, "-token", tok)
		}
		if d.caFile != "" {
			cert, key := localcluster.ClientCert(filepath.Dir(d.caFile))
			args = append(args, "-ca-cert", d.caFile, "-client-cert", cert, "-client-key", key)
		}
		cmd := exec.Command(sdkWorkerBinary, args...)
		cmd.Env = os.Environ()
		cmd.Stdout, cmd.Stderr = &logs, &logs
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		c.t.Cleanup(func() {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			_ = cmd.Wait()
			if c.t.Failed() {
				c.t.Logf("sdk-worker's log:\n%s", logs.String())
			}
		})
		c.put(t, &model.Task{Name: task, Trigger: model.Trigger{Type: model.TriggerEvent},
			Action: model.Action{Type: model.ActionSDK, Handler: "greet"}})
	})
	c.step("greet", func(t *testing.T) {
		tr, err := user.Trigger(c.ctx, task, model.TriggerRequest{Params: map[string]string{"who": name}})
		if err != nil {
			t.Fatal(err)
		}
		in := agenttest.WaitState(t, user, tr.ID, 30*time.Second, model.StateSuccess)
		if in.Executor != name {
			t.Fatalf("ran on %q, want the example %s", in.Executor, name)
		}
		l, err := user.InstanceLog(c.ctx, tr.ID, 0)
		if want := fmt.Sprintf("hello, %s (execution %s-1)\n", name, tr.ID); err != nil || l.Output != want {
			t.Fatalf("log %+v, %v; want %q", l, err, want)
		}
	})
}

// journeyTriggerWaitLog is `ax trigger NAME -wait -log`: it follows the
// new instance's output to its end and exits with its outcome (through a
// follower it answered "instance … not found" in 4 of 4 tries before
// reads were linearizable by default); likewise `ax submit -wait`.
func journeyTriggerWaitLog(c *cell) {
	d, r := c.d, c.d.runners[0]
	ok, boom := c.n("wait-log"), c.n("wait-log-boom")
	c.step("define", func(t *testing.T) {
		c.put(t, r.route(shellTask(ok, "echo line-from-$AX_INSTANCE_ID", model.Policy{MaxConcurrency: 4})),
			r.route(shellTask(boom, "echo oops; exit 3", model.Policy{})))
	})
	for i := 1; i <= 4; i++ {
		c.step(fmt.Sprintf("success-%d", i), func(t *testing.T) {
			r := d.ax(t, 0, "trigger", ok, "-wait", "-log")
			id := strings.Fields(r.stdout)[0]
			if !strings.Contains(r.stdout, "line-from-"+id) || !strings.Contains(r.stdout, id+" SUCCESS") {
				t.Fatalf("ax trigger -wait -log printed:\n%s\nstderr:\n%s", r.stdout, r.stderr)
			}
		})
	}
	c.step("failure", func(t *testing.T) {
		r := d.ax(t, 1, "trigger", boom, "-wait", "-log")
		if !strings.Contains(r.stdout, "oops\n") || !strings.Contains(r.stdout, " FAILED") || !strings.Contains(r.stderr, "ended FAILED: exit status 3") {
			t.Fatalf("ax trigger -wait -log of a failing task:\nstdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
		}
	})
	c.step("submit-wait", func(t *testing.T) {
		if r := d.ax(t, 0, "submit", ok, "-delay", "1s", "-wait"); !strings.Contains(r.stdout, " SUCCESS") {
			t.Fatalf("ax submit -wait printed:\n%s", r.stdout)
		}
	})
}

// journeyBackfill backfills yesterday's report, which dependsOn
// yesterday's sync: it waits BLOCKED, naming the sync, until the sync is
// backfilled too and has succeeded; then it runs.
func journeyBackfill(c *cell) {
	d, user, r := c.d, c.d.User(), c.d.runners[0]
	sync, report := c.n("bf-sync"), c.n("bf-report")
	yesterday := time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, -1).Format(time.RFC3339)
	backfill := func(t *testing.T, task, want string) []string {
		t.Helper()
		out := d.ax(t, 0, "backfill", task, "-from", yesterday, "-to", yesterday).stdout
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if lines[len(lines)-1] != want {
			t.Fatalf("ax backfill %s printed %q, want %q last", task, out, want)
		}
		return lines[:len(lines)-1]
	}
	c.step("define", func(t *testing.T) {
		c.put(t, r.route(dailyTask(sync, "echo sync for {{.Date}}", model.Policy{})),
			r.route(dailyTask(report, "echo report for {{.Date}}", model.Policy{DependsOn: []string{sync}})))
	})
	var rid string
	c.step("downstream-blocked", func(t *testing.T) {
		rid = backfill(t, report, "1 created, 0 already had an instance")[0]
		in := agenttest.WaitState(t, user, rid, 20*time.Second, model.StateBlocked)
		if !hasEvent(in, "blocked", "waiting for "+sync) {
			t.Fatalf("events %+v, want blocked on %s", in.Events, sync)
		}
		backfill(t, report, "0 created, 1 already had an instance")
	})
	c.step("upstream-released-it", func(t *testing.T) {
		sid := backfill(t, sync, "1 created, 0 already had an instance")[0]
		s := agenttest.WaitState(t, user, sid, 30*time.Second, model.StateSuccess)
		in := agenttest.WaitState(t, user, rid, 30*time.Second, model.StateSuccess)
		if in.StartedAt.Before(s.FinishedAt.Time) || !strings.Contains(in.AttemptList[0].Output, "report for "+yesterday[:10]) {
			t.Fatalf("report started %s (sync ended %s), output %q", in.StartedAt, s.FinishedAt, in.AttemptList[0].Output)
		}
	})
}

// journeyRerun: yesterday's upstream instance fails, so the downstream
// instance of that date waits BLOCKED; the cause fixed, the operator's
// ax instance rerun -wait runs the same instance again (attempt 2) to
// SUCCESS, and the downstream instance runs; ax task rerun then finds
// nothing FAILED left in the range.
func journeyRerun(c *cell) {
	d, user, r := c.d, c.d.User(), c.d.runners[0]
	up, down := c.n("rr-up"), c.n("rr-down")
	fixed := filepath.Join(c.t.TempDir(), "fixed")
	yesterday := time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, -1).Format(time.RFC3339)
	c.step("define", func(t *testing.T) {
		c.put(t, r.route(dailyTask(up, "test -f "+fixed+" && echo fixed", model.Policy{})),
			r.route(dailyTask(down, "echo report for {{.Date}}", model.Policy{DependsOn: []string{up}})))
	})
	var uid, did string
	c.step("upstream-failed", func(t *testing.T) {
		did = strings.Fields(d.ax(t, 0, "backfill", down, "-from", yesterday, "-to", yesterday).stdout)[0]
		uid = strings.Fields(d.ax(t, 0, "backfill", up, "-from", yesterday, "-to", yesterday).stdout)[0]
		agenttest.WaitState(t, user, uid, 30*time.Second, model.StateFailed)
		if in := agenttest.WaitState(t, user, did, 10*time.Second, model.StateBlocked); !strings.Contains(in.Why, "waiting for upstream task "+up) {
			t.Fatalf("downstream why %q, want it waiting for %s", in.Why, up)
		}
	})
	c.step("rerun-wait", func(t *testing.T) {
		if err := os.WriteFile(fixed, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if out := d.axOperator(t, 0, "instance", "rerun", uid, "-wait", "-log").stdout; !strings.Contains(out, "fixed\n") || !strings.Contains(out, uid+" SUCCESS") {
			t.Fatalf("ax instance rerun -wait -log printed %q", out)
		}
		in := agenttest.WaitState(t, user, did, 30*time.Second, model.StateSuccess)
		if !strings.Contains(in.AttemptList[0].Output, "report for "+yesterday[:10]) {
			t.Fatalf("downstream output %q", in.AttemptList[0].Output)
		}
		if u, err := user.GetInstance(c.ctx, uid); err != nil || u.Attempts != 2 || !hasEvent(u, "rerun", "it had ended FAILED") {
			t.Fatalf("the re-run upstream: %+v %v, want 2 attempts and a rerun event", u, err)
		}
	})
	c.step("task-rerun", func(t *testing.T) {
		if out := d.axOperator(t, 0, "task", "rerun", up, "-from", yesterday, "-to", yesterday, "-state", "FAILED").stdout; out != "0 re-run\n" {
			t.Fatalf("ax task rerun printed %q, want nothing left to re-run", out)
		}
	})
}

// journeyFailureAlert: a FAILED instance raises its task's
// instance_failed alert, notified once to a local webhook, listed by `ax
// alert list`, recorded in the instance's events, and its onFailure task
// runs once with the failed instance's id.
func journeyFailureAlert(c *cell) {
	d, user, r := c.d, c.d.User(), c.d.runners[0]
	broken, cleanup := c.n("broken"), c.n("cleanup")
	hook := newWebhook(c.t)
	c.step("define", func(t *testing.T) {
		c.put(t, r.route(shellTask(cleanup, "echo cleaning up after $AX_PARAM_FAILED_INSTANCE", model.Policy{MaxConcurrency: 5})),
			r.route(shellTask(broken, "echo boom; exit 1", model.Policy{Notify: []string{hook.URL()}, OnFailure: []string{cleanup}})))
	})
	var id string
	c.step("fail", func(t *testing.T) {
		id = trigger(t, user, broken)
		agenttest.WaitState(t, user, id, 30*time.Second, model.StateFailed)
	})
	alert := model.RuleInstanceFailed + ":" + broken
	c.step("webhook-once", func(t *testing.T) {
		testkit.Eventually(t, 30*time.Second, func() error {
			if n := hook.Count(alert, model.AlertFiring); n != 1 {
				return fmt.Errorf("%d firing notifications of %s", n, alert)
			}
			return nil
		})
		// Once nothing is pending, nothing more comes.
		testkit.Eventually(t, 30*time.Second, func() error {
			var o live.Overview
			if err := user.Do(c.ctx, client.Request{Method: http.MethodGet, Path: "/v1/overview"}, &o); err != nil {
				return err
			}
			if o.NotificationsPending != 0 {
				return fmt.Errorf("%d notifications not recorded as sent", o.NotificationsPending)
			}
			return nil
		})
		var got []model.AlertNotification
		for _, n := range hook.Got() {
			if n.Alert.Subject.Task == broken {
				got = append(got, n)
			}
		}
		if len(got) != 1 || got[0].Alert.Subject.Instance != id || len(hook.Errs()) > 0 {
			t.Fatalf("notifications of %s: %+v (undecodable: %q), want one for %s", broken, got, hook.Errs(), id)
		}
	})
	c.step("alert-and-event", func(t *testing.T) {
		if out := d.ax(t, 0, "alert", "list", "-state", "firing").stdout; !strings.Contains(out, "instance_failed") || !strings.Contains(out, "task="+broken) {
			t.Fatalf("ax alert list printed:\n%s", out)
		}
		testkit.Eventually(t, 20*time.Second, func() error {
			in, err := user.GetInstance(c.ctx, id)
			if err != nil {
				return err
			}
			if !hasEvent(in, "alerted", "") {
				return fmt.Errorf("no alerted event yet: %+v", in.Events)
			}
			return nil
		})
	})
	c.step("on-failure-runs", func(t *testing.T) {
		runs, err := allInstances(c.ctx, user, cleanup)
		if err != nil {
			t.Fatal(err)
		}
		if len(runs) != 1 || runs[0].Source != model.SourceOnFailure || runs[0].Params["failed_instance"] != id {
			t.Fatalf("%s instances %+v, want one on_failure run for %s", cleanup, runs, id)
		}
		if in := agenttest.WaitState(t, user, runs[0].ID, 30*time.Second, model.StateSuccess); !strings.Contains(in.AttemptList[0].Output, id) {
			t.Fatalf("%s output %q lacks the failed instance id", cleanup, in.AttemptList[0].Output)
		}
	})
}

// journeyTerminateCancel, the operator's decisions: `ax instance
// terminate` kills a running attempt that keeps the lines it printed; `ax
// instance cancel` refuses a RUNNING instance (terminate is for that),
// cancels an attempt waiting for a mid-run approval, which keeps its
// output and runs its cancel path, and cancels a SCHEDULED instance
// before it runs.
func journeyTerminateCancel(c *cell) {
	d, user, r := c.d, c.d.User(), c.d.runners[0]
	sixty, asks := c.n("sixty"), c.n("asks-then-waits")
	c.step("define", func(t *testing.T) {
		c.put(t, r.route(shellTask(sixty, `i=1; while [ $i -le 60 ]; do echo "line $i of 60"; sleep 0.25; i=$((i+1)); done`, model.Policy{})),
			r.route(shellTask(asks, `echo step 1; echo step 2; `+axBinary+` approval request -summary "go on?" || { echo cancel-path; exit 7; }`, model.Policy{})))
	})
	c.step("terminate-keeps-output", func(t *testing.T) {
		id := trigger(t, user, sixty)
		testkit.Eventually(t, 20*time.Second, func() error {
			l, err := user.InstanceLog(c.ctx, id, 0)
			if err != nil {
				return err
			}
			if !strings.Contains(l.Output, "line 8 of 60") {
				return fmt.Errorf("live log %q, waiting for line 8", l.Output)
			}
			return nil
		})
		if out := d.axOperator(t, 0, "instance", "terminate", id, "-comment", "enough").stdout; !strings.Contains(out, id+" TERMINATED") {
			t.Fatalf("ax instance terminate printed %q", out)
		}
		var l *model.InstanceLog
		testkit.Eventually(t, 20*time.Second, func() error {
			var err error
			if l, err = user.InstanceLog(c.ctx, id, 0); err != nil {
				return err
			}
			for i := 1; i <= 8; i++ {
				if !strings.Contains(l.Output, fmt.Sprintf("line %d of 60\n", i)) {
					return fmt.Errorf("log of the terminated attempt %q lacks line %d", l.Output, i)
				}
			}
			return nil
		})
		if l.Live || l.State != model.StateTerminated || strings.Contains(l.Output, "line 60 of 60") {
			t.Errorf("log %+v, want the terminated attempt's output up to its kill", l)
		}
		in := agenttest.WaitState(t, user, id, time.Second, model.StateTerminated)
		if a := in.AttemptList[0]; a.Outcome != model.OutcomeTerminated || !strings.Contains(a.Output, "line 8 of 60") || a.PID == 0 || !hasEvent(in, "terminated", "enough") {
			t.Errorf("attempt %+v, events %+v: want terminated with its output and pid, the comment kept", a, in.Events)
		}
	})
	c.step("cancel-running-refused", func(t *testing.T) {
		id := trigger(t, user, sixty)
		agenttest.WaitState(t, user, id, 20*time.Second, model.StateRunning)
		if r := d.axOperator(t, 1, "instance", "cancel", id); !strings.Contains(r.stderr, "use terminate for RUNNING") {
			t.Fatalf("ax instance cancel of a RUNNING instance: stderr %q", r.stderr)
		}
		d.axOperator(t, 0, "instance", "terminate", id)
		agenttest.WaitState(t, user, id, 10*time.Second, model.StateTerminated)
	})
	c.step("cancel-waiting-keeps-output", func(t *testing.T) {
		id := trigger(t, user, asks)
		agenttest.WaitState(t, user, id, 30*time.Second, model.StateWaitingApproval)
		d.axOperator(t, 0, "instance", "cancel", id, "-comment", "not now")
		c.waitCanceledAttempt(t, id, r.executor, "step 2", "cancel-path")
	})
	c.step("cancel-scheduled", func(t *testing.T) {
		s, err := user.Submit(c.ctx, sixty, model.SubmitRequest{Delay: model.Duration(time.Hour)})
		if err != nil {
			t.Fatal(err)
		}
		d.axOperator(t, 0, "instance", "cancel", s.ID)
		if in := agenttest.WaitState(t, user, s.ID, 10*time.Second, model.StateCanceled); in.Attempts != 0 {
			t.Fatalf("a canceled SCHEDULED instance ran: %+v", in.AttemptList)
		}
		d.axOperator(t, 1, "instance", "cancel", s.ID)
	})
}

// journeySIGTERMExecutor: SIGTERM makes an ax executor take no new work,
// let a short attempt finish, stop a long one after -shutdown-grace and
// exit. The stopped attempt is interrupted, not failed: with maxRetries 0
// its instance is READY again, uses no retry, and runs to its end on the
// next executor.
// journeyShardsPool (issue 24): a pool from the CLI, a task of 4 shards
// that needs a slot of it (and a priority), run with ax trigger -wait and
// its grid read with ax instance shards; a broadcast that runs one shard
// on the deployment's executor for the route.
func journeyShardsPool(c *cell) {
	d, r := c.d, c.d.runners[0]
	pool, sharded, everywhere := c.n("shard-pool"), c.n("sharded"), c.n("everywhere")
	c.step("pool", func(t *testing.T) {
		testkit.Eventually(t, 30*time.Second, func() error { // protocol 8
			_, err := d.User().PutPool(c.ctx, &model.Pool{Name: pool, Slots: 1})
			return err
		})
		if out := d.ax(t, 0, "pool", "get", pool).stdout; !strings.Contains(out, pool) {
			t.Fatalf("ax pool get:\n%s", out)
		}
	})
	c.step("define", func(t *testing.T) {
		c.put(t, r.route(shellTask(sharded, "echo part $AX_SHARD_INDEX of $AX_SHARD_TOTAL", model.Policy{Shards: 4, Pool: pool, Priority: 5})),
			r.route(shellTask(everywhere, "echo on $AX_EXECUTOR", model.Policy{Broadcast: true})))
	})
	c.step("sharded", func(t *testing.T) {
		out := d.ax(t, 0, "trigger", sharded, "-wait").stdout
		id := strings.Fields(out)[0]
		if !strings.Contains(out, id+" SUCCESS") {
			t.Fatalf("ax trigger -wait of a sharded task:\n%s", out)
		}
		if grid := d.ax(t, 0, "instance", "shards", id).stdout; !strings.Contains(grid, "4: 4 SUCCESS") || !strings.Contains(grid, "   0  ####") {
			t.Fatalf("ax instance shards:\n%s", grid)
		}
		if p, err := d.User().GetPool(c.ctx, pool); err != nil || p.Busy != 0 {
			t.Fatalf("pool after the run: %+v %v, want its slot free", p, err)
		}
	})
	c.step("broadcast", func(t *testing.T) {
		out := d.ax(t, 0, "trigger", everywhere, "-wait").stdout
		id := strings.Fields(out)[0]
		l, err := d.User().Shards(c.ctx, id)
		if err != nil || len(l.Shards) != 1 || l.Shards[0].Executor != r.executor || l.Shards[0].State != model.StateSuccess {
			t.Fatalf("broadcast shards %+v %v, want one on %s", l, err, r.executor)
		}
	})
}

func journeySIGTERMExecutor(c *cell) {
	d, user := c.d, c.d.User()
	leaving, next := c.n("leaving"), c.n("next")
	labels := map[string]string{"pool": c.n("drain")}
	short, long := c.n("drain-short"), c.n("drain-long")
	dir := c.t.TempDir()
	var e *localcluster.Node
	var lid, sid string
	c.step("start-attempts", func(t *testing.T) {
		c.put(t, runner{labels: labels}.route(shellTask(short, "touch "+dir+"/short; sleep 1; echo finished", model.Policy{})),
			runner{labels: labels}.route(shellTask(long, "touch "+dir+"/long; if [ $AX_EXECUTOR = "+leaving+" ]; then sleep 60; fi; echo done on $AX_EXECUTOR", model.Policy{})))
		e = d.StartExecutor(t, leaving, labels, "-shutdown-grace", "2s")
		lid, sid = trigger(t, user, long), trigger(t, user, short)
		waitStarted(t, dir, "long", "short")
		if in := agenttest.WaitState(t, user, sid, 10*time.Second, model.StateRunning); in.Executor != leaving {
			t.Fatalf("%s runs on %q, want %s", short, in.Executor, leaving)
		}
	})
	c.step("sigterm", func(t *testing.T) {
		start := time.Now()
		e.Stop() // SIGTERM, waits for the exit
		took := time.Since(start)
		if took > 2*time.Second+10*time.Second {
			t.Fatalf("executor took %s to exit after SIGTERM, want at most grace + 10s", took)
		}
		t.Logf("executor exited %s after SIGTERM (grace 2s)", took)
	})
	c.step("short-finished", func(t *testing.T) {
		if in := agenttest.WaitState(t, user, sid, 10*time.Second, model.StateSuccess); in.Attempts != 1 {
			t.Fatalf("%+v, want it finished within the grace", in.AttemptList)
		}
	})
	c.step("long-interrupted", func(t *testing.T) {
		in := agenttest.WaitState(t, user, lid, 10*time.Second, model.StateReady)
		if a := in.AttemptList[0]; a.Outcome != model.OutcomeInterrupted || !strings.Contains(a.Error, "stopped: executor shutting down") {
			t.Fatalf("attempt %+v, want interrupted by the shutdown", a)
		}
	})
	c.step("runs-again-elsewhere", func(t *testing.T) {
		n := d.StartExecutor(t, next, labels)
		in := agenttest.WaitState(t, user, lid, 30*time.Second, model.StateSuccess)
		if in.Attempts != 2 || in.AttemptList[1].Executor != next {
			t.Fatalf("attempts %+v, want attempt 2 on %s", in.AttemptList, next)
		}
		n.Stop() // an idle executor's SIGTERM
	})
}

// waitStarted waits until the shell of each attempt named has started,
// which it says by creating dir/NAME: RUNNING says only that its lease was
// granted, and a signal sent before the executor got the lease finds
// nothing running.
func waitStarted(t *testing.T, dir string, names ...string) {
	t.Helper()
	testkit.Eventually(t, 30*time.Second, func() error {
		for _, n := range names {
			if _, err := os.Stat(filepath.Join(dir, n)); err != nil {
				return fmt.Errorf("the %s attempt has not started", n)
			}
		}
		return nil
	})
}

// journeySIGTERMAgent stops an agent with SIGTERM while attempts run. An
// agent whose embedded executor runs them lets the short one finish
// within -executor-shutdown-grace and stops the long one, recorded
// interrupted, not failed: with maxRetries 0 it runs again once the agent
// is back. A leader stopped while an ax executor runs an attempt hands
// leadership over, and the attempt runs once to its end. Every node is
// back and leadership where it was at the end.
func journeySIGTERMAgent(c *cell) {
	d := c.d
	for _, r := range d.runners {
		if r.host != nil {
			sigtermHost(c, r)
			c.step("healed-after-"+r.host.ID, func(t *testing.T) { d.heal(t) })
		} else if len(d.c.Nodes) > 1 {
			sigtermLeader(c, r)
		}
	}
}

// sigtermHost stops the agent that runs r (an embedded executor).
func sigtermHost(c *cell, r runner) {
	user := c.d.User()
	dir := c.t.TempDir()
	short, long := c.n("drain-short-"+r.executor), c.n("drain-long-"+r.executor)
	var sid, lid string
	c.step("start-attempts-on-"+r.executor, func(t *testing.T) {
		c.put(t, r.route(shellTask(short, "touch "+dir+"/short; sleep 1; echo finished", model.Policy{})),
			r.route(shellTask(long, "if [ -e "+dir+"/long ]; then echo again; else touch "+dir+"/long; sleep 60; fi", model.Policy{})))
		lid, sid = trigger(t, user, long), trigger(t, user, short)
		waitStarted(t, dir, "long", "short")
	})
	c.step("sigterm-"+r.host.ID, func(t *testing.T) {
		start := time.Now()
		r.host.Stop() // SIGTERM, waits for the exit
		t.Logf("agent %s exited %s after SIGTERM (executor grace 2s)", r.host.ID, time.Since(start))
		if err := r.host.Start(); err != nil {
			t.Fatal(err)
		}
	})
	c.step("short-finished-once", func(t *testing.T) {
		if in := agenttest.WaitState(t, user, sid, 30*time.Second, model.StateSuccess); in.Attempts != 1 {
			t.Fatalf("%+v, want it finished within the grace, once", in.AttemptList)
		}
	})
	c.step("long-interrupted-then-run", func(t *testing.T) {
		in := agenttest.WaitState(t, user, lid, 30*time.Second, model.StateSuccess)
		if in.Attempts != 2 || in.AttemptList[0].Outcome != model.OutcomeInterrupted || !strings.Contains(in.AttemptList[0].Error, "executor shutting down") {
			t.Fatalf("attempts %+v, want attempt 1 interrupted by the shutdown, attempt 2 a success", in.AttemptList)
		}
	})
}

// sigtermLeader stops the leader while r (an ax executor) runs an
// attempt.
func sigtermLeader(c *cell, r runner) {
	d, user := c.d, c.d.User()
	task := c.n("through-leader-change-" + r.executor)
	dir := c.t.TempDir()
	var id string
	c.step("start-attempt-on-"+r.executor, func(t *testing.T) {
		c.put(t, r.route(shellTask(task, "touch "+dir+"/once; sleep 4; echo done once", model.Policy{MaxRetries: 1})))
		id = trigger(t, user, task)
		waitStarted(t, dir, "once")
	})
	c.step("sigterm-leader", func(t *testing.T) {
		leader, err := d.c.Leader(c.ctx, 15*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if leader == d.entry {
			t.Fatalf("the entry %s leads", leader.ID)
		}
		start := time.Now()
		leader.Stop()
		t.Logf("leader %s exited %s after SIGTERM", leader.ID, time.Since(start))
		in := agenttest.WaitState(t, user, id, 30*time.Second, model.StateSuccess)
		if in.Attempts != 1 || in.Executor != r.executor || !strings.Contains(in.AttemptList[0].Output, "done once") {
			t.Fatalf("attempts %+v, want the one attempt on %s, renewed through the leader change", in.AttemptList, r.executor)
		}
	})
	c.step("old-leader-rejoins", func(t *testing.T) { c.d.heal(t) })
}
