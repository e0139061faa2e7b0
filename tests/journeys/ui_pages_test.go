package journeys

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/ax-scheduler/ax/client"
	"github.com/ax-scheduler/ax/internal/localcluster"
	"github.com/ax-scheduler/ax/internal/testkit"
	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/model/channel"
	"github.com/ax-scheduler/ax/notify/notifytest"
	"github.com/ax-scheduler/ax/tlsutil"
)

// TestUI_Pages drives the Channels, Audit, Calendars, Windows and Pools
// pages (walkDefinitions), the instance page (an output tab per attempt,
// lineage by onSuccess, dependsOn and shards, each event once, re-run by
// role) and the time-zone switch in a real browser, through a follower of
// a three-node cluster with TLS and ACLs, as reader, operator, writer and
// admin: what each sees and may do, by keyboard, with axe-core on every
// page in the dark colour scheme (TestUI_Console has the light one).
func TestUI_Pages(t *testing.T) {
	b := newBrowser(t, acceptTestCA, darkScheme)
	dir := t.TempDir()
	c := startCluster(t, 3, withTLS(dir), func(cfg *localcluster.Config) {
		cfg.NodeArgs = map[string][]string{"n3": {"-executor", "true"}}
	})
	ctx := ctxT(t, 5*time.Minute)
	ca, err := tlsutil.NewClientConfig(localcluster.CAFile(dir), "", "")
	if err != nil {
		t.Fatal(err)
	}
	boot, err := tokenClient(c, "").ACLBootstrap(ctx)
	if err != nil {
		t.Fatal(err)
	}
	as := func(tok string) *client.Client {
		return client.New(client.Config{Addrs: c.Addrs(), Token: tok, TLS: ca, RetryFor: 15 * time.Second})
	}
	adm := as(boot.Secret)
	toks := map[string]string{"admin": boot.Secret}
	for _, r := range []struct{ name, role string }{{"rita", model.RoleReader}, {"olga", model.RoleOperator}, {"wendy", model.RoleWriter}} {
		toks[r.role] = createToken(t, ctx, adm, model.ACLTokenRequest{Name: r.name, Role: r.role})
	}
	writer := as(toks[model.RoleWriter])

	// Receivers: a DingTalk robot that takes only signed messages, and a
	// webhook that refuses everything.
	ding := notifytest.NewChatReceiver(t, notifytest.DingTalk, "ROBOTTOKEN42", "ding-secret")
	refusing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "hook revoked", http.StatusGone)
	}))
	t.Cleanup(refusing.Close)
	put := func(ch *channel.Channel) {
		t.Helper()
		testkit.Eventually(t, 30*time.Second, func() error { // chat robots need protocol 7: a new cluster gets there
			_, err := writer.PutChannel(ctx, ch)
			return err
		})
	}
	put(&channel.Channel{Name: "ding", Type: channel.TypeDingTalk, URL: ding.URL(), Secret: "ding-secret", Match: map[string]string{"team": "data"}})
	put(&channel.Channel{Name: "gone", Type: channel.TypeWebhook, URL: refusing.URL + "/hooks/SECRETPATH", Secret: "s"})

	// flaky fails twice (two attempts), each with its own output; its
	// definition is changed by the writer then the admin (the audit).
	flaky := &model.Task{Name: "flaky", Labels: map[string]string{"team": "data"}, Trigger: model.Trigger{Type: model.TriggerEvent},
		Action: model.Action{Type: model.ActionShell, Command: `echo "first version"; exit 1`},
		Policy: model.Policy{Notify: []string{"gone"}}}
	if _, err := writer.PutTask(ctx, flaky); err != nil {
		t.Fatal(err)
	}
	flaky.Action.Command = `echo "output of attempt $AX_ATTEMPT"; exit 75`
	flaky.Policy.MaxRetries, flaky.Policy.RetryInterval, flaky.Policy.RetryableExitCodes = 1, model.Duration(100*time.Millisecond), []int{75}
	if _, err := adm.PutTask(ctx, flaky); err != nil {
		t.Fatal(err)
	}
	ny := &model.Task{Name: "extract", Trigger: model.Trigger{Type: model.TriggerCron, Expression: "0 6 * * *", Timezone: "America/New_York"},
		Action: model.Action{Type: model.ActionShell, Command: "echo extracted"}, Policy: model.Policy{OnSuccess: []model.Chain{{Task: "load"}}}}
	load := &model.Task{Name: "load", Trigger: model.Trigger{Type: model.TriggerEvent}, Action: model.Action{Type: model.ActionShell, Command: "echo loaded"}}
	for _, task := range []*model.Task{load, ny} {
		if _, err := writer.PutTask(ctx, task); err != nil {
			t.Fatal(err)
		}
	}
	// fan runs as two shards; shard 1 fails once shard 0 has succeeded
	// (a shard still running when another fails is terminated) (protocol
	// 8: retried until the new cluster has reached it).
	fan := &model.Task{Name: "fan", Trigger: model.Trigger{Type: model.TriggerEvent},
		Action: model.Action{Type: model.ActionShell, Command: `echo "shard $AX_SHARD_INDEX"; [ "$AX_SHARD_INDEX" != 1 ] || { sleep 1; exit 1; }`}, Policy: model.Policy{Shards: 2}}
	testkit.Eventually(t, 30*time.Second, func() error { _, err := writer.PutTask(ctx, fan); return err })
	sharded, err := as(toks[model.RoleOperator]).Trigger(ctx, "fan", model.TriggerRequest{})
	if err != nil {
		t.Fatal(err)
	}
	failed, err := as(toks[model.RoleOperator]).Trigger(ctx, "flaky", model.TriggerRequest{})
	if err != nil {
		t.Fatal(err)
	}
	chained, err := as(toks[model.RoleOperator]).Trigger(ctx, "extract", model.TriggerRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var child string
	testkit.Eventually(t, 60*time.Second, func() error {
		in, err := adm.GetInstance(ctx, failed.ID)
		if err != nil || in.State != model.StateFailed || in.Attempts != 2 {
			return fmt.Errorf("flaky: %v %+v", err, in)
		}
		if in, err := adm.GetInstance(ctx, sharded.ID); err != nil || in.State != model.StateFailed {
			return fmt.Errorf("fan: %v %+v", err, in)
		}
		up, err := adm.GetInstance(ctx, chained.ID)
		if err != nil || up.State != model.StateSuccess {
			return fmt.Errorf("extract: %v %+v", err, up)
		}
		for _, e := range up.Events {
			if _, id, ok := strings.Cut(e.Message, "created load instance "); ok && e.Type == "on_success" {
				child = strings.Fields(id)[0]
				return nil
			}
		}
		return fmt.Errorf("extract has no on_success event: %+v", up.Events)
	})

	_, followers := leaderAndFollowers(ctx, t, c)
	via := followers[0].HTTPAddr
	base := "https://" + via + "/ui/"
	signIn := func(role string) {
		t.Helper()
		evalJS[chromedp.Void](b, `sessionStorage.clear()`)
		b.open(base+"#/channels", "#token")
		b.do("sign in as "+role, 20*time.Second,
			chromedp.SendKeys(chromedp.CSS("#token"), toks[role]),
			chromedp.Click(chromedp.CSS(`.login button[type="submit"]`)),
			chromedp.WaitVisible(chromedp.CSS(`[data-role="`+role+`"]`)))
	}
	b.open(base, "#token")

	// As a reader: the pages, without their buttons.
	signIn(model.RoleReader)
	b.open(base+"#/channels", `tr[data-channel="ding"]`)
	text := b.page()
	for _, secret := range []string{"ROBOTTOKEN42", "SECRETPATH", "ding-secret"} {
		if strings.Contains(text, secret) {
			t.Errorf("the channels page shows %q:\n%s", secret, text)
		}
	}
	b.waitJS("ding is matched by flaky's labels", `document.querySelector('tr[data-channel="ding"] .users').textContent.includes('matched by labels: flaky')`, 5*time.Second)
	b.waitJS("gone is named by flaky", `document.querySelector('tr[data-channel="gone"] .users').textContent.includes('named in policy.notify: flaky')`, 5*time.Second)
	b.waitJS("the target is redacted", `document.querySelector('tr[data-channel="gone"] .target').textContent.startsWith('http://127.0.0.1:')`, 5*time.Second)
	if n := evalJS[int](b, `document.querySelectorAll('.act-test').length`); n != 0 {
		t.Errorf("a reader sees %d Test buttons", n)
	}

	b.open(base+"#/audit", `#audit li[data-task]`)
	got := evalJS[string](b, `[...document.querySelectorAll('#audit li[data-task]')].map(li => li.dataset.task + ' v' + li.dataset.version + ' ' + li.dataset.op).join(', ')`)
	if want := "fan v1 create, extract v1 create, load v1 create, flaky v2 update, flaky v1 create"; got != want {
		t.Errorf("audit: %s, want %s", got, want)
	}
	b.waitJS("flaky v2's diff", `[...document.querySelectorAll('#audit li[data-task="flaky"][data-version="2"] .diff .add')].some(x => x.textContent.includes('output of attempt'))`, 5*time.Second)
	b.do("filter by actor", 20*time.Second,
		chromedp.SendKeys(chromedp.CSS("#f-actor"), "wendy"), chromedp.KeyEvent(kb.Enter),
		chromedp.WaitVisible(chromedp.CSS(`#audit li[data-op]`)))
	b.waitJS("only wendy's changes", `location.hash === '#/audit?actor=wendy' && document.querySelectorAll('#audit li[data-task]').length === 4 && !document.querySelector('#audit li[data-version="2"]')`, 10*time.Second)
	b.open(base+"#/audit?task=flaky", `#audit li[data-task]`)
	b.waitJS("only flaky's changes", `document.querySelectorAll('#audit li[data-task]').length === 2`, 5*time.Second)
	b.shot("audit")

	// The Calendars, Windows and Pools pages; ingest and summarize (which
	// depends on ingest) backfilled for yesterday's 06:00.
	putDefinitions(t, ctx, c, adm, boot.Secret, via)
	walkDefinitions(t, b, ctx, adm, base, model.RoleReader, false)
	daily := model.Trigger{Type: model.TriggerCron, Expression: "0 6 * * *"}
	for _, task := range []*model.Task{{Name: "ingest", Trigger: daily, Action: model.Action{Type: model.ActionShell, Command: "echo ingested"}},
		{Name: "summarize", Trigger: daily, Action: model.Action{Type: model.ActionShell, Command: "echo summarized"}, Policy: model.Policy{DependsOn: []string{"ingest"}}}} {
		if _, err := adm.PutTask(ctx, task); err != nil {
			t.Fatal(err)
		}
	}
	six := time.Now().UTC().Truncate(24 * time.Hour).Add(-18 * time.Hour) // yesterday 06:00
	backfilled := map[string]string{}
	for _, task := range []string{"summarize", "ingest"} {
		bf, err := adm.Backfill(ctx, task, model.BackfillRequest{From: model.Time{Time: six.Add(-time.Minute)}, To: model.Time{Time: six.Add(time.Minute)}})
		if err != nil || len(bf.Created) != 1 {
			t.Fatalf("backfill %s: %+v %v", task, bf, err)
		}
		backfilled[task] = bf.Created[0]
	}

	// The failed instance: every attempt's output, one tab each, chosen by
	// keyboard; each event once; no re-run for a reader.
	b.open(base+"#/instances/"+failed.ID, `#tab-attempt-2[aria-selected="true"]`)
	b.waitJS("the latest attempt's output", `document.getElementById('log').textContent.includes('output of attempt 2')`, 10*time.Second)
	b.do("attempt 1 by keyboard", 10*time.Second,
		chromedp.Focus(chromedp.CSS(`#tab-attempt-2`)), chromedp.KeyEvent(kb.ArrowLeft))
	b.waitJS("attempt 1's output", `document.querySelector('#tab-attempt-1[aria-selected="true"]') && document.activeElement.id === 'tab-attempt-1' &&
		document.getElementById('log').textContent.trim() === 'output of attempt 1'`, 10*time.Second)
	b.checkA11y("the instance page on attempt 1's tab")
	b.shot("instance-attempts")
	ends := evalJS[[]string](b, `[...document.querySelectorAll('.timeline-list li strong')].map(s => s.textContent).filter(x => x.startsWith('attempt'))`)
	if strings.Join(ends, ",") != "attempt_failed,attempt_failed" {
		t.Errorf("the timeline shows the attempts' ends as %q, want each once", ends)
	}
	if n := evalJS[int](b, `document.querySelectorAll('.actions button').length`); n != 0 {
		t.Errorf("a reader sees %d action buttons on a failed instance", n)
	}

	// Lineage both ways: extract's instance made load's, which names it.
	b.open(base+"#/instances/"+chained.ID, `#lineage-down a[href="#/instances/`+child+`"]`)
	b.open(base+"#/instances/"+child, `#lineage-up a[href="#/instances/`+chained.ID+`"]`)

	// dependsOn: summarize waited for ingest's success of the same date;
	// each names the other, with its state.
	testkit.Eventually(t, 60*time.Second, func() error {
		for _, id := range backfilled {
			if in, err := adm.GetInstance(ctx, id); err != nil || in.State != model.StateSuccess {
				return fmt.Errorf("%v %+v", err, in)
			}
		}
		return nil
	})
	b.open(base+"#/instances/"+backfilled["summarize"], `#lineage-up li[data-instance="`+backfilled["ingest"]+`"] .badge[data-state="SUCCESS"]`)
	b.open(base+"#/instances/"+backfilled["ingest"], `#lineage-down li[data-instance="`+backfilled["summarize"]+`"] a[href="#/tasks/summarize"]`)

	// A shard names the instance it is a shard of.
	shards, err := adm.Shards(ctx, sharded.ID)
	if err != nil || len(shards.Shards) != 2 {
		t.Fatalf("fan's shards: %v %+v", err, shards)
	}
	b.open(base+"#/instances/"+shards.Shards[1].ID, `#lineage-up a[href="#/instances/`+sharded.ID+`"]`)

	// The zone switch, remembered: the task's zone (New York) by default on
	// its page, then UTC, then back, on every page.
	fmtNoon := `import('/ui/js/util.js').then(m => m.fmtTime('2026-01-15T12:00:00Z'))`
	b.open(base+"#/tasks/extract", `#zone`)
	if got := evalJS[string](b, fmtNoon); got != "2026-01-15 07:00:00" {
		t.Errorf("on a New York task's page, a time without a zone of its own (the backfill banner's) is %q, want the task's zone", got)
	}
	b.do("switch to UTC", 10*time.Second, chromedp.SetValue(chromedp.CSS("#zone"), "utc"),
		chromedp.Evaluate[chromedp.Void](`document.getElementById('zone').dispatchEvent(new Event('change'))`))
	b.open(base+"#/instances/"+failed.ID, `#zone`)
	if got := evalJS[string](b, fmtNoon+`.then(x => x + '|' + localStorage.getItem('ax.zone') + '|' + document.getElementById('zone').value)`); got != "2026-01-15 12:00:00|utc|utc" {
		t.Errorf("after switching to UTC and opening another page: %q", got)
	}
	b.open(base+"#/tasks/extract", `#zone`)
	if got := evalJS[string](b, fmtNoon); got != "2026-01-15 12:00:00" {
		t.Errorf("UTC on the task page: %q", got)
	}
	b.do("back to the task's zone", 10*time.Second, chromedp.SetValue(chromedp.CSS("#zone"), "task"),
		chromedp.Evaluate[chromedp.Void](`document.getElementById('zone').dispatchEvent(new Event('change'))`))

	// As operator, writer and admin: Test on every channel, Re-run on the
	// failed instance.
	for _, role := range []string{model.RoleOperator, model.RoleWriter, model.RoleAdmin} {
		signIn(role)
		b.open(base+"#/channels", `tr[data-channel="ding"] .act-test`)
		if n := evalJS[int](b, `document.querySelectorAll('.act-test').length`); n != 2 {
			t.Errorf("%s sees %d Test buttons, want 2", role, n)
		}
		b.open(base+"#/instances/"+failed.ID, `#act-rerun`)
		walkDefinitions(t, b, ctx, adm, base, role, role == model.RoleWriter)
	}

	// The operator's test sends, by keyboard: delivered to the signed
	// robot; refused by the revoked hook, saying why.
	signIn(model.RoleOperator)
	b.open(base+"#/channels", `tr[data-channel="ding"] .act-test`)
	b.do("test ding by keyboard", 10*time.Second, chromedp.Focus(chromedp.CSS(`tr[data-channel="ding"] .act-test`)), chromedp.KeyEvent(kb.Enter))
	b.waitJS("delivered", `document.querySelector('tr[data-channel="ding"] .test-result').textContent.includes('delivered in')`, 20*time.Second)
	testkit.Until(t, 10*time.Second, "the robot to get the test message", func() bool {
		select {
		case m := <-ding.Messages:
			return m.Signed && strings.Contains(m.Text, "Test notification to channel ding") && strings.Contains(m.Text, "olga")
		default:
			return false
		}
	})
	b.do("test gone", 10*time.Second, chromedp.Click(chromedp.CSS(`tr[data-channel="gone"] .act-test`)))
	b.waitJS("not delivered, and why", `document.querySelector('tr[data-channel="gone"] .test-result').textContent.includes('not delivered: answered 410')`, 20*time.Second)
	if strings.Contains(b.page(), "SECRETPATH") {
		t.Errorf("the refusal shows the hook's path")
	}
	b.shot("channels")

	// On a phone, the new pages fit the screen's width (a screenshot of
	// the instance's attempts and of the task page for the README).
	b.do("phone width", 10*time.Second, chromedp.EmulateViewport(390, 844))
	for _, pg := range []struct{ hash, ready, shot string }{{"#/channels", `tr[data-channel]`, ""}, {"#/audit", `#audit li[data-task]`, ""},
		{"#/calendars", `tr[data-calendar]`, ""}, {"#/windows", `tr[data-window]`, ""}, {"#/pools", `tr[data-pool]`, ""},
		{"#/instances/" + failed.ID, `#lineage-runs`, "instance-phone"}, {"#/tasks/extract", `#dep-graph a[data-task="load"]`, "task-phone"}} {
		b.open(base+pg.hash, pg.ready)
		b.waitJS(pg.hash+" fits a phone", `document.documentElement.scrollWidth <= window.innerWidth + 1`, 5*time.Second)
		if pg.shot != "" {
			// The instance's shot shows its attempt tabs, below the timeline.
			evalJS[chromedp.Void](b, `document.querySelector('#attempt-tabs:not([hidden])')?.closest('section').scrollIntoView()`)
			b.shot(pg.shot)
		}
	}
	b.do("laptop width", 10*time.Second, chromedp.EmulateViewport(1280, 900))

	// The operator re-runs the failed instance: a third attempt, its run
	// in the lineage.
	b.open(base+"#/instances/"+failed.ID, `#act-rerun`)
	b.do("re-run", 20*time.Second, chromedp.Click(chromedp.CSS(`#act-rerun`)),
		chromedp.WaitVisible(chromedp.CSS(`dialog button[type="submit"]`)), chromedp.Click(chromedp.CSS(`dialog button[type="submit"]`)))
	b.waitJS("the re-run in the lineage", `document.querySelector('#lineage-runs')?.textContent.includes('re-run by olga')`, 30*time.Second)
	b.waitJS("a tab per attempt", `document.querySelectorAll('#attempt-tabs [role="tab"]').length >= 3`, 60*time.Second)

	// A sharded instance that failed re-runs its failed shards: shard 1
	// runs again, shard 0 keeps its success.
	if l, err := adm.Shards(ctx, sharded.ID); err != nil || len(l.Shards) != 2 || l.Shards[0].State != model.StateSuccess || l.Shards[1].State != model.StateFailed {
		t.Fatalf("fan's shards before the re-run: %v %+v", err, l)
	}
	b.open(base+"#/instances/"+sharded.ID, `#act-rerun`)
	if label := evalJS[string](b, `document.getElementById('act-rerun').textContent`); label != "Re-run failed shards" {
		t.Errorf("a failed sharded instance's re-run button says %q", label)
	}
	b.do("re-run the failed shards", 20*time.Second, chromedp.Click(chromedp.CSS(`#act-rerun`)),
		chromedp.WaitVisible(chromedp.CSS(`dialog button[type="submit"]`)), chromedp.Click(chromedp.CSS(`dialog button[type="submit"]`)),
		chromedp.WaitNotPresent(chromedp.CSS("dialog"))) // not refused
	testkit.Eventually(t, 60*time.Second, func() error {
		l, err := adm.Shards(ctx, sharded.ID)
		if err != nil || len(l.Shards) != 2 || l.Shards[1].Attempts != 2 || l.Shards[1].State != model.StateFailed {
			return fmt.Errorf("%v %+v", err, l)
		}
		if s0 := l.Shards[0]; s0.Attempts != 1 || s0.State != model.StateSuccess {
			return fmt.Errorf("shard 0 ran again: %+v", s0)
		}
		return nil
	})
}
