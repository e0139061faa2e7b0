package journeys

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/ax-scheduler/ax/client"
	"github.com/ax-scheduler/ax/internal/localcluster"
	"github.com/ax-scheduler/ax/internal/testkit"
	"github.com/ax-scheduler/ax/model"
)

// browserPath finds Debian's chromium. .ci/run installs it and sets
// AX_REQUIRE_BROWSER=1, so there a missing browser fails the test; on a
// developer machine without it the test is skipped, saying how to run it.
func browserPath(t testing.TB) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("AX_REQUIRE_BROWSER") != "" {
		t.Fatal("no chromium on PATH (apt-get install chromium)")
	}
	t.Skip("browser test skipped: no chromium on PATH (apt-get install chromium, as .ci/run does)")
	return ""
}

// darkScheme makes the browser prefer the dark colour scheme (CSS
// prefers-color-scheme: dark).
var darkScheme = chromedp.Flag("blink-settings", "preferredColorScheme=0")

// acceptTestCA lets the browser open a TLS cluster's pages (its
// certificates are signed by the test's own CA).
var acceptTestCA = chromedp.Flag("ignore-certificate-errors", true)

// browser is one headless chromium tab; JavaScript exceptions on any page
// fail the test.
type browser struct {
	t      testing.TB
	ctx    context.Context
	shots  string
	mu     sync.Mutex
	thrown []string
	// noA11y skips the axe-core check in open (a benchmark measuring the
	// browser's CPU).
	noA11y bool
}

func newBrowser(t testing.TB, extra ...chromedp.ExecAllocatorOption) *browser {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(browserPath(t)),
		chromedp.NoSandbox, // CI runs as root
		chromedp.WindowSize(1280, 900),
		chromedp.Flag("disable-dev-shm-usage", true),
	)
	opts = append(opts, extra...)
	actx, acancel := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	b := &browser{t: t, ctx: ctx, shots: os.Getenv("AX_SCREENSHOTS")}
	if b.shots == "" {
		b.shots = t.TempDir()
	}
	// The first run starts the browser; it must not have a deadline.
	if err := chromedp.Do(ctx); err != nil {
		cancel()
		acancel()
		t.Fatalf("start chromium: %v", err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for m, err := range chromedp.Console(ctx) {
			if err != nil {
				return
			}
			if m.Type == chromedp.ConsoleException {
				b.mu.Lock()
				b.thrown = append(b.thrown, m.Text+" at "+m.URL)
				b.mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		acancel()
		<-done
		b.mu.Lock()
		defer b.mu.Unlock()
		for _, e := range b.thrown {
			t.Errorf("JavaScript exception: %s", e)
		}
	})
	return b
}

// page is the text of the page, for failure messages.
func (b *browser) page() string {
	ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
	defer cancel()
	text, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("body")))
	return text
}

// do runs steps with a deadline, failing the test with what.
func (b *browser) do(what string, within time.Duration, steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, within)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		b.t.Fatalf("%s: %v\npage text:\n%s", what, err, b.page())
	}
}

// evalJS evaluates a JavaScript expression (awaiting a promise).
func evalJS[T any](b *browser, expr string) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		b.t.Fatalf("eval %s: %v", expr, err)
	}
	return v
}

// waitJS waits until a JavaScript expression is true.
func (b *browser) waitJS(what, expr string, within time.Duration) {
	b.t.Helper()
	err := testkit.Poll(within, func() error {
		ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
		defer cancel()
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool]("!!("+expr+")"))
		if err != nil {
			return err
		}
		if !ok {
			return errors.New("still false")
		}
		return nil
	})
	if err != nil {
		b.t.Fatalf("%s: %s: %v\npage text:\n%s", what, expr, err, b.page())
	}
}

// shot saves a screenshot of the viewport as name.png.
func (b *browser) shot(name string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 20*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		b.t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.WriteFile(filepath.Join(b.shots, name+".png"), png, 0o644); err != nil {
		b.t.Fatal(err)
	}
}

// open navigates to url, waits until ready (a CSS selector) is visible,
// and checks the page with axe-core (see checkA11y).
func (b *browser) open(url, ready string) {
	b.t.Helper()
	b.do("open "+url, 30*time.Second, chromedp.Navigate(url), chromedp.WaitVisible(chromedp.CSS(ready)))
	if !b.noA11y {
		b.checkA11y(url)
	}
}

// axeSHA256 is the hash of the vendored axe-core 4.14.1 (testdata/axe/README.md).
const axeSHA256 = "29348999450cdf2849a8e70b7912fc2da85a849da39c0d0d5394f51d4a9ed95c"

var axeSource = sync.OnceValues(func() (string, error) {
	src, err := os.ReadFile(filepath.Join("testdata", "axe", "axe.min.js"))
	if err != nil {
		return "", err
	}
	if sum := sha256.Sum256(src); hex.EncodeToString(sum[:]) != axeSHA256 {
		return "", fmt.Errorf("testdata/axe/axe.min.js has sha256 %x, want %s (testdata/axe/README.md)", sum, axeSHA256)
	}
	return string(src), nil
})

// axeViolation is one rule axe-core found broken, with the elements
// (CSS selectors) that break it.
type axeViolation struct {
	ID      string   `json:"id"`
	Impact  string   `json:"impact"`
	Help    string   `json:"help"`
	Targets []string `json:"targets"`
}

// checkA11y injects axe-core into the page on screen and runs it (WCAG
// 2.x A and AA rules, best practices); every violation is logged, and a
// serious or critical one fails the test.
func (b *browser) checkA11y(where string) {
	b.t.Helper()
	src, err := axeSource()
	if err != nil {
		b.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[chromedp.Void](src+";void 0")); err != nil {
		b.t.Fatalf("inject axe-core into %s: %v", where, err)
	}
	out, err := chromedp.Run(ctx, chromedp.Evaluate[string](`axe.run(document, {resultTypes: ['violations']}).then(r => JSON.stringify(r.violations.map(v =>
		({id: v.id, impact: v.impact, help: v.help, targets: v.nodes.map(n => n.target.join(' '))}))))`, chromedp.EvalAwaitPromise))
	if err != nil {
		b.t.Fatalf("axe-core on %s: %v", where, err)
	}
	var vs []axeViolation
	if err := json.Unmarshal([]byte(out), &vs); err != nil {
		b.t.Fatalf("axe-core's answer on %s: %v: %s", where, err, out)
	}
	bad := 0
	for _, v := range vs {
		targets := v.Targets
		if len(targets) > 5 {
			targets = append(targets[:5:5], fmt.Sprintf("… +%d more", len(v.Targets)-5))
		}
		b.t.Logf("axe-core on %s: %s (%s): %s: %q", where, v.ID, v.Impact, v.Help, targets)
		if v.Impact == "serious" || v.Impact == "critical" {
			bad++
		}
	}
	if bad > 0 {
		b.t.Errorf("axe-core found %d serious or critical violations on %s (logged above)", bad, where)
	}
}

