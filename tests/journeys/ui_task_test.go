package journeys

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/ax-scheduler/ax/internal/testkit"
	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/model/live"
)

// TestUI_TaskPage (issue 25) drives the task page and the task editor in
// a real browser through a follower of a three-node cluster with TLS and
// ACLs: the dependency graph (dependsOn, onSuccess, onFailure, upstream
// and downstream, each task's newest instance, its nodes links reachable
// by keyboard, its text alternative); the run calendar's dated labels in
// the task's zone; the next fires paged exactly, maxRuns counted across
// pages; a writer creating a task from YAML and from JSON, a bad field
// refused naming it, an edit shown as a dry-run diff then saved and read
// back through the API, a concurrent edit refused; an operator and a
// reader without the editor. axe-core checks every page and dialog.
func TestUI_TaskPage(t *testing.T) {
	b := newBrowser(t, acceptTestCA)
	c := startCluster(t, 3, withTLS(t.TempDir()))
	ctx := ctxT(t, 4*time.Minute)
	boot, err := tokenClient(c, "").ACLBootstrap(ctx)
	if err != nil {
		t.Fatal(err)
	}
	adm := tokenClient(c, boot.Secret)
	writeTok := createToken(t, ctx, adm, model.ACLTokenRequest{Name: "wendy", Role: model.RoleWriter})
	opTok := createToken(t, ctx, adm, model.ACLTokenRequest{Name: "olga", Role: model.RoleOperator})
	readTok := createToken(t, ctx, adm, model.ACLTokenRequest{Name: "rita", Role: model.RoleReader})

	// ingest → extract → transform → load, transform's success runs
	// report, extract's failure runs page; alone has no links; every5
	// fires every five minutes in Berlin, capped has 25 runs.
	shell := model.Action{Type: model.ActionShell, Command: "true"}
	daily := model.Trigger{Type: model.TriggerCron, Expression: "0 3 * * *", Timezone: "Europe/Berlin"}
	for _, task := range []*model.Task{
		{Name: "ingest", Trigger: daily, Action: shell},
		{Name: "page", Trigger: model.Trigger{Type: model.TriggerEvent}, Action: shell},
		{Name: "report", Trigger: model.Trigger{Type: model.TriggerEvent}, Action: shell},
		{Name: "extract", Trigger: daily, Action: shell, Policy: model.Policy{DependsOn: []string{"ingest"}, OnFailure: []string{"page"}}},
		{Name: "transform", Trigger: daily, Action: shell, Policy: model.Policy{DependsOn: []string{"extract"}, OnSuccess: []model.Chain{{Task: "report"}}}},
		{Name: "load", Trigger: daily, Action: shell, Policy: model.Policy{DependsOn: []string{"transform"}}},
		{Name: "alone", Trigger: daily, Action: shell},
		{Name: "every5", Trigger: model.Trigger{Type: model.TriggerCron, Expression: "*/5 * * * *", Timezone: "Europe/Berlin"}, Action: shell},
	} {
		if _, err := adm.PutTask(ctx, task); err != nil {
			t.Fatalf("put %s: %v", task.Name, err)
		}
	}
	// maxRuns is protocol 7: retried until the new cluster has reached it.
	capped := &model.Task{Name: "capped", Trigger: model.Trigger{Type: model.TriggerCron, Expression: "0 * * * *", MaxRuns: 25}, Action: shell}
	testkit.Eventually(t, 30*time.Second, func() error { _, err := adm.PutTask(ctx, capped); return err })
	// extract's newest instance waits READY (no executor runs).
	if _, err := adm.Trigger(ctx, "extract", model.TriggerRequest{}); err != nil {
		t.Fatal(err)
	}

	_, followers := leaderAndFollowers(ctx, t, c)
	via := followers[0].HTTPAddr
	base := "https://" + via
	// signIn signs out whoever is signed in, signs in with token and goes
	// to hash.
	signIn := func(who, token, hash, ready string) {
		t.Helper()
		if evalJS[bool](b, `!!document.querySelector('#who button')`) {
			b.do("sign out", 10*time.Second, chromedp.Click(chromedp.CSS("#who button")), chromedp.WaitVisible(chromedp.CSS("#token")))
		}
		b.do("sign in as "+who, 20*time.Second,
			chromedp.SendKeys(chromedp.CSS("#token"), token),
			chromedp.Click(chromedp.CSS(`.login button[type="submit"]`)),
			chromedp.WaitNotPresent(chromedp.CSS("#token")))
		evalJS[chromedp.Void](b, `location.hash = `+jsString(hash))
		b.do("open "+hash, 20*time.Second, chromedp.WaitVisible(chromedp.CSS(ready)))
		b.checkA11y(hash + " as " + who)
	}
	b.open(base+"/ui/", "#token")
	signIn("reader", readTok, "#/tasks/transform", `#dep-graph`)

	// The graph of transform: upstream extract and ingest, downstream
	// load and report; extract with its READY instance; links to each.
	b.open(base+"/ui/#/tasks/transform", `#dep-graph a[data-task="extract"]`)
	b.waitJS("the graph's nodes and edges", `(() => { const g = document.querySelector('#dep-graph');
		const links = [...g.querySelectorAll('a[data-task]')].map(a => a.dataset.task).sort().join(' ');
		return links === 'extract ingest load report' && !!g.querySelector('g.here[data-task="transform"]') && g.querySelectorAll('path.edge').length === 4 &&
			g.querySelectorAll('path.edge.onSuccess').length === 1 && !document.querySelector('#graph-truncated') &&
			g.querySelector('a[data-task="extract"]').getAttribute('aria-label').startsWith('extract READY, upstream, 1 link away') &&
			g.querySelector('a[data-task="ingest"]').getAttribute('aria-label').startsWith('ingest never ran, upstream, 2 links away') &&
			g.querySelector('a[data-task="report"]').getAttribute('aria-label').includes('downstream'); })()`, 10*time.Second)
	b.waitJS("the graph as text", `(() => { const s = document.querySelector('#graph-text').textContent;
		return s.includes('transform depends on extract') && s.includes('report runs on success of transform') && s.includes('load depends on transform'); })()`, 5*time.Second)
	b.waitJS("dependsOn as links, not JSON", `(() => { const dd = [...document.querySelectorAll('dl.def dt')].find(e => e.textContent === 'policy.dependsOn')?.nextElementSibling;
		return dd && dd.querySelector('a[href="#/tasks/extract"]') && !dd.textContent.includes('['); })()`, 5*time.Second)
	b.shot("task-graph")
	// By keyboard: Tab reaches the node of load, Enter opens its page.
	tabTo(b, `#dep-graph a[data-task="load"]`, 60)
	b.do("open load by keyboard", 10*time.Second, chromedp.KeyEvent(kb.Enter))
	b.waitJS("load's page", `location.hash === '#/tasks/load' && !!document.querySelector('#dep-graph a[data-task="transform"]')`, 10*time.Second)
	// extract's graph has its onFailure edge to page; alone has none.
	b.open(base+"/ui/#/tasks/extract", `#dep-graph a[data-task="page"]`)
	b.waitJS("onFailure", `document.querySelectorAll('#dep-graph path.edge.onFailure').length === 1`, 5*time.Second)
	b.open(base+"/ui/#/tasks/alone", `#graph-none`)

	// The calendar of extract: weeks headed by month and day, in Berlin,
	// today marked with today's instance.
	today := time.Now().In(mustLoc(t, "Europe/Berlin"))
	sunday := today.AddDate(0, 0, -int(today.Weekday())) // heads the last column
	b.open(base+"/ui/#/tasks/extract", `#run-calendar .day.today`)
	b.waitJS("dated calendar", fmt.Sprintf(`(() => { const cal = document.querySelector('#run-calendar');
		const head = [...cal.querySelectorAll('thead th')].map(th => th.textContent).join('|');
		const cell = cal.querySelector('.day.today');
		const last = [...cal.querySelectorAll('thead th')].pop();
		return cal.querySelector('caption').textContent.includes('Europe/Berlin') && head.includes(%q) && cal.querySelectorAll('thead th').length >= 14 &&
			last.dataset.week === %q && last.textContent.includes('Week of ' + %q) &&
			[...cal.querySelectorAll('tbody th')].map(th => th.textContent).join(' ') === 'Sun Mon Tue Wed Thu Fri Sat' &&
			cell.dataset.date === %q && cell.getAttribute('aria-label').includes('1 READY'); })()`,
		sunday.Format("Jan"), sunday.Format("2006-01-02"), sunday.Format("Jan 2"), today.Format("2006-01-02")), 10*time.Second)

	// A task in a zone whose date is not UTC's now: its instance is
	// counted on that zone's today, and the calendar ends on that day (it
	// ended on UTC's, the instance's day not drawn).
	zone := "Pacific/Kiritimati" // UTC+14: tomorrow from 10:00 UTC
	if time.Now().UTC().Hour() < 10 {
		zone = "Pacific/Pago_Pago" // UTC-11: yesterday until 11:00 UTC
	}
	far := &model.Task{Name: "far", Trigger: model.Trigger{Type: model.TriggerCron, Expression: "0 3 * * *", Timezone: zone}, Action: shell}
	if _, err := adm.PutTask(ctx, far); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.Trigger(ctx, "far", model.TriggerRequest{}); err != nil {
		t.Fatal(err)
	}
	farDay := time.Now().In(mustLoc(t, zone)).Format("2006-01-02")
	b.open(base+"/ui/#/tasks/far", `#run-calendar .day.today`)
	b.waitJS("today in "+zone, fmt.Sprintf(`(() => { const cell = document.querySelector('#run-calendar [data-date=%q]');
		return cell && cell.classList.contains('today') && cell.getAttribute('aria-label').includes('1 READY') &&
			document.querySelector('#run-calendar caption').textContent.includes(%q); })()`, farDay, zone), 10*time.Second)

	// Next fires, paged: 20, then 20 more equal to the API's fires 21 to
	// 40; capped stops at its 25 runs.
	b.open(base+"/ui/#/tasks/every5", `#fires-more`)
	b.waitJS("20 fires", `document.querySelector('#fires-count').textContent === '20 fires shown'`, 5*time.Second)
	b.do("show more", 10*time.Second, chromedp.Click(chromedp.CSS("#fires-more")))
	b.waitJS("40 fires", `document.querySelector('#fires-count').textContent === '40 fires shown'`, 10*time.Second)
	var fires live.TaskFires
	if err := getJSON(ctx, c, readTok, via, "/v1/tasks/every5/fires?n=40", &fires); err != nil || len(fires.Fires) != 40 {
		t.Fatalf("40 fires from the API: %d %v", len(fires.Fires), err)
	}
	var want []string
	for _, f := range fires.Fires {
		want = append(want, strings.Replace(f.Local, "T", " ", 1)[:19])
	}
	got := evalJS[[]string](b, `[...document.querySelectorAll('#next-fires tbody tr')].map(r => r.cells[1].textContent.slice(0, 19))`)
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("the page's 40 fires differ from the API's:\npage %v\napi  %v", got, want)
	}
	b.open(base+"/ui/#/tasks/capped", `#fires-more`)
	b.do("capped: show more", 10*time.Second, chromedp.Click(chromedp.CSS("#fires-more")))
	b.waitJS("25 fires, no more", `document.querySelector('#fires-count').textContent === '25 fires shown: no more' && document.querySelector('#fires-more').hidden`, 10*time.Second)

	// Neither a reader nor an operator gets the editor.
	for _, r := range []struct{ who, token string }{{"reader", readTok}, {"operator", opTok}} {
		signIn(r.who, r.token, "#/tasks", `tr[data-task="extract"]`)
		b.open(base+"/ui/#/tasks/extract", "#dep-graph")
		if n := evalJS[int](b, `document.querySelectorAll('#act-new, #act-edit').length`); n != 0 {
			t.Fatalf("a %s sees %d editor buttons on the task page", r.who, n)
		}
		b.open(base+"/ui/#/tasks", `tr[data-task="extract"]`)
		if n := evalJS[int](b, `document.querySelectorAll('#act-new, #act-edit').length`); n != 0 {
			t.Fatalf("a %s sees %d editor buttons on the tasks list", r.who, n)
		}
	}

	// A writer creates nightly from YAML: the dry run shows what would
	// be created, the save creates it.
	signIn("writer", writeTok, "#/tasks", "#act-new")
	const nightlyYAML = "trigger:\n  type: cron\n  expression: \"30 1 * * *\"\n  timezone: Europe/Berlin\naction:\n  type: shell\n  command: |\n    echo nightly\n    echo done\npolicy:\n  dependsOn:\n    - extract\n  maxRetries: 2\nlabels:\n  team: data\nparams:\n  region:\n    enum:\n      - eu\n      - us\n    default: eu\n"
	newTask := func(name, format, text string) {
		t.Helper()
		b.do("new task "+name, 20*time.Second,
			chromedp.Click(chromedp.CSS("#act-new")),
			chromedp.WaitVisible(chromedp.CSS("#task-def")),
			chromedp.Click(chromedp.CSS(`input[name="fmt"][value="`+format+`"]`)),
			chromedp.SendKeys(chromedp.CSS("#def-name"), name),
			chromedp.SetValue(chromedp.CSS("#task-def"), text),
			chromedp.Click(chromedp.CSS(`dialog button[type="submit"]`)))
	}
	newTask("nightly", "yaml", nightlyYAML)
	b.waitJS("the dry run's plan", `document.querySelector('#plan-op')?.dataset.op === 'create' &&
		[...document.querySelectorAll('#def-plan .diff .add')].some(e => e.textContent.includes('echo nightly')) &&
		document.querySelector('dialog button[type="submit"]').textContent === 'Save'`, 10*time.Second)
	b.checkA11y("the editor with a dry run")
	b.do("save nightly", 20*time.Second, chromedp.Click(chromedp.CSS(`dialog button[type="submit"]`)), chromedp.WaitNotPresent(chromedp.CSS("dialog")))
	b.waitJS("nightly's page", `location.hash === '#/tasks/nightly' && !!document.querySelector('#dep-graph a[data-task="extract"]')`, 10*time.Second)
	nightly, err := adm.GetTask(ctx, "nightly")
	if err != nil || nightly.Trigger.Expression != "30 1 * * *" || nightly.Action.Command != "echo nightly\necho done\n" || nightly.Policy.MaxRetries != 2 ||
		nightly.Labels["team"] != "data" || nightly.Version != 1 || nightly.UpdatedBy != "wendy" || len(nightly.Params["region"].Enum) != 2 {
		t.Fatalf("nightly as the API reads it: %+v %v", nightly, err)
	}

	// From JSON; then a bad field, refused naming it, nothing written.
	b.open(base+"/ui/#/tasks", "#act-new")
	newTask("hourly-json", "json", `{"trigger": {"type": "interval", "every": "1h"}, "action": {"type": "shell", "command": "echo json"}}`)
	b.waitJS("the JSON dry run", `document.querySelector('#plan-op')?.dataset.op === 'create'`, 10*time.Second)
	b.do("save hourly-json", 20*time.Second, chromedp.Click(chromedp.CSS(`dialog button[type="submit"]`)), chromedp.WaitNotPresent(chromedp.CSS("dialog")))
	if h, err := adm.GetTask(ctx, "hourly-json"); err != nil || h.Trigger.Every != model.Duration(time.Hour) || h.Action.Command != "echo json" {
		t.Fatalf("hourly-json as the API reads it: %+v %v", h, err)
	}
	b.open(base+"/ui/#/tasks", "#act-new")
	newTask("bad", "yaml", strings.Replace(nightlyYAML, "  maxRetries: 2\n", "  maxRetries: 2\n  retryIntervall: 5m\n", 1))
	b.waitJS("the refusal names the field", `(document.querySelector('dialog .error')?.textContent || '').startsWith('policy.retryIntervall: unknown field')`, 10*time.Second)
	b.do("fix it to a bad value", 10*time.Second,
		chromedp.SetValue(chromedp.CSS("#task-def"), strings.Replace(nightlyYAML, "30 1 * * *", "61 1 * * *", 1)),
		chromedp.Click(chromedp.CSS(`dialog button[type="submit"]`)))
	b.waitJS("the refusal names the expression", `(document.querySelector('dialog .error')?.textContent || '').startsWith('trigger.expression')`, 10*time.Second)
	b.do("cancel", 10*time.Second, chromedp.Click(chromedp.CSS(`dialog button[type="button"]`)), chromedp.WaitNotPresent(chromedp.CSS("dialog")))
	if _, err := adm.GetTask(ctx, "bad"); err == nil {
		t.Fatal("the refused task exists")
	}

	// Edit nightly as YAML: prefilled with its definition and version,
	// the dry run's diff, the save, read back.
	edit := func() {
		t.Helper()
		b.open(base+"/ui/#/tasks/nightly", "#act-edit")
		b.do("edit nightly", 20*time.Second,
			chromedp.Click(chromedp.CSS("#act-edit")),
			chromedp.WaitVisible(chromedp.CSS("#task-def")),
			chromedp.Click(chromedp.CSS(`input[name="fmt"][value="yaml"]`)))
	}
	edit()
	text := evalJS[string](b, `document.querySelector('#task-def').value`)
	if !strings.Contains(text, "version: 1\n") || !strings.Contains(text, "    echo nightly\n") || strings.Contains(text, "createdAt") {
		t.Fatalf("the editor's YAML:\n%s", text)
	}
	b.do("dry-run the edit", 20*time.Second,
		chromedp.SetValue(chromedp.CSS("#task-def"), strings.Replace(text, "echo nightly", "echo nightly v2", 1)),
		chromedp.Click(chromedp.CSS(`dialog button[type="submit"]`)))
	b.waitJS("the edit's diff", `document.querySelector('#plan-op')?.dataset.op === 'update' &&
		[...document.querySelectorAll('#def-plan .diff .add')].some(e => e.textContent.includes('echo nightly v2')) &&
		[...document.querySelectorAll('#def-plan .diff .del')].some(e => e.textContent.includes('echo nightly') && !e.textContent.includes('v2'))`, 10*time.Second)
	evalJS[chromedp.Void](b, `document.querySelector('#def-plan').scrollIntoView({block: 'end'})`)
	b.shot("task-editor")
	b.do("save the edit", 20*time.Second, chromedp.Click(chromedp.CSS(`dialog button[type="submit"]`)), chromedp.WaitNotPresent(chromedp.CSS("dialog")))
	testkit.Eventually(t, 10*time.Second, func() error {
		n, err := adm.GetTask(ctx, "nightly")
		// Its declared params stay (the old editor left them out of the
		// definition it saved).
		if err != nil || n.Version != 2 || n.Action.Command != "echo nightly v2\necho done\n" || n.Policy.MaxRetries != 2 ||
			n.Params["region"].Default == nil || *n.Params["region"].Default != "eu" {
			return fmt.Errorf("nightly after the edit: %+v %v", n, err)
		}
		return nil
	})

	// A concurrent edit: the task changes between the dry run and the
	// save; the save is refused saying so, and the other change stays.
	edit()
	b.do("dry-run another edit", 20*time.Second,
		chromedp.SetValue(chromedp.CSS("#task-def"), strings.Replace(evalJS[string](b, `document.querySelector('#task-def').value`), "team: data", "team: browser", 1)),
		chromedp.Click(chromedp.CSS(`dialog button[type="submit"]`)))
	b.waitJS("its plan", `document.querySelector('#plan-op')?.dataset.op === 'update'`, 10*time.Second)
	other, err := adm.GetTask(ctx, "nightly")
	if err != nil {
		t.Fatal(err)
	}
	other.Labels = map[string]string{"team": "elsewhere"}
	other.Version = 0
	if _, err := adm.PutTask(ctx, other); err != nil {
		t.Fatal(err)
	}
	b.do("save", 10*time.Second, chromedp.Click(chromedp.CSS(`dialog button[type="submit"]`)))
	b.waitJS("refused as a concurrent edit", `(() => { const e = document.querySelector('dialog .error')?.textContent || '';
		return e.startsWith('version: version precondition failed') && e.includes('Someone changed the task since you opened it'); })()`, 10*time.Second)
	b.checkA11y("the editor refusing a concurrent edit")
	if n, err := adm.GetTask(ctx, "nightly"); err != nil || n.Labels["team"] != "elsewhere" || n.Version != 3 {
		t.Fatalf("nightly after the refused save: %+v %v", n, err)
	}
	// The keyboard reaches the editor: Esc closes it, Tab reaches Edit,
	// Enter opens it with the focus inside.
	b.do("close", 10*time.Second, chromedp.KeyEvent(kb.Escape), chromedp.WaitNotPresent(chromedp.CSS("dialog")))
	b.open(base+"/ui/#/tasks/nightly", "#act-edit")
	tabTo(b, "#act-edit", 40)
	b.do("open the editor by keyboard", 10*time.Second, chromedp.KeyEvent(kb.Enter), chromedp.WaitVisible(chromedp.CSS("#task-def")))
	b.waitJS("focus in the editor", `!!document.activeElement.closest('dialog')`, 5*time.Second)
}

// tabTo presses Tab until the element matching sel has the focus, at most
// max times, failing the test otherwise: it is reachable by keyboard.
func tabTo(b *browser, sel string, max int) {
	b.t.Helper()
	evalJS[chromedp.Void](b, `document.activeElement && document.activeElement.blur()`)
	for range max {
		if evalJS[bool](b, `!!document.activeElement?.matches(`+jsString(sel)+`)`) {
			return
		}
		b.do("tab", 5*time.Second, chromedp.KeyEvent(kb.Tab))
	}
	b.t.Fatalf("%d presses of Tab did not reach %s", max, sel)
}

func jsString(s string) string {
	j, _ := json.Marshal(s)
	return string(j)
}

func mustLoc(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}
