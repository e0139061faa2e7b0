package execution

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/client"
	"github.com/ax-scheduler/ax/fsm/command"
	"github.com/ax-scheduler/ax/internal/agenttest"
	"github.com/ax-scheduler/ax/internal/testkit"
	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/model/channel"
	"github.com/ax-scheduler/ax/model/live"
	"github.com/ax-scheduler/ax/notify"
	"github.com/ax-scheduler/ax/notify/notifytest"
)

// TestAlerts_InstanceFailed (real processes): a failing task raises its
// instance_failed alert, visible in GET /v1/alerts and `ax alert list`,
// and notified once to its policy.notify URL; a silenced task's failure is
// recorded as silenced and sends nothing; kill -9 of the leader after the
// notification does not make a second one.
func TestAlerts_InstanceFailed(t *testing.T) {
	c := startCluster(t, 3)
	ctx := ctxT(t, 3*time.Minute)
	cl := c.Client()
	testkit.Eventually(t, 30*time.Second, func() error {
		st, err := cl.Cluster(ctx)
		if err == nil && st.Protocol != command.ProtoVersion {
			err = fmt.Errorf("cluster protocol %d, want %d", st.Protocol, command.ProtoVersion)
		}
		return err
	})
	if _, err := c.StartExecutor("w1"); err != nil {
		t.Fatal(err)
	}
	hook := newWebhook(t)
	failing := func(name string) *model.Task {
		tk := eventTask(name)
		tk.Action.Command = "echo boom >&2; exit 3"
		tk.Policy.Notify = []string{hook.URL()}
		return tk
	}
	// Silence one task before it fails.
	out, err := axCLI(t, "alert", "silence", "-addr", strings.Join(c.Addrs(), ","), "-task", "quiet", "-for", "1h", "-comment", "test")
	if err != nil || !strings.HasPrefix(out, "silence ") {
		t.Fatalf("ax alert silence: %q %v", out, err)
	}
	for _, name := range []string{"loud", "quiet"} {
		if _, err := cl.PutTask(ctx, failing(name)); err != nil {
			t.Fatal(err)
		}
		if _, err := cl.Trigger(ctx, name, model.TriggerRequest{}); err != nil {
			t.Fatal(err)
		}
	}
	const loud, quiet = model.RuleInstanceFailed + ":loud", model.RuleInstanceFailed + ":quiet"
	testkit.Eventually(t, 60*time.Second, func() error {
		if n := hook.Count(loud, model.AlertFiring); n != 1 {
			return fmt.Errorf("%d firing notifications of %s", n, loud)
		}
		return nil
	})
	var alerts map[string]model.Alert
	testkit.Eventually(t, 30*time.Second, func() error {
		l, err := cl.ListAlerts(ctx, model.AlertQuery{State: model.AlertFiring})
		if err != nil {
			return err
		}
		alerts = map[string]model.Alert{}
		for _, a := range l.Alerts {
			alerts[a.ID] = a
		}
		if _, ok := alerts[quiet]; !ok {
			return fmt.Errorf("no %s alert yet: %+v", quiet, l.Alerts)
		}
		return nil
	})
	if a := alerts[loud]; a.State != model.AlertFiring || a.Silenced || a.Details["attempt"] != "1" || a.Subject.Instance == "" || a.Details["maxAttempts"] != "1" || a.Details["failedAt"] == "" {
		t.Errorf("loud alert %+v", a)
	}
	if a := alerts[quiet]; !a.Silenced {
		t.Errorf("quiet alert %+v, want silenced", a)
	}
	out, err = axCLI(t, "alert", "list", "-addr", strings.Join(c.Addrs(), ","), "-state", "firing")
	if err != nil || !strings.Contains(out, "instance_failed") || !strings.Contains(out, "task=loud") || !strings.Contains(out, "SILENCED") {
		t.Errorf("ax alert list:\n%s\n%v", out, err)
	}
	// Once the leader has recorded the notification as sent, kill it.
	testkit.Eventually(t, 30*time.Second, func() error {
		var o live.Overview
		if err := cl.Do(ctx, client.Request{Method: http.MethodGet, Path: "/v1/overview?consistent=true"}, &o); err != nil {
			return err
		}
		if o.NotificationsPending != 0 {
			return fmt.Errorf("%d notifications not recorded as sent", o.NotificationsPending)
		}
		return nil
	})
	leader, err := c.Leader(ctx, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	leader.Kill()
	testkit.Eventually(t, 30*time.Second, func() error {
		l, err := c.Leader(ctx, 5*time.Second)
		if err == nil && l == leader {
			err = fmt.Errorf("still the old leader")
		}
		return err
	})
	// A new failure's notification shows the new leader's loop has run.
	if _, err := cl.PutTask(ctx, failing("marker")); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Trigger(ctx, "marker", model.TriggerRequest{}); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 60*time.Second, func() error {
		if n := hook.Count(model.RuleInstanceFailed+":marker", model.AlertFiring); n != 1 {
			return fmt.Errorf("%d notifications of the marker's failure", n)
		}
		return nil
	})
	if n := hook.Count(loud, model.AlertFiring); n != 1 {
		t.Errorf("%d firing notifications of %s after the leader was killed, want 1", n, loud)
	}
	if n := hook.Total("quiet"); n != 0 {
		t.Errorf("the silenced task sent %d notifications, want 0", n)
	}
	if errs := hook.Errs(); len(errs) > 0 {
		t.Errorf("undecodable notifications: %q", errs)
	}
}