// TestUI_Console drives the console in a real browser through a follower
// of a three-node cluster with TLS and ACLs: sign in, overview, a task
// triggered with a parameter and watched READY → RUNNING → SUCCESS with
// its output (no reload), the trigger form from a parameter schema, a
// rollout promoted and another aborted, an approval and a rejection, a
// waiting instance canceled and a running one terminated, a task paused
// and resumed, a backfill's progress, a failed instance re-run, alerts
// silenced and unsilenced, the Executors and Cluster pages (transfer and
// remove as admin), a phone's width, and a reader who gets no action
// buttons and whose forged action the API refuses.
func TestUI_Console(t *testing.T) {
	b := newBrowser(t, acceptTestCA)
	c := startCluster(t, 3, withTLS(t.TempDir()), withArgs("-lease", "3s"))
	ctx := ctxT(t, 4*time.Minute)
	adm0 := tokenClient(c, "")
	boot, err := adm0.ACLBootstrap(ctx)
	if err != nil {
		t.Fatal(err)
	}
	adm := tokenClient(c, boot.Secret)
	opTok := createToken(t, ctx, adm, model.ACLTokenRequest{Name: "olga", Role: model.RoleOperator})
	readTok := createToken(t, ctx, adm, model.ACLTokenRequest{Name: "rita", Role: model.RoleReader})
	execTok := createToken(t, ctx, adm, model.ACLTokenRequest{Name: "ui-exec", Role: model.RoleExecutor, Executor: "ui-exec", Labels: map[string]string{"pool": "ui"}})

	// report runs only on executors labelled pool=ui, and none is running
	// yet: its instance waits READY until the test starts one.
	tasks := []*model.Task{
		{Name: "report", Trigger: model.Trigger{Type: model.TriggerEvent},
			Action: model.Action{Type: model.ActionShell, Command: `echo "hello {{.Params.who}}"; sleep 2; echo "report done"; echo '{"rows": 7}' > "$AX_RESULT_FILE"`},
			Policy: model.Policy{ExecutorLabels: map[string]string{"pool": "ui"}}, Labels: map[string]string{"team": "data"}},
		{Name: "deploy", Trigger: model.Trigger{Type: model.TriggerEvent},
			Action: model.Action{Type: model.ActionShell, Command: "echo deployed"}, Policy: model.Policy{Approval: "before_run"}},
		{Name: "hourly", Trigger: model.Trigger{Type: model.TriggerCron, Expression: "0 * * * *", Timezone: "America/New_York"},
			Action: model.Action{Type: model.ActionShell, Command: "echo {{.ScheduledAt}}"}},
		// Monthly in Berlin: its next 20 fires cross two DST changes.
		{Name: "monthly", Trigger: model.Trigger{Type: model.TriggerCron, Expression: "0 3 1 * *", Timezone: "Europe/Berlin"},
			Action: model.Action{Type: model.ActionShell, Command: "echo month"}, Labels: map[string]string{"team": "finance"}},
		{Name: "flaky", Trigger: model.Trigger{Type: model.TriggerEvent},
			Action: model.Action{Type: model.ActionShell, Command: "echo 'disk full' >&2; exit 3"}},
		{Name: "cleanup", Trigger: model.Trigger{Type: model.TriggerCron, Expression: "*/5 * * * *"},
			Action: model.Action{Type: model.ActionShell, Command: "true"}},
		// stuck waits READY (no executor has its label); long runs a minute.
		{Name: "stuck", Trigger: model.Trigger{Type: model.TriggerEvent},
			Action: model.Action{Type: model.ActionShell, Command: "true"}, Policy: model.Policy{ExecutorLabels: map[string]string{"pool": "nowhere"}}},
		{Name: "long", Trigger: model.Trigger{Type: model.TriggerEvent},
			Action: model.Action{Type: model.ActionShell, Command: "echo started; sleep 60"}, Policy: model.Policy{ExecutorLabels: map[string]string{"pool": "ui"}}},
	}
	// export declares its parameters (protocol 8: retried until the new
	// cluster has reached it): the trigger form is built from them.
	eu := "eu"
	export := &model.Task{Name: "export", Trigger: model.Trigger{Type: model.TriggerEvent},
		Action: model.Action{Type: model.ActionShell, Command: "echo {{.Params.region}} {{.Params.limit}}"},
		Params: map[string]model.ParamSpec{"region": {Enum: []string{"eu", "us"}, Default: &eu, Description: "where the data lives"},
			"limit": {Type: model.ParamInteger, Required: true}, "day": {Pattern: `\d{4}-\d{2}-\d{2}`}}}
	for _, task := range tasks {
		if _, err := adm.PutTask(ctx, task); err != nil {
			t.Fatalf("put %s: %v", task.Name, err)
		}
	}

	// A task whose window has ended (protocol 7: retried until the new
	// cluster has reached it).
	past := model.Time{Time: time.Now().Add(-time.Hour)}
	ended := &model.Task{Name: "ended", Trigger: model.Trigger{Type: model.TriggerCron, Expression: "*/5 * * * *", Timezone: "Europe/Berlin",
		StartAt: &model.Time{Time: past.Add(-24 * time.Hour)}, EndAt: &past, MaxRuns: 5, Jitter: model.Duration(time.Minute)},
		Action: model.Action{Type: model.ActionShell, Command: "true"}}
	testkit.Eventually(t, 30*time.Second, func() error { _, err := adm.PutTask(ctx, ended); return err })
	testkit.Eventually(t, 30*time.Second, func() error { _, err := adm.PutTask(ctx, export); return err })

	// Through a follower, as an operator.
	leader, err := c.Leader(ctx, 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var via *localcluster.Node
	for _, n := range c.Nodes {
		if n != leader {
			via = n
			break
		}
	}
	base := "https://" + via.HTTPAddr
	b.open(base+"/", "#token")
	b.do("sign in", 20*time.Second,
		chromedp.SendKeys(chromedp.CSS("#token"), opTok),
		chromedp.Click(chromedp.CSS(`.login button[type="submit"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-count="READY"]`)))
	b.waitJS("signed in as olga", `document.querySelector('[data-role="operator"]')?.textContent.includes('olga')`, 10*time.Second)
	b.waitJS("overview shows the members", `document.body.innerText.includes('leader')`, 10*time.Second)
	b.waitJS("upcoming fires", `document.querySelectorAll('svg.timeline circle').length >= 2`, 10*time.Second)

	b.open(base+"/ui/#/tasks?label=team%3Dfinance", `tr[data-task="monthly"]`)
	b.waitJS("label filter", `document.querySelectorAll('tr[data-task]').length === 1`, 5*time.Second)
	b.open(base+"/ui/#/tasks/monthly", `tr.dst`)
	b.waitJS("20 next fires", `document.querySelectorAll('tr.dst').length >= 2`, 5*time.Second)
	b.open(base+"/ui/#/tasks/ended", "#completed")
	b.waitJS("the window, runs used of maxRuns and why it completed", `(() => { const s = document.body.innerText;
		return s.includes('Window') && s.includes('0 of 5 (maxRuns)') && s.includes('endAt') && s.includes('jitter 1m0s') &&
			(document.querySelector('#fires-none')?.textContent || '').startsWith('Completed: endAt'); })()`, 10*time.Second)
	b.shot("task-completed")
	b.open(base+"/ui/#/tasks", `tr[data-task="ended"]`)
	b.waitJS("completed in the task list", `document.querySelector('tr[data-task="ended"]').innerText.includes('completed')`, 5*time.Second)

	// Trigger report with who=browser; the instance page follows it.
	b.open(base+"/ui/#/tasks/report", "#act-trigger")
	if n := evalJS[int](b, `document.querySelectorAll('#act-edit, #act-delete').length`); n != 0 {
		t.Fatalf("an operator sees %d writer buttons (edit, delete)", n)
	}
	// Keys: g i goes to Instances, g t back to Tasks.
	b.waitJS("keyboard", `(() => { for (const k of ['g', 'i']) document.body.dispatchEvent(new KeyboardEvent('keydown', {key: k, bubbles: true})); return location.hash === '#/instances'; })()`, 5*time.Second)
	b.open(base+"/ui/#/tasks/report", "#act-trigger")
	evalJS[chromedp.Void](b, `window.axNoReload = true`)
	b.do("trigger with params", 20*time.Second,
		chromedp.Click(chromedp.CSS("#act-trigger")),
		chromedp.WaitVisible(chromedp.CSS(`dialog input[name="pv"]`)),
		chromedp.SetValue(chromedp.CSS(`dialog input[name="pv"]`), "browser"),
		chromedp.Click(chromedp.CSS(`dialog button[type="submit"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#why`)))
	state := `document.querySelector('h1 + .badge')?.dataset.state`
	b.waitJS("instance READY", state+` === 'READY'`, 15*time.Second)
	b.waitJS("why names the labels", `document.querySelector('#why').innerText.includes('pool=ui')`, 10*time.Second)
	b.shot("instance-ready")
	if _, err := c.StartExecutor("ui-exec", "-token", execTok, "-labels", "pool=ui"); err != nil {
		t.Fatal(err)
	}
	b.waitJS("instance RUNNING", state+` === 'RUNNING'`, 20*time.Second)
	b.waitJS("live output", `document.querySelector('#log').textContent.includes('hello browser')`, 15*time.Second)
	b.shot("instance-running")
	b.waitJS("instance SUCCESS", state+` === 'SUCCESS'`, 20*time.Second)
	b.waitJS("whole output", `document.querySelector('#log').textContent.includes('report done')`, 10*time.Second)
	b.waitJS("the result", `!document.querySelector('#result').hidden && document.querySelector('#result').innerText.includes('"rows": 7')`, 10*time.Second)
	b.waitJS("no reload", `window.axNoReload === true`, time.Second)

	// The trigger form of a task that declares its parameters: a list
	// for the enum, a required number field, the pattern checked by the
	// server (its refusal, naming the parameter, shown in the dialog).
	b.open(base+"/ui/#/tasks/export", "#act-trigger")
	b.do("trigger form from the declarations", 20*time.Second,
		chromedp.Click(chromedp.CSS("#act-trigger")),
		chromedp.WaitVisible(chromedp.CSS(`dialog select[name="region"]`)),
		chromedp.WaitVisible(chromedp.CSS(`dialog input[name="limit"][type="number"][required]`)),
		chromedp.SetValue(chromedp.CSS(`dialog input[name="limit"]`), "5"),
		chromedp.SetValue(chromedp.CSS(`dialog input[name="day"]`), "tomorrow"),
		chromedp.Click(chromedp.CSS(`dialog button[type="submit"]`)))
	b.waitJS("the pattern's refusal", `(document.querySelector('dialog .error')?.textContent || '').includes('params.day')`, 10*time.Second)
	b.checkA11y("the trigger form")
	b.do("trigger with declared params", 20*time.Second,
		chromedp.SetValue(chromedp.CSS(`dialog input[name="day"]`), "2026-12-03"),
		chromedp.SetValue(chromedp.CSS(`dialog select[name="region"]`), "us"),
		chromedp.Click(chromedp.CSS(`dialog button[type="submit"]`)))
	b.waitJS("the instance page", `location.hash.startsWith('#/instances/') && !!document.querySelector('h1 + .badge')`, 20*time.Second)
	exported, err := adm.ListInstances(ctx, model.InstanceFilter{Task: "export"})
	if err != nil || len(exported.Instances) != 1 {
		t.Fatalf("export's instances %+v %v, want the one triggered", exported, err)
	}
	if got := exported.Instances[0].Params; got["region"] != "us" || got["limit"] != "5" || got["day"] != "2026-12-03" {
		t.Fatalf("export's params %v, want those of the form", got)
	}

	// A canary rollout of cleanup: both versions, what changed, the
	// progress; the operator promotes it.
	canary := *tasks[5]
	canary.Action.Command = "echo canary"
	canary.Rollout = &model.RolloutSpec{Percent: 50, PromoteAfter: 3}
	if _, err := adm.PutTask(ctx, &canary); err != nil {
		t.Fatal(err)
	}
	b.open(base+"/ui/#/tasks/cleanup", "#rollout-versions")
	b.waitJS("the rollout's versions, diff and progress", `(() => { const r = document.querySelector('#rollout');
		return r.querySelector('#rollout-versions').textContent.startsWith('Stable v1 · canary v2 on 50% of the fires') &&
			r.querySelector('#rollout-progress').textContent.startsWith('0 of 3 canary successes') &&
			r.querySelector('pre.diff').textContent.includes('+     "command": "echo canary"'); })()`, 10*time.Second)
	b.shot("task-rollout")
	b.do("promote", 20*time.Second, chromedp.Click(chromedp.CSS("#act-promote")))
	b.waitJS("promoted", `document.querySelector('#rollout-phase')?.textContent === 'promoted' && !document.querySelector('#act-promote')`, 15*time.Second)
	if tk, err := adm.GetTask(ctx, "cleanup"); err != nil || tk.Action.Command != "echo canary" {
		t.Fatalf("cleanup after the promotion: %+v %v", tk, err)
	}
	// The next canary (aborted below, after another page).
	canary.Action.Command, canary.Version = "echo canary 2", 0
	if _, err := adm.PutTask(ctx, &canary); err != nil {
		t.Fatal(err)
	}

	// Pause and resume a task from its page.
	b.open(base+"/ui/#/tasks/hourly", "#act-pause")
	b.do("pause", 20*time.Second, chromedp.Click(chromedp.CSS("#act-pause")), chromedp.WaitVisible(chromedp.CSS("#act-resume")))
	if tk, err := adm.GetTask(ctx, "hourly"); err != nil || !tk.Paused {
		t.Fatalf("hourly after Pause: %+v %v", tk, err)
	}
	b.do("resume", 20*time.Second, chromedp.Click(chromedp.CSS("#act-resume")), chromedp.WaitVisible(chromedp.CSS("#act-pause")))
	if tk, err := adm.GetTask(ctx, "hourly"); err != nil || tk.Paused {
		t.Fatalf("hourly after Resume: %+v %v", tk, err)
	}
	// Back on cleanup's page, the new canary is aborted: the stable
	// version stays.
	b.open(base+"/ui/#/tasks/cleanup", "#act-abort")
	b.do("abort", 20*time.Second, chromedp.Click(chromedp.CSS("#act-abort")))
	b.waitJS("aborted", `document.querySelector('#rollout-phase')?.textContent === 'aborted' && !document.querySelector('#act-abort')`, 15*time.Second)
	if tk, err := adm.GetTask(ctx, "cleanup"); err != nil || tk.Action.Command != "echo canary" {
		t.Fatalf("cleanup after the abort: %+v %v", tk, err)
	}

	// Approve a WAITING_APPROVAL instance.
	s, err := adm.Trigger(ctx, "deploy", model.TriggerRequest{})
	if err != nil {
		t.Fatal(err)
	}
	b.open(base+"/ui/#/instances/"+s.ID, "#act-approve")
	b.waitJS("waiting approval", state+` === 'WAITING_APPROVAL'`, 10*time.Second)
	b.shot("instance-approval")
	b.do("approve", 20*time.Second,
		chromedp.Click(chromedp.CSS("#act-approve")),
		chromedp.WaitVisible(chromedp.CSS("#comment")),
		chromedp.SendKeys(chromedp.CSS("#comment"), "checked the diff"),
		chromedp.Click(chromedp.CSS(`dialog button[type="submit"]`)))
	b.waitJS("approved and ran", state+` === 'SUCCESS'`, 20*time.Second)
	b.waitJS("approval in the timeline", `document.body.innerText.includes('checked the diff')`, 10*time.Second)

	// Reject, cancel and terminate, each with its comment: another
	// deploy, stuck's READY instance, long's RUNNING one.
	decide := func(task, act, wantState, comment string) {
		t.Helper()
		s, err := adm.Trigger(ctx, task, model.TriggerRequest{})
		if err != nil {
			t.Fatal(err)
		}
		// The button shows once the instance is in a state it acts on.
		b.open(base+"/ui/#/instances/"+s.ID, "#act-"+act)
		b.do(act, 20*time.Second,
			chromedp.Click(chromedp.CSS("#act-"+act)),
			chromedp.WaitVisible(chromedp.CSS("#comment")),
			chromedp.SendKeys(chromedp.CSS("#comment"), comment),
			chromedp.Click(chromedp.CSS(`dialog button[type="submit"]`)),
			chromedp.WaitNotPresent(chromedp.CSS("dialog")))
		b.waitJS(task+" "+wantState, state+` === '`+wantState+`' && document.body.innerText.includes('`+comment+`')`, 30*time.Second)
	}
	decide("deploy", "reject", model.StateCanceled, "not this week")
	decide("stuck", "cancel", model.StateCanceled, "no such pool")
	decide("long", "terminate", model.StateTerminated, "runs too long")

	// A sharded instance shows its shard grid; a shard links back to it
	// (issue 24; protocol 8: retried until the cluster has reached it).
	fanout := &model.Task{Name: "fanout", Trigger: model.Trigger{Type: model.TriggerEvent},
		Action: model.Action{Type: model.ActionShell, Command: "echo part $AX_SHARD_INDEX"}, Policy: model.Policy{Shards: 3}}
	testkit.Eventually(t, 30*time.Second, func() error { _, err := adm.PutTask(ctx, fanout); return err })
	fs, err := adm.Trigger(ctx, "fanout", model.TriggerRequest{})
	if err != nil {
		t.Fatal(err)
	}
	b.open(base+"/ui/#/instances/"+fs.ID, "#shard-summary")
	b.waitJS("the shard grid", `document.querySelectorAll('#shard-grid a.sq.ok').length === 3 && `+state+` === 'SUCCESS' && `+
		`document.querySelector('#shard-summary').textContent.includes('3 SUCCESS')`, 30*time.Second)
	b.do("open a shard", 10*time.Second, chromedp.Click(chromedp.CSS(`#shard-grid a:nth-child(2)`)), chromedp.WaitVisible(chromedp.CSS("#shard-of")))
	b.waitJS("the shard's place", `document.querySelector('#shard-of').textContent.startsWith('1 of 3 of ')`, 10*time.Second)

	// Backfill the last three hours of hourly and watch its progress;
	// first a range the wrong way round, which the API refuses naming the
	// field, shown in the dialog.
	b.open(base+"/ui/#/tasks/hourly", "#act-backfill")
	b.do("backfill refused", 20*time.Second,
		chromedp.Click(chromedp.CSS("#act-backfill")),
		chromedp.WaitVisible(chromedp.CSS("#bf-from")),
		chromedp.SetValue(chromedp.CSS("#bf-from"), "2026-01-02T00:00"),
		chromedp.SetValue(chromedp.CSS("#bf-to"), "2026-01-01T00:00"),
		chromedp.Click(chromedp.CSS(`dialog button[type="submit"]`)))
	b.waitJS("the API's error in the dialog", `/invalid_argument/.test(document.querySelector('dialog .error')?.textContent)`, 10*time.Second)
	b.checkA11y("the backfill dialog")
	b.do("close the dialog", 10*time.Second, chromedp.Click(chromedp.CSS(`dialog button[type="button"]`)), chromedp.WaitNotPresent(chromedp.CSS("dialog")))
	// Three fire times, all well before the task existed.
	top := time.Now().Truncate(time.Hour)
	from, to := top.Add(-3*time.Hour-30*time.Minute), top.Add(-30*time.Minute)
	b.do("backfill", 20*time.Second,
		chromedp.Click(chromedp.CSS("#act-backfill")),
		chromedp.WaitVisible(chromedp.CSS("#bf-from")),
		chromedp.SetValue(chromedp.CSS("#bf-from"), from.Format("2006-01-02T15:04")),
		chromedp.SetValue(chromedp.CSS("#bf-to"), to.Format("2006-01-02T15:04")),
		chromedp.Click(chromedp.CSS(`dialog button[type="submit"]`)),
		chromedp.WaitVisible(chromedp.CSS("#bf-bar")))
	b.waitJS("backfill finished", `(() => { const p = document.querySelector('#bf-bar'); return p && p.max === 3 && p.value === 3; })()`, 40*time.Second)
	b.waitJS("backfill text", `document.querySelector('#bf-text').textContent.startsWith('3 of 3 finished')`, 5*time.Second)

	b.shot("task")
	// The task page again: today's cell of the calendar is green.
	b.open(base+"/ui/#/tasks", `tr[data-task="hourly"]`)
	b.open(base+"/ui/#/tasks/hourly", ".day.ok")

	if _, err := adm.Trigger(ctx, "flaky", model.TriggerRequest{}); err != nil {
		t.Fatal(err)
	}
	b.open(base+"/ui/#/instances?task=flaky", `tr[data-id]`)
	b.waitJS("the failure shows live", `document.querySelector('tr[data-id] .badge')?.dataset.state === 'FAILED'`, 20*time.Second)
	b.open(base+"/ui/#/instances", `tr[data-id]`)
	b.shot("instances")
	b.open(base+"/ui/#/tasks", `tr[data-task="report"]`)
	b.waitJS("runs strip", `document.querySelectorAll('tr[data-task="hourly"] .sq.ok').length === 3`, 5*time.Second)
	b.shot("tasks")
	b.open(base+"/ui/#/", `[data-count="READY"]`)
	b.waitJS("recent failure", `document.body.innerText.includes('disk full') || document.body.innerText.includes('exit status 3')`, 10*time.Second)
	b.waitJS("its alert", `!!document.querySelector('tr[data-alert="instance_failed:flaky"]')`, 20*time.Second)
	b.shot("overview")

	// Re-run the failed flaky instance from its page: the same instance
	// runs attempt 2 (and fails again).
	fl, err := adm.ListInstances(ctx, model.InstanceFilter{Task: "flaky"})
	if err != nil || len(fl.Instances) != 1 {
		t.Fatalf("flaky instances: %v %v", fl, err)
	}
	b.open(base+"/ui/#/instances/"+fl.Instances[0].ID, "#act-rerun")
	b.do("re-run", 20*time.Second,
		chromedp.Click(chromedp.CSS("#act-rerun")),
		chromedp.WaitVisible(chromedp.CSS(`dialog button[type="submit"]`)),
		chromedp.Click(chromedp.CSS(`dialog button[type="submit"]`)),
		chromedp.WaitNotPresent(chromedp.CSS("dialog")))
	b.waitJS("the re-run in the timeline", `document.body.innerText.includes('re-run by olga')`, 10*time.Second)
	b.waitJS("attempt 2 failed too", `document.body.innerText.includes('attempt 2 failed') && `+state+` === 'FAILED'`, 20*time.Second)

	// The Alerts page: flaky's alert fires. The operator silences it from
	// its row (a bad duration first: the API's refusal names the field),
	// the silence is seen through the API, then removed from the page.
	b.open(base+"/ui/#/alerts", `#alerts-firing tr[data-alert="instance_failed:flaky"]`)
	b.waitJS("nav marks the page", `document.querySelector('[data-nav="alerts"]').getAttribute('aria-current') === 'page'`, 5*time.Second)
	b.do("silence from the alert's row", 20*time.Second,
		chromedp.Click(chromedp.CSS(`tr[data-alert="instance_failed:flaky"] .act-silence`)),
		chromedp.WaitVisible(chromedp.CSS("#sil-for")))
	b.waitJS("the dialog names the alert's task and rule", `document.querySelector('#sil-task').value === 'flaky' && document.querySelector('#sil-rule').value === 'instance_failed'`, 5*time.Second)
	b.checkA11y("the silence dialog")
	b.do("a bad duration", 20*time.Second,
		chromedp.SetValue(chromedp.CSS("#sil-for"), "-1h"),
		chromedp.Click(chromedp.CSS(`dialog button[type="submit"]`)))
	b.waitJS("the API's refusal names the field", `(document.querySelector('dialog .error')?.textContent || '').startsWith('for: ') &&
		document.querySelector('#sil-for').getAttribute('aria-invalid') === 'true'`, 10*time.Second)
	b.do("silence for 2h", 20*time.Second,
		chromedp.SetValue(chromedp.CSS("#sil-for"), "2h"),
		chromedp.SendKeys(chromedp.CSS("#sil-comment"), "disk being replaced"),
		chromedp.Click(chromedp.CSS(`dialog button[type="submit"]`)),
		chromedp.WaitNotPresent(chromedp.CSS("dialog")),
		chromedp.WaitVisible(chromedp.CSS(`#silences tr[data-silence]`)))
	var sils model.SilenceList
	if err := getJSON(ctx, c, boot.Secret, via.HTTPAddr, "/v1/silences", &sils); err != nil {
		t.Fatal(err)
	}
	if len(sils.Silences) != 1 || sils.Silences[0].Task != "flaky" || sils.Silences[0].Rule != "instance_failed" || sils.Silences[0].By != "olga" ||
		sils.Silences[0].Comment != "disk being replaced" || time.Until(sils.Silences[0].Until.Time) < 119*time.Minute || time.Until(sils.Silences[0].Until.Time) > 2*time.Hour {
		t.Fatalf("the silences after the page made one: %+v", sils)
	}
	b.waitJS("the silence's row", `(() => { const r = document.querySelector('#silences tr[data-silence="`+sils.Silences[0].ID+`"]');
		return r && r.innerText.includes('olga') && r.querySelector('.comment').textContent === 'disk being replaced' && r.innerText.includes('rule instance_failed'); })()`, 5*time.Second)
	b.waitJS("the alert is marked silenced", `!!document.querySelector('#alerts-firing tr[data-alert="instance_failed:flaky"] .silenced')`, 10*time.Second)
	b.shot("alerts")
	// Filters: by severity (the alert is critical), by rule, by task.
	b.open(base+"/ui/#/alerts?severity=warning", `#f-severity`)
	b.waitJS("a warning filter hides it", `!document.querySelector('#alerts-firing tr[data-alert="instance_failed:flaky"]') && document.querySelector('#f-severity').value === 'warning'`, 5*time.Second)
	b.open(base+"/ui/#/alerts?rule=instance_failed&task=flaky", `#alerts-firing tr[data-alert="instance_failed:flaky"]`)
	b.waitJS("with its silence", `!!document.querySelector('#silences tr[data-silence]')`, 5*time.Second)
	b.open(base+"/ui/#/alerts?task=report", `#f-task`)
	b.waitJS("another task's filter hides it", `!document.querySelector('tr[data-alert="instance_failed:flaky"]') && !document.querySelector('#silences tr[data-silence]') && document.querySelector('#alerts-history').innerText.trim() === 'No resolved alert matches the filters.'`, 5*time.Second)
	// flaky's page lists the alert that concerns it.
	b.open(base+"/ui/#/tasks/flaky", `#task-alerts tr[data-alert="instance_failed:flaky"]`)
	b.waitJS("as firing", `document.querySelector('#task-alerts tr[data-alert="instance_failed:flaky"]').innerText.includes('firing')`, 5*time.Second)
	// Keys: g a goes to Alerts; the silence is removed by keyboard alone
	// (the button focused, Enter, the dialog's focused button, Enter).
	b.waitJS("g a", `(() => { for (const k of ['g', 'a']) document.body.dispatchEvent(new KeyboardEvent('keydown', {key: k, bubbles: true})); return location.hash === '#/alerts'; })()`, 5*time.Second)
	b.do("unsilence by keyboard", 20*time.Second,
		chromedp.WaitVisible(chromedp.CSS(`#silences tr[data-silence] .act-unsilence`)),
		chromedp.Focus(chromedp.CSS(`#silences tr[data-silence] .act-unsilence`)),
		chromedp.KeyEvent(kb.Enter),
		chromedp.WaitVisible(chromedp.CSS(`dialog button[type="submit"]`)))
	b.waitJS("the dialog's button has the focus", `document.activeElement === document.querySelector('dialog button[type="submit"]')`, 5*time.Second)
	b.do("confirm by keyboard", 20*time.Second,
		chromedp.KeyEvent(kb.Enter),
		chromedp.WaitNotPresent(chromedp.CSS(`#silences tr[data-silence]`)))
	if err := getJSON(ctx, c, boot.Secret, via.HTTPAddr, "/v1/silences", &sils); err != nil || len(sils.Silences) != 0 {
		t.Fatalf("the silences after the page removed it: %+v %v", sils, err)
	}

	// The Executors page: ui-exec, its label, what it runs, its slots.
	b.open(base+"/ui/#/executors", `tr[data-executor="ui-exec"]`)
	b.waitJS("the executor's row", `(() => { const r = document.querySelector('tr[data-executor="ui-exec"]');
		return r.querySelector('.labels').textContent === 'pool=ui' && r.querySelector('.caps').textContent.includes('shell') &&
			/\d+ running \/ \d+ · \d+ free/.test(r.querySelector('.slots').textContent) && r.querySelector('.running').textContent === 'none'; })()`, 10*time.Second)
	b.shot("executors")
	// The Cluster page: three members, the term, a clock offset for each;
	// an operator gets no transfer or remove button.
	b.open(base+"/ui/#/cluster", `tr[data-node]`)
	b.waitJS("the members", `document.querySelectorAll('tr[data-node]').length === 3 && /term \d+/.test(document.querySelector('#cluster-summary').textContent) &&
		[...document.querySelectorAll('tr[data-node] .role')].filter(e => e.textContent === 'leader').length === 1 &&
		[...document.querySelectorAll('tr[data-node] .offset')].every(e => /\d/.test(e.textContent)) &&
		[...document.querySelectorAll('tr[data-node] .lag')].every(e => /^\d+$/.test(e.textContent))`, 15*time.Second)
	if n := evalJS[int](b, `document.querySelectorAll('#act-transfer, .act-transfer, .act-remove').length`); n != 0 {
		t.Fatalf("an operator sees %d admin buttons on the Cluster page", n)
	}
	b.shot("cluster")

	// A phone: one column, nothing wider than the screen.
	b.do("phone width", 10*time.Second, chromedp.EmulateViewport(390, 844))
	b.open(base+"/ui/#/", `[data-count="READY"]`)
	b.waitJS("no horizontal scroll", `document.documentElement.scrollWidth <= window.innerWidth + 1`, 5*time.Second)
	b.shot("overview-phone")
	for _, pg := range []struct{ hash, ready, shot string }{{"#/alerts", `#alerts-firing tr[data-alert]`, "alerts-phone"}, {"#/executors", `tr[data-executor]`, ""},
		{"#/cluster", `tr[data-node]`, "cluster-phone"}} {
		b.open(base+"/ui/"+pg.hash, pg.ready)
		b.waitJS(pg.hash+" fits a phone", `document.documentElement.scrollWidth <= window.innerWidth + 1`, 5*time.Second)
		if pg.shot != "" {
			b.shot(pg.shot)
		}
	}
	b.do("laptop width", 10*time.Second, chromedp.EmulateViewport(1280, 900))

	// A reader sees, without action buttons; a forged action is refused.
	evalJS[chromedp.Void](b, `sessionStorage.clear()`)
	b.open(base+"/ui/#/tasks/report", "#token")
	b.do("sign in as reader", 20*time.Second,
		chromedp.SendKeys(chromedp.CSS("#token"), readTok),
		chromedp.Click(chromedp.CSS(`.login button[type="submit"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-role="reader"]`)))
	b.waitJS("task page for the reader", `document.querySelector('h1')?.textContent === 'report'`, 10*time.Second)
	buttons := evalJS[int](b, `document.querySelectorAll('.actions button').length`)
	if buttons != 0 {
		t.Fatalf("a reader sees %d action buttons", buttons)
	}
	// The new pages, seen by a reader without their buttons.
	for _, pg := range []struct{ hash, ready string }{{"#/alerts", `tr[data-alert="instance_failed:flaky"]`},
		{"#/executors", `tr[data-executor="ui-exec"]`}, {"#/cluster", `tr[data-node]`}} {
		b.open(base+"/ui/"+pg.hash, pg.ready)
		if n := evalJS[int](b, `document.querySelectorAll('#act-silence-new, .act-silence, .act-unsilence, #act-transfer, .act-transfer, .act-remove').length`); n != 0 {
			t.Fatalf("a reader sees %d operator or admin buttons on %s", n, pg.hash)
		}
	}
	// A rollout in progress: the reader sees it, without Promote or Abort.
	canary.Action.Command, canary.Version = "echo canary 3", 0
	if _, err := adm.PutTask(ctx, &canary); err != nil {
		t.Fatal(err)
	}
	b.open(base+"/ui/#/tasks/cleanup", "#rollout-progress")
	b.waitJS("the reader sees the rollout in progress", `(document.querySelector('#rollout-versions')?.textContent || '').includes('canary v') &&
		document.querySelector('#rollout-phase')?.textContent !== 'aborted'`, 10*time.Second)
	if n := evalJS[int](b, `document.querySelectorAll('#act-promote, #act-abort').length`); n != 0 {
		t.Fatalf("a reader sees %d Promote or Abort buttons on a rollout in progress", n)
	}
	b.open(base+"/ui/#/tasks/report", `tr[data-id]`)
	forged := evalJS[string](b, `fetch('/v1/tasks/report/trigger', {method: 'POST', headers: {Authorization: 'Bearer ' + sessionStorage.getItem('ax.token')}})
		.then(async r => r.status + ' ' + (await r.json()).error.code)`)
	if forged != "403 forbidden" {
		t.Fatalf("forged trigger as a reader: %s, want 403 forbidden", forged)
	}
	list, err := adm.ListInstances(ctx, model.InstanceFilter{Task: "report"})
	if err != nil || len(list.Instances) != 1 {
		t.Fatalf("report instances after the forged trigger: %v %v", list, err)
	}
	// A writer (here the admin) edits a definition; the history shows the
	// change as a diff.
	b.do("sign out", 10*time.Second, chromedp.Click(chromedp.CSS("#who button")), chromedp.WaitVisible(chromedp.CSS("#token")))
	if tok := evalJS[string](b, `sessionStorage.getItem('ax.token') || ''`); tok != "" {
		t.Fatal("the token outlived sign-out")
	}
	b.do("sign in as admin", 20*time.Second,
		chromedp.SendKeys(chromedp.CSS("#token"), boot.Secret),
		chromedp.Click(chromedp.CSS(`.login button[type="submit"]`)),
		chromedp.WaitVisible(chromedp.CSS("#act-edit")))
	b.do("edit", 20*time.Second,
		chromedp.Click(chromedp.CSS("#act-edit")),
		chromedp.WaitVisible(chromedp.CSS("#task-def")),
		chromedp.Click(chromedp.CSS(`input[name="fmt"][value="json"]`)))
	b.checkA11y("the edit dialog")
	evalJS[chromedp.Void](b, `(() => { const ta = document.querySelector('#task-def'); const d = JSON.parse(ta.value); d.labels.team = 'analytics'; ta.value = JSON.stringify(d, null, 2); })()`)
	b.do("dry run, then save", 20*time.Second, chromedp.Click(chromedp.CSS(`dialog button[type="submit"]`)), chromedp.WaitVisible(chromedp.CSS("#plan-op")),
		chromedp.Click(chromedp.CSS(`dialog button[type="submit"]`)), chromedp.WaitNotPresent(chromedp.CSS("dialog")))
	b.waitJS("the new version's diff", `[...document.querySelectorAll('.diff .add')].some(e => e.textContent.includes('"team": "analytics"'))`, 10*time.Second)
	got, err := adm.GetTask(ctx, "report")
	if err != nil || got.Labels["team"] != "analytics" || got.Version != 2 {
		t.Fatalf("after the edit: %+v %v", got, err)
	}

	// An admin moves the leadership to the other follower, then removes
	// the old leader from the cluster, both from the Cluster page.
	leader, err = c.Leader(ctx, 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var other *localcluster.Node
	for _, n := range c.Nodes {
		if n != leader && n != via {
			other = n
		}
	}
	b.open(base+"/ui/#/cluster", `tr[data-node="`+other.ID+`"] .act-transfer`)
	b.do("make the other follower the leader", 20*time.Second,
		chromedp.Click(chromedp.CSS(`tr[data-node="`+other.ID+`"] .act-transfer`)),
		chromedp.WaitVisible(chromedp.CSS(`dialog button[type="submit"]`)),
		chromedp.Click(chromedp.CSS(`dialog button[type="submit"]`)),
		chromedp.WaitNotPresent(chromedp.CSS("dialog")))
	testkit.Eventually(t, 20*time.Second, func() error {
		st, err := adm.Cluster(ctx)
		if err != nil || st.Leader != other.ID {
			return fmt.Errorf("leader %v %v, want %s", st, err, other.ID)
		}
		return nil
	})
	b.waitJS("the page shows the new leader", `document.querySelector('tr[data-node="`+other.ID+`"] .role').textContent === 'leader'`, 15*time.Second)
	b.do("remove the old leader", 20*time.Second,
		chromedp.Click(chromedp.CSS(`tr[data-node="`+leader.ID+`"] .act-remove`)),
		chromedp.WaitVisible(chromedp.CSS("#remove-name")))
	b.checkA11y("the remove dialog")
	b.do("confirm the removal", 20*time.Second,
		chromedp.SendKeys(chromedp.CSS("#remove-name"), leader.ID),
		chromedp.Click(chromedp.CSS(`dialog button[type="submit"]`)),
		chromedp.WaitNotPresent(chromedp.CSS("dialog")))
	// Asked through the follower on screen: the removed node has no
	// leader to answer with.
	testkit.Eventually(t, 20*time.Second, func() error {
		cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		var st model.ClusterStatus
		if err := getJSON(cctx, c, boot.Secret, via.HTTPAddr, "/v1/cluster", &st); err != nil || len(st.Nodes) != 2 {
			return fmt.Errorf("members %+v %v, want 2", st, err)
		}
		return nil
	})
	b.waitJS("two members left", `document.querySelectorAll('tr[data-node]').length === 2 && !document.querySelector('tr[data-node="`+leader.ID+`"]')`, 15*time.Second)
	t.Logf("screenshots in %s", b.shots)
}

// getJSON GETs path as token through addr of c and decodes the answer
// into out; an answer other than 200 is an error.
func getJSON(ctx context.Context, c *localcluster.Cluster, token, addr, path string, out any) error {
	body, err := call(ctx, c, http.MethodGet, token, addr, path, nil)
	if err != nil {
		return err
	}
	return json.Unmarshal(body, out)
}

// putDef PUTs a definition (a calendar, a window) as token through addr
// of c; an answer other than 200 is an error, so that callers can retry
// until a new cluster has reached protocol 8.
func putDef(ctx context.Context, c *localcluster.Cluster, token, addr, path string, def any) error {
	body, err := json.Marshal(def)
	if err != nil {
		return err
	}
	_, err = call(ctx, c, http.MethodPut, token, addr, path, body)
	return err
}

// call sends a request (a JSON body when body is not nil) as token
// through addr of c (over its TLS, if it has) and answers the body of a
// 200; another status is an error.
func call(ctx context.Context, c *localcluster.Cluster, method, token, addr, path string, body []byte) ([]byte, error) {
	scheme, hc := "http://", http.DefaultClient
	if c.TLS() != nil {
		scheme, hc = "https://", &http.Client{Transport: &http.Transport{TLSClientConfig: c.TLS()}}
	}
	req, err := http.NewRequestWithContext(ctx, method, scheme+addr+path, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, out)
	}
	return out, nil
}

// putDefinitions makes, as the admin through via, what the Calendars,
// Windows and Pools pages show (walkDefinitions): a calendar, two
// windows (freeze, active now, holds the tasks labelled team=pay; later
// holds every task from 3 h on), a pool with a rate limit, and the tasks
// using them (stage names the pool, payroll the calendar, sync is held by
// freeze).
func putDefinitions(t *testing.T, ctx context.Context, c *localcluster.Cluster, adm *client.Client, token, via string) {
	t.Helper()
	testkit.Eventually(t, 30*time.Second, func() error { // protocol 8: a new cluster gets there
		return putDef(ctx, c, token, via, "/v1/calendars/holidays", map[string]any{"timezone": "Europe/Berlin",
			"exclude": []string{"sat", "sun", "2026-12-25", "2026-12-24/2026-12-26"}, "include": []string{"2026-12-19"}})
	})
	now := time.Now().UTC()
	wall := func(d time.Duration) string { return now.Add(d).Format("2006-01-02T15:04") }
	for path, def := range map[string]map[string]any{
		"/v1/windows/freeze":  {"timezone": "UTC", "ranges": []string{wall(-time.Hour) + "/" + wall(2*time.Hour)}, "selector": map[string]string{"team": "pay"}},
		"/v1/windows/later":   {"timezone": "UTC", "ranges": []string{wall(3*time.Hour) + "/" + wall(4*time.Hour)}},
		"/v1/pools/warehouse": {"slots": 2, "description": "loads", "rateLimit": map[string]any{"count": 10, "per": "1m"}},
	} {
		if err := putDef(ctx, c, token, via, path, def); err != nil {
			t.Fatal(err)
		}
	}
	for _, task := range []*model.Task{
		{Name: "stage", Trigger: model.Trigger{Type: model.TriggerEvent}, Action: model.Action{Type: model.ActionShell, Command: "true"},
			Policy: model.Policy{Pool: "warehouse"}},
		{Name: "payroll", Trigger: model.Trigger{Type: model.TriggerCron, Expression: "0 9 * * *", Timezone: "Europe/Berlin",
			Calendars: []string{"holidays"}, OnExcluded: "next"}, Action: model.Action{Type: model.ActionShell, Command: "true"}},
		{Name: "sync", Trigger: model.Trigger{Type: model.TriggerCron, Expression: "*/15 * * * *"},
			Action: model.Action{Type: model.ActionShell, Command: "true"}, Labels: map[string]string{"team": "pay"}},
	} {
		if _, err := adm.PutTask(ctx, task); err != nil {
			t.Fatalf("put %s: %v", task.Name, err)
		}
	}
}

// walkDefinitions walks the Calendars, Windows and Pools pages as role
// (signed in) after putDefinitions: every role sees the calendar (its
// excluded days, the tasks using it), freeze active holding sync, later
// to come holding every task, the pool's slots, rate limit and users, and
// the task pages that show them (payroll's calendar, sync's fires held
// back; walked as a reader and when full); only a writer and an admin
// get the forms and delete buttons.
// The writer (full) walks the forms: a new calendar refused, the API's
// error naming the entry and its field marked, then created and deleted;
// the pool's slots replaced; its delete refused while a task names it.
func walkDefinitions(t *testing.T, b *browser, ctx context.Context, adm *client.Client, base, role string, full bool) {
	t.Helper()
	writes := role == model.RoleWriter || role == model.RoleAdmin
	buttons := func(page string) {
		t.Helper()
		n := evalJS[int](b, `document.querySelectorAll('#act-new, .act-edit, .act-delete').length`)
		if writes && n == 0 || !writes && n != 0 {
			t.Errorf("%s sees %d writer buttons on %s", role, n, page)
		}
	}
	b.open(base+"#/calendars", `tr[data-calendar="holidays"]`)
	b.waitJS("the calendar's row", `(() => { const r = document.querySelector('tr[data-calendar="holidays"]'); return r.querySelector('.exclude').innerText.includes('every sat, sun') &&
		r.querySelector('.exclude').innerText.includes('2026-12-24/2026-12-26') && r.querySelector('.include').innerText.includes('2026-12-19') &&
		r.innerText.includes('Europe/Berlin') && !!r.querySelector('.used-by a[href="#/tasks/payroll"]'); })()`, 10*time.Second)
	b.waitJS("nav marks the page", `document.querySelector('[data-nav="calendars"]').getAttribute('aria-current') === 'page'`, 5*time.Second)
	buttons("#/calendars")
	if full {
		b.do("new calendar refused", 20*time.Second,
			chromedp.Click(chromedp.CSS("#act-new")),
			chromedp.WaitVisible(chromedp.CSS("#def-name")),
			chromedp.SendKeys(chromedp.CSS("#def-name"), "closures"),
			chromedp.SetValue(chromedp.CSS("#cal-exclude"), "2026-12-31\n2026-13-01"),
			chromedp.Click(chromedp.CSS(`dialog button[type="submit"]`)))
		b.waitJS("the API's refusal names the entry", `(document.querySelector('dialog .error')?.textContent || '').startsWith('exclude[1]') &&
			document.querySelector('#cal-exclude').getAttribute('aria-invalid') === 'true'`, 10*time.Second)
		b.checkA11y("the calendar form")
		b.do("new calendar", 20*time.Second,
			chromedp.SetValue(chromedp.CSS("#cal-exclude"), "2026-12-31\nsunday"),
			chromedp.Click(chromedp.CSS(`dialog button[type="submit"]`)),
			chromedp.WaitNotPresent(chromedp.CSS("dialog")),
			chromedp.WaitVisible(chromedp.CSS(`tr[data-calendar="closures"]`)))
		b.waitJS("its row", `document.querySelector('tr[data-calendar="closures"] .exclude').innerText.includes('every sunday')`, 5*time.Second)
		b.shot("calendars")
		b.do("delete it", 20*time.Second,
			chromedp.Click(chromedp.CSS(`tr[data-calendar="closures"] .act-delete`)),
			chromedp.WaitVisible(chromedp.CSS(`dialog button[type="submit"]`)),
			chromedp.Click(chromedp.CSS(`dialog button[type="submit"]`)),
			chromedp.WaitNotPresent(chromedp.CSS(`tr[data-calendar="closures"]`)))
	}

	b.open(base+"#/windows", `tr[data-window="freeze"]`)
	b.waitJS("freeze is active and holds sync, the team=pay task", `(() => { const r = document.querySelector('tr[data-window="freeze"]');
		return r.classList.contains('held') && r.querySelector('.status .active')?.textContent.startsWith('active until ') &&
			!!r.querySelector('.held-tasks a[href="#/tasks/sync"]') && !r.querySelector('.held-tasks a[href="#/tasks/payroll"]') &&
			r.innerText.includes('team=pay'); })()`, 10*time.Second)
	b.waitJS("later is to come and holds every task", `(() => { const r = document.querySelector('tr[data-window="later"]');
		return !r.classList.contains('held') && !r.querySelector('.active') && r.querySelector('.status .next')?.textContent.startsWith('next ') &&
			r.innerText.includes('every task') && !!r.querySelector('.held-tasks a[href="#/tasks/payroll"]'); })()`, 10*time.Second)
	buttons("#/windows")
	if full {
		b.shot("windows")
	}

	b.open(base+"#/pools", `tr[data-pool="warehouse"]`)
	slots := 2
	if p, err := adm.GetPool(ctx, "warehouse"); err == nil {
		slots = p.Slots
	}
	b.waitJS("the pool's row", fmt.Sprintf(`(() => { const r = document.querySelector('tr[data-pool="warehouse"]');
		return r.querySelector('.busy').innerText.includes('0 of %d') && r.querySelector('.queued').innerText === '0' &&
			r.querySelector('.rate').innerText === '10 per 1m' && !!r.querySelector('.used-by a[href="#/tasks/stage"]'); })()`, slots), 10*time.Second)
	buttons("#/pools")
	if full {
		b.do("replace its slots", 20*time.Second,
			chromedp.Click(chromedp.CSS(`tr[data-pool="warehouse"] .act-edit`)),
			chromedp.WaitVisible(chromedp.CSS("#pool-slots")),
			chromedp.SetValue(chromedp.CSS("#pool-slots"), "3"),
			chromedp.Click(chromedp.CSS(`dialog button[type="submit"]`)),
			chromedp.WaitNotPresent(chromedp.CSS("dialog")))
		b.waitJS("three slots", `document.querySelector('tr[data-pool="warehouse"] .busy').innerText.includes('0 of 3')`, 10*time.Second)
		if p, err := adm.GetPool(ctx, "warehouse"); err != nil || p.Slots != 3 || p.RateLimit == nil || p.RateLimit.Count != 10 {
			t.Fatalf("the pool after the form: %+v %v", p, err)
		}
		b.do("delete it while stage names it", 20*time.Second,
			chromedp.Click(chromedp.CSS(`tr[data-pool="warehouse"] .act-delete`)),
			chromedp.WaitVisible(chromedp.CSS(`dialog button[type="submit"]`)),
			chromedp.Click(chromedp.CSS(`dialog button[type="submit"]`)))
		b.waitJS("the refusal is shown", `/used by task\(s\) stage/.test(document.querySelector('dialog .error')?.textContent || '')`, 10*time.Second)
		b.checkA11y("the pools page, a refusal shown")
		b.do("close the refused delete", 10*time.Second,
			chromedp.Click(chromedp.CSS(`dialog button[type="button"]`)),
			chromedp.WaitNotPresent(chromedp.CSS("dialog")))
		b.shot("pools")
	}

	// The task pages: payroll names the calendar; sync's next fires in
	// the next two hours are held by freeze, those 3–4 h on by later (as
	// a reader and the writer: what the roles between see is the same).
	if role != model.RoleReader && !full {
		return
	}
	b.open(base+"#/tasks/payroll", "#calendars")
	b.waitJS("payroll's calendar", `(() => { const e = document.querySelector('#calendars');
		return e.querySelector('a[href="#/calendars"]')?.textContent === 'holidays' && e.textContent.includes('on an excluded day: next'); })()`, 5*time.Second)
	b.open(base+"#/tasks/sync", `tr[data-held-by="freeze"]`)
	b.waitJS("sync's fires held back", `(() => { const held = [...document.querySelectorAll('tr[data-held-by]')];
		return held.filter(r => r.dataset.heldBy === 'freeze').length >= 6 && held.every(r => r.innerText.includes('held by window ' + r.dataset.heldBy + ' until ')) &&
			held.some(r => r.dataset.heldBy === 'later') && held.length < document.querySelectorAll('tr').length - 1; })()`, 10*time.Second)
	if full {
		b.shot("task-held")
	}
}

// TestUI_UpcomingTruncated (issue 25): when the overview's hour holds
// more fires than it asks for (500), its upcoming timeline ends at the
// last fire it got and says so; drawn to the hour's end, it showed every
// task stopping there (a task firing every second stopped at 8 min).
func TestUI_UpcomingTruncated(t *testing.T) {
	b := newBrowser(t)
	c := startCluster(t, 1)
	ctx := ctxT(t, 2*time.Minute)
	// Every second: 3,600 fires in the hour. No executor has its label,
	// so the few instances the test's seconds fire wait READY.
	task := &model.Task{Name: "every-second", Trigger: model.Trigger{Type: model.TriggerInterval, Every: model.Duration(time.Second)},
		Action: model.Action{Type: model.ActionShell, Command: "true"},
		Policy: model.Policy{MaxConcurrency: 1000, ExecutorLabels: map[string]string{"nowhere": "x"}}}
	if _, err := c.Client().PutTask(ctx, task); err != nil {
		t.Fatal(err)
	}
	b.open("http://"+c.Nodes[0].HTTPAddr+"/ui/#/", "#upcoming-note")
	b.waitJS("the note of a truncated window", `document.querySelector('#upcoming-note').textContent.startsWith('the first 500 fires, up to ')`, 20*time.Second)
	// The chart's last tick is the last fire's time, minutes from now, not
	// the hour's end.
	b.waitJS("the chart ends at the last fire", `(() => {
		const ticks = [...document.querySelectorAll('svg.timeline .tick')].map(e => e.textContent);
		const note = document.querySelector('#upcoming-note').textContent;
		return ticks.length > 0 && note.includes('up to ' + ticks[ticks.length - 1]);
	})()`, 10*time.Second)
}
