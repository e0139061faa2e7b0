package tests

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

	"ax/fsm"
	"ax/model"
)

// webhook records the alert notifications POSTed to it.
type webhook struct {
	mu   sync.Mutex
	got  []model.AlertNotification
	srv  *httptest.Server
	errs []string
}

func newWebhook(t *testing.T) *webhook {
	w := &webhook{}
	w.srv = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var n model.AlertNotification
		w.mu.Lock()
		defer w.mu.Unlock()
		if err := json.Unmarshal(b, &n); err != nil {
			w.errs = append(w.errs, string(b))
		}
		w.got = append(w.got, n)
	}))
	t.Cleanup(w.srv.Close)
	return w
}

func (w *webhook) count(id, event string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, g := range w.got {
		if g.Alert.ID == id && g.Event == event {
			n++
		}
	}
	return n
}

func (w *webhook) total(task string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, g := range w.got {
		if g.Alert.Subject.Task == task {
			n++
		}
	}
	return n
}

// TestAlerts_InstanceFailed (real processes): a failing task raises its
// instance_failed alert, visible in GET /v1/alerts and `ax alert list`,
// and notified once to its policy.notify URL; a silenced task's failure is
// recorded as silenced and sends nothing; kill -9 of the leader after the
// notification does not make a second one.
func TestAlerts_InstanceFailed(t *testing.T) {
	c := startCluster(t, 3)
	ctx := ctxT(t, 3*time.Minute)
	cl := c.Client()
	waitFor(t, 30*time.Second, func() error {
		st, err := cl.Cluster(ctx)
		if err == nil && st.Protocol != fsm.ProtoVersion {
			err = fmt.Errorf("cluster protocol %d, want %d", st.Protocol, fsm.ProtoVersion)
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
		tk.Policy.Notify = []string{hook.srv.URL}
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
	waitFor(t, 60*time.Second, func() error {
		if n := hook.count(loud, model.AlertFiring); n != 1 {
			return fmt.Errorf("%d firing notifications of %s", n, loud)
		}
		return nil
	})
	var alerts map[string]model.Alert
	waitFor(t, 30*time.Second, func() error {
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
	// Give the leader time to record the notification sent, then kill it.
	time.Sleep(3 * time.Second)
	leader, err := c.Leader(ctx, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	leader.Kill()
	waitFor(t, 30*time.Second, func() error {
		l, err := c.Leader(ctx, 5*time.Second)
		if err == nil && l == leader {
			err = fmt.Errorf("still the old leader")
		}
		return err
	})
	time.Sleep(5 * time.Second) // the new leader's notification loop runs
	if n := hook.count(loud, model.AlertFiring); n != 1 {
		t.Errorf("%d firing notifications of %s after the leader was killed, want 1", n, loud)
	}
	if n := hook.total("quiet"); n != 0 {
		t.Errorf("the silenced task sent %d notifications, want 0", n)
	}
	hook.mu.Lock()
	if len(hook.errs) > 0 {
		t.Errorf("undecodable notifications: %q", hook.errs)
	}
	hook.mu.Unlock()
}