// TestAlerts_ChannelFailureReport (real processes): a failing task's
// alert reaches a named webhook channel, signed with the channel's secret,
// carrying what an operator needs to act (failure time, attempt n of m,
// the last 20 lines of output, a suggestion, the console link); once the
// task succeeds again the alert resolves and the channel is told.
func TestAlerts_ChannelFailureReport(t *testing.T) {
	c := startCluster(t, 3, withArgs("-lease", "3s"))
	ctx := ctxT(t, 3*time.Minute)
	cl := c.Client()
	if _, err := c.StartExecutor("w1"); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var got []model.Notification
	var bad []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		if !notify.Verify([]byte("s3cret"), r.Header.Get(notify.TimestampHeader), body, r.Header.Get(notify.SignatureHeader)) {
			bad = append(bad, "bad signature "+r.Header.Get(notify.SignatureHeader))
		}
		var n model.Notification
		if err := json.Unmarshal(body, &n); err != nil {
			bad = append(bad, string(body))
		}
		got = append(got, n)
	}))
	defer srv.Close()
	notes := func() []model.Notification {
		mu.Lock()
		defer mu.Unlock()
		if len(bad) > 0 {
			t.Fatalf("bad deliveries: %q", bad)
		}
		return append([]model.Notification(nil), got...)
	}
	testkit.Eventually(t, 30*time.Second, func() error { // channels need protocol 4
		return cl.Do(ctx, client.Request{Method: http.MethodPut, Path: "/v1/channels/ops",
			Body: channel.Channel{Type: channel.TypeWebhook, URL: srv.URL, Secret: "s3cret"}}, nil)
	})
	var lines []string
	for i := 1; i <= 25; i++ {
		lines = append(lines, fmt.Sprintf("echo line%02d", i))
	}
	task := eventTask("nightly")
	task.Action.Command = strings.Join(lines, "; ") + "; exit 2"
	task.Policy.Notify = []string{"ops"}
	if _, err := cl.PutTask(ctx, task); err != nil {
		t.Fatal(err)
	}
	s, err := cl.Trigger(ctx, "nightly", model.TriggerRequest{})
	if err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 60*time.Second, func() error {
		if len(notes()) == 0 {
			return fmt.Errorf("no notification yet")
		}
		return nil
	})
	n := notes()[0]
	f := n.Failure
	if n.Event != model.AlertFiring || f == nil || f.InstanceID != s.ID || f.Attempt != 1 || f.MaxAttempts != 1 ||
		f.FailedAt.IsZero() || f.Suggestion == "" || !strings.HasSuffix(f.Link, "/ui/#/instances/"+s.ID) {
		t.Fatalf("notification %+v, failure %+v", n, f)
	}
	if len(f.LogTail) != 20 || f.LogTail[0] != "line06" || f.LogTail[19] != "line25" {
		t.Errorf("log tail %q, want line06..line25", f.LogTail)
	}
	// Fixed: the next run succeeds, the incident resolves.
	task.Action.Command = "true"
	if _, err := cl.PutTask(ctx, task); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Trigger(ctx, "nightly", model.TriggerRequest{}); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 60*time.Second, func() error {
		ns := notes()
		if last := ns[len(ns)-1]; last.Event != model.AlertResolved || last.Alert.ID != model.RuleInstanceFailed+":nightly" {
			return fmt.Errorf("%d notifications, the last %s %s", len(ns), last.Event, last.Alert.ID)
		}
		return nil
	})
	if n := len(notes()); n != 2 {
		t.Errorf("%d notifications, want 2 (firing, resolved)", n)
	}
}

// TestAlerts_ChatChannels (real processes): a failing task's alert
// reaches a DingTalk robot and a Feishu bot, each signed with its
// secret, and a WeCom robot, on receivers that check requests as those
// platforms document (notifytest.ChatReceiver: the credential in the
// URL, the markdown message, the size limit, the signature and its
// timestamp window); each message carries the failure report (instance,
// attempt 1 of 1, exit class, suggestion, the last lines of output, the
// console link). Once the task succeeds, each is told it resolved.
func TestAlerts_ChatChannels(t *testing.T) {
	c := startCluster(t, 3)
	ctx := ctxT(t, 3*time.Minute)
	cl := c.Client()
	if _, err := c.StartExecutor("w1"); err != nil {
		t.Fatal(err)
	}
	rcv := map[string]*notifytest.ChatReceiver{
		channel.TypeDingTalk: notifytest.NewChatReceiver(t, notifytest.DingTalk, "ding-"+t.Name(), "SEC-ding-s3cret"),
		channel.TypeWeCom:    notifytest.NewChatReceiver(t, notifytest.WeCom, "wecom-key", ""),
		channel.TypeFeishu:   notifytest.NewChatReceiver(t, notifytest.Feishu, "lark-hook", "lark-s3cret"),
	}
	secrets := map[string]string{channel.TypeDingTalk: "SEC-ding-s3cret", channel.TypeFeishu: "lark-s3cret"}
	for typ, r := range rcv {
		ch := channel.Channel{Name: "team-" + typ, Type: typ, URL: r.URL(), Secret: secrets[typ], Match: map[string]string{"team": "data"}}
		testkit.Eventually(t, 30*time.Second, func() error { // chat robots need protocol 7
			_, err := cl.PutChannel(ctx, &ch)
			return err
		})
	}
	var lines []string
	for i := 1; i <= 25; i++ {
		lines = append(lines, fmt.Sprintf("echo out%02d", i))
	}
	task := eventTask("etl")
	task.Labels = map[string]string{"team": "data"}
	task.Action.Command = strings.Join(lines, "; ") + "; exit 4"
	if _, err := cl.PutTask(ctx, task); err != nil {
		t.Fatal(err)
	}
	s, err := cl.Trigger(ctx, "etl", model.TriggerRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for typ, r := range rcv {
		m := r.Next(t, 60*time.Second)
		for _, want := range []string{"[ax] FIRING", "**Task:** etl", "**Instance:** [" + s.ID + "](", "/ui/#/instances/" + s.ID + ")",
			"**Attempt:** 1 of 1", "**Failure:** exit 4", "**What to do:**", "**Last 20 lines of output:**", "out06", "out25"} {
			if !strings.Contains(m.Title+m.Text, want) {
				t.Errorf("%s message lacks %q:\n%s", typ, want, m.Text)
			}
		}
		if strings.Contains(m.Text, "out05") || m.Signed != (secrets[typ] != "") {
			t.Errorf("%s: signed %v; more than 20 lines of output?\n%s", typ, m.Signed, m.Text)
		}
	}
	// Fixed: the next run succeeds, the incident resolves.
	task.Action.Command = "true"
	if _, err := cl.PutTask(ctx, task); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Trigger(ctx, "etl", model.TriggerRequest{}); err != nil {
		t.Fatal(err)
	}
	for typ, r := range rcv {
		if m := r.Next(t, 60*time.Second); !strings.Contains(m.Title+m.Text, "[ax] RESOLVED critical: task etl") || !strings.Contains(m.Text, "**Resolved:**") {
			t.Errorf("%s: the second message is not the resolution:\n%s%s", typ, m.Title, m.Text)
		}
		if refused := r.Refusals(); len(refused) > 0 {
			t.Errorf("%s refused %q", typ, refused)
		}
	}
}

// TestAlerts_DeadlineMissed (real processes): an instance still running
// past its task's policy.deadline raises deadline_missed, notified to the
// task's webhook, explained in its "why", and resolved (notified again)
// once the late instance ends.
func TestAlerts_DeadlineMissed(t *testing.T) {
	c := startCluster(t, 3, withArgs("-watch-interval", "250ms"))
	ctx := ctxT(t, 2*time.Minute)
	cl := c.Client()
	if _, err := c.StartExecutor("w1"); err != nil {
		t.Fatal(err)
	}
	hook := newWebhook(t)
	tk := shellTask("late", "sleep 6", model.Policy{Notify: []string{hook.URL()}, Deadline: &model.Deadline{Within: model.Duration(2 * time.Second)}})
	testkit.Eventually(t, 30*time.Second, func() error { _, err := cl.PutTask(ctx, tk); return err }) // protocol 8
	id := trigger(t, cl, "late")
	const alertID = model.RuleDeadlineMissed + ":late"
	testkit.Eventually(t, 30*time.Second, func() error {
		if n := hook.Count(alertID, model.AlertFiring); n != 1 {
			return fmt.Errorf("%d firing notifications of %s", n, alertID)
		}
		return nil
	})
	l, err := cl.ListAlerts(ctx, model.AlertQuery{State: model.AlertFiring})
	if err != nil {
		t.Fatal(err)
	}
	var a model.Alert
	for _, al := range l.Alerts {
		if al.ID == alertID {
			a = al
		}
	}
	if a.Subject.Instance != id || a.Details["state"] != model.StateRunning {
		t.Fatalf("alert %+v, want the running instance %s", a, id)
	}
	in, err := cl.GetInstance(ctx, id)
	if err != nil || !strings.Contains(in.Why, "past its deadline") {
		t.Fatalf("why %q %v, want the missed deadline", in.Why, err)
	}
	agenttest.WaitState(t, cl, id, 30*time.Second, model.StateSuccess)
	testkit.Eventually(t, 30*time.Second, func() error {
		if n := hook.Count(alertID, model.AlertResolved); n != 1 {
			return fmt.Errorf("%d resolved notifications of %s", n, alertID)
		}
		return nil
	})
}
