package notify_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/model/channel"
	"github.com/ax-scheduler/ax/notify"
	"github.com/ax-scheduler/ax/notify/notifytest"
)

func ip(n int) *int { return &n }

func failedInstance(a model.Attempt, attempts int) *model.Instance {
	finished := model.Time{Time: time.Date(2026, 3, 4, 2, 0, 7, 0, time.UTC)}
	a.EndedAt = finished
	return &model.Instance{ID: "0000000000300001", Task: "nightly", State: model.StateFailed, Attempts: attempts,
		FinishedAt: finished, LastError: a.Error, AttemptList: []model.Attempt{a}}
}

func shellTask(p model.Policy) *model.Task {
	return &model.Task{Name: "nightly", Action: model.Action{Type: model.ActionShell, Command: "run"}, Policy: p}
}

// TestFailure_Classes: each kind of failure gets its class, retryability
// and the suggestion of the table in docs/alerts.md ("What a
// notification says").
func TestFailure_Classes(t *testing.T) {
	httpTask := &model.Task{Name: "nightly", Action: model.Action{Type: model.ActionHTTP, URL: "https://x"}, Policy: model.Policy{MaxRetries: 1}}
	tests := []struct {
		name       string
		in         *model.Instance
		task       *model.Task
		class      string
		retryable  bool
		exhausted  bool
		classText  string
		suggestion string
	}{
		{"exit not in retryableExitCodes", failedInstance(model.Attempt{Number: 1, Outcome: model.OutcomeFailed, ExitCode: ip(3), Error: "exit status 3"}, 1),
			shellTask(model.Policy{MaxRetries: 2, RetryableExitCodes: []int{75}}), model.FailureExit, false, false,
			"exit 3 (not retryable)", "exit 3 is not retryable (policy.retryableExitCodes): fix the input and trigger again (ax trigger nightly)"},
		{"exit retried to the end", failedInstance(model.Attempt{Number: 3, Outcome: model.OutcomeFailed, ExitCode: ip(1)}, 3),
			shellTask(model.Policy{MaxRetries: 2}), model.FailureExit, true, true,
			"exit 1 (retryable; retries exhausted)", "retries exhausted (3 attempts, policy.maxRetries 2)"},
		{"timeout", failedInstance(model.Attempt{Number: 1, Outcome: model.OutcomeTimeout, ExitCode: ip(-1), Executor: "w1", Host: "h1"}, 1),
			shellTask(model.Policy{Timeout: model.Timeout(20 * time.Minute)}), model.FailureTimeout, true, true,
			"timeout after 20m0s (retryable; retries exhausted)", "raise policy.timeout"},
		{"lost", failedInstance(model.Attempt{Number: 1, Outcome: model.OutcomeLost, Executor: "w1", Host: "db-7"}, 1),
			shellTask(model.Policy{}), model.FailureLost, true, true, "lost (executor w1 stopped renewing its lease)", "check executor w1 on host db-7"},
		{"http 503", failedInstance(model.Attempt{Number: 2, Outcome: model.OutcomeFailed, ExitCode: ip(0), HTTPStatus: 503}, 2),
			httpTask, model.FailureHTTP5xx, true, true, "HTTP 503", "the endpoint failed (HTTP 503): retry"},
		{"http 404", failedInstance(model.Attempt{Number: 1, Outcome: model.OutcomeFailed, ExitCode: ip(0), HTTPStatus: 404}, 1),
			httpTask, model.FailureHTTP4xx, false, false, "HTTP 404 (not retryable)", "the request is wrong (HTTP 404): fix the action"},
		{"http no answer", failedInstance(model.Attempt{Number: 2, Outcome: model.OutcomeFailed, ExitCode: ip(0), Error: "connection refused"}, 2),
			httpTask, model.FailureHTTPConn, true, true, "no HTTP answer", "check that it is up and reachable"},
		{"could not run", failedInstance(model.Attempt{Number: 1, Outcome: model.OutcomeFailed, ExitCode: ip(0), Error: `secret "db" does not exist`}, 1),
			shellTask(model.Policy{}), model.FailureError, false, false, "could not run (not retryable)", "the action could not run"},
		{"task deleted", failedInstance(model.Attempt{Number: 1, Outcome: model.OutcomeFailed, ExitCode: ip(2)}, 1),
			nil, model.FailureExit, true, true, "exit 2", "fix the cause"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := notify.Failure(tt.in, tt.task, "", "L")
			if f.Class != tt.class || f.Retryable != tt.retryable || f.RetriesExhausted != tt.exhausted {
				t.Errorf("got class %s retryable %v exhausted %v, want %s %v %v", f.Class, f.Retryable, f.RetriesExhausted, tt.class, tt.retryable, tt.exhausted)
			}
			if got := notify.ClassText(f); !strings.HasPrefix(got, tt.classText) {
				t.Errorf("class text %q, want it to start %q", got, tt.classText)
			}
			if !strings.Contains(f.Suggestion, tt.suggestion) {
				t.Errorf("suggestion %q, want it to hold %q", f.Suggestion, tt.suggestion)
			}
			if f.FailedAt.IsZero() || f.InstanceID != "0000000000300001" || f.Link != "L" {
				t.Errorf("report %+v", f)
			}
		})
	}
}

func failingAlert() model.AlertNotification {
	first := model.Time{Time: time.Date(2026, 3, 4, 2, 0, 7, 0, time.UTC)}
	return model.AlertNotification{Event: model.AlertFiring, Alert: model.Alert{ID: "instance_failed:nightly", Rule: model.RuleInstanceFailed,
		Severity: model.SeverityCritical, Subject: model.AlertSubject{Task: "nightly", Instance: "0000000000300001"},
		Summary: "task nightly failing", State: model.AlertFiring, FirstSeen: first, LastSeen: first, Count: 3},
		TaskLabels: map[string]string{"team": "data"}}
}

// TestText_Failure: the message of a failure holds the task, instance,
// failure time, attempt n of m, the error class, the suggestion, the last
// 20 lines of output and the link.
func TestText_Failure(t *testing.T) {
	var out strings.Builder
	for i := 1; i <= 30; i++ {
		fmt.Fprintf(&out, "line %d\n", i)
	}
	n := failingAlert()
	link := notify.Link("http://ax.example:7070/", &n.Alert)
	if link != "http://ax.example:7070/ui/#/instances/0000000000300001" {
		t.Fatalf("link %q", link)
	}
	f := notify.Failure(failedInstance(model.Attempt{Number: 3, Outcome: model.OutcomeFailed, ExitCode: ip(3), Executor: "w1", Host: "h1", Error: "exit status 3"}, 3),
		shellTask(model.Policy{MaxRetries: 2, RetryableExitCodes: []int{75}}), out.String(), link)
	if got, want := notify.Subject(&n), "[ax] FIRING critical: task nightly failing (3 failures)"; got != want {
		t.Errorf("subject %q, want %q", got, want)
	}
	text := notify.Text(&n, f, link)
	for _, want := range []string{
		"FIRING critical: task nightly failing (3 failures)\n",
		"Task:        nightly\n", "Instance:    0000000000300001\n", "Failed at:   2026-03-04T02:00:07Z\n",
		"Attempt:     3 of 3\n", "Failure:     exit 3 (not retryable)\n", "Executor:    w1 on host h1\n",
		"What to do: exit 3 is not retryable (policy.retryableExitCodes): fix the input and trigger again (ax trigger nightly)\n",
		"Last 20 lines of output:\n  | line 11\n", "  | line 30\n",
		"Open:        http://ax.example:7070/ui/#/instances/0000000000300001\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("text lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "line 10\n") {
		t.Errorf("text holds more than 20 lines of output:\n%s", text)
	}
	slack := notify.Slack(&n, f, link)
	for _, want := range []string{"*FIRING critical: task nightly failing (3 failures)*\n",
		"Instance <http://ax.example:7070/ui/#/instances/0000000000300001|0000000000300001> of `nightly` failed at 2026-03-04T02:00:07Z, attempt 3 of 3: exit 3 (not retryable)",
		"*What to do:* exit 3", "```\nline 21\n", "line 30\n```"} {
		if !strings.Contains(slack, want) {
			t.Errorf("slack text lacks %q:\n%s", want, slack)
		}
	}

	other := model.AlertNotification{Event: model.AlertResolved, Alert: model.Alert{ID: "executor_lost:w2", Rule: model.RuleExecutorLost,
		Severity: model.SeverityWarning, Subject: model.AlertSubject{Executor: "w2"}, Summary: "executor w2 lost",
		Details: map[string]string{"lastSeen": "2026-03-04T01:00:00Z"}}}
	text = notify.Text(&other, nil, notify.Link("http://ax", &other.Alert))
	for _, want := range []string{"RESOLVED warning: executor w2 lost\n", "Executor:    w2\n", "lastSeen:    2026-03-04T01:00:00Z\n", "Open:        http://ax/ui/#/\n"} {
		if !strings.Contains(text, want) {
			t.Errorf("text lacks %q:\n%s", want, text)
		}
	}
}

// TestRoute: named channels, label matches, severity and event filters,
// ad-hoc URLs, each target once, unknown names reported.
func TestRoute(t *testing.T) {
	ch := func(name string, c channel.Channel) notify.Target {
		c.Name, c.Type, c.URL = name, channel.TypeWebhook, "http://h/"+name
		return notify.Target{Name: name, Channel: c}
	}
	channels := []notify.Target{
		ch("all", channel.Channel{}),
		ch("data", channel.Channel{Match: map[string]string{"team": "data"}}),
		ch("web", channel.Channel{Match: map[string]string{"team": "web"}}),
		ch("pager", channel.Channel{Match: map[string]string{"team": "web"}, MinSeverity: model.SeverityCritical, Events: []string{model.AlertFiring}}),
		ch("quiet", channel.Channel{Match: map[string]string{"team": "none"}, MinSeverity: model.SeverityCritical}),
	}
	names := func(ts []notify.Target) string {
		var s []string
		for _, t := range ts {
			s = append(s, t.Name)
		}
		return strings.Join(s, ",")
	}
	n := failingAlert()
	n.Notify = []string{"pager", "http://adhoc/x", "quiet", "gone", "data"}
	got, missing := notify.Route(&n, channels)
	if want := "pager,http://adhoc/x,quiet,data,all"; names(got) != want {
		t.Errorf("firing critical: routed to %s, want %s", names(got), want)
	}
	if len(missing) != 1 || missing[0] != "gone" {
		t.Errorf("missing %v, want [gone]", missing)
	}
	n.Event, n.Alert.Severity = model.AlertResolved, model.SeverityWarning
	if got, _ := notify.Route(&n, channels); names(got) != "http://adhoc/x,data,all" {
		t.Errorf("resolved warning: routed to %s", names(got))
	}
	n.Notify, n.TaskLabels = nil, nil
	if got, _ := notify.Route(&n, channels); names(got) != "all" {
		t.Errorf("no labels: routed to %s, want all", names(got))
	}
}

type receiver struct {
	mu      sync.Mutex
	fail    int // answer 503 to this many requests first
	status  int // then this (default 200)
	bodies  [][]byte
	headers []http.Header
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	b, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.bodies = append(r.bodies, b)
	r.headers = append(r.headers, req.Header.Clone())
	if len(r.bodies) <= r.fail {
		http.Error(w, "busy", http.StatusServiceUnavailable)
		return
	}
	if r.status != 0 {
		http.Error(w, "no", r.status)
	}
}

func (r *receiver) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.bodies)
}

// fastSender retries without waiting long and records the waits.
func fastSender(waits *[]time.Duration) *notify.Sender {
	var mu sync.Mutex
	return &notify.Sender{Retry: notify.Retry{Tries: 6, Initial: time.Second, Max: 4 * time.Second},
		Sleep: func(ctx context.Context, d time.Duration) error {
			mu.Lock()
			*waits = append(*waits, d)
			mu.Unlock()
			return ctx.Err()
		}}
}

// TestNotifier_WebhookSignedAndRetried: a receiver that fails twice gets
// the third try; every try carries the same delivery id and a signature
// that verifies with the channel's secret; waits double up to the cap.
func TestNotifier_WebhookSignedAndRetried(t *testing.T) {
	rcv := &receiver{fail: 3}
	srv := httptest.NewServer(rcv)
	defer srv.Close()
	var waits []time.Duration
	var counts []string
	nf := notify.New(notify.Config{
		Channels: func() ([]notify.Target, error) {
			return []notify.Target{{Name: "ops", Secret: "k3y", Channel: channel.Channel{Name: "ops", Type: channel.TypeWebhook, URL: srv.URL}}}, nil
		},
		ConsoleURL: "http://console", Node: "n1", Sender: fastSender(&waits),
		Count: func(typ string, delivered bool, _ time.Duration) {
			counts = append(counts, fmt.Sprintf("%s/delivered=%v", typ, delivered))
		},
	})
	if err := nf.Notify(context.Background(), failingAlert()); err != nil {
		t.Fatal(err)
	}
	if rcv.count() != 4 {
		t.Fatalf("%d requests, want 4 (3 failures, then delivered)", rcv.count())
	}
	if fmt.Sprint(waits) != "[1s 2s 4s]" {
		t.Errorf("waits %v, want [1s 2s 4s]", waits)
	}
	if fmt.Sprint(counts) != "[webhook/delivered=true]" {
		t.Errorf("counts %v", counts)
	}
	id := rcv.headers[0].Get(notify.DeliveryHeader)
	for i, h := range rcv.headers {
		ts, sig := h.Get(notify.TimestampHeader), h.Get(notify.SignatureHeader)
		if !notify.Verify([]byte("k3y"), ts, rcv.bodies[i], sig) || !strings.HasPrefix(sig, "sha256=") {
			t.Errorf("try %d: signature %q does not verify", i+1, sig)
		}
		if notify.Verify([]byte("other"), ts, rcv.bodies[i], sig) {
			t.Errorf("try %d: signature verifies with another key", i+1)
		}
		if h.Get(notify.DeliveryHeader) != id || id == "" || h.Get(notify.EventHeader) != "firing" {
			t.Errorf("try %d: delivery %q event %q, want %q firing", i+1, h.Get(notify.DeliveryHeader), h.Get(notify.EventHeader), id)
		}
	}
	var body model.Notification
	if err := json.Unmarshal(rcv.bodies[3], &body); err != nil {
		t.Fatal(err)
	}
	if body.Event != "firing" || body.Alert.ID != "instance_failed:nightly" || body.Link != "http://console/ui/#/instances/0000000000300001" ||
		body.Node != "n1" || !strings.Contains(body.Text, "task nightly failing") {
		t.Errorf("body %+v", body)
	}
}

// TestNotifier_PermanentFailure: a 4xx other than 408/429 is not retried;
// Notify fails when no target took the notification.
func TestNotifier_PermanentFailure(t *testing.T) {
	for _, tt := range []struct {
		status int
		tries  int
	}{{400, 1}, {404, 1}, {429, 6}, {408, 6}, {500, 6}} {
		rcv := &receiver{status: tt.status}
		srv := httptest.NewServer(rcv)
		var waits []time.Duration
		var counts []string
		n := failingAlert()
		n.Notify = []string{srv.URL + "/hook"}
		err := notify.New(notify.Config{Sender: fastSender(&waits), Count: func(typ string, delivered bool, _ time.Duration) {
			counts = append(counts, fmt.Sprintf("%s/delivered=%v", typ, delivered))
		}}).
			Notify(context.Background(), n)
		srv.Close()
		if err == nil || rcv.count() != tt.tries || fmt.Sprint(counts) != "[webhook/delivered=false]" {
			t.Errorf("HTTP %d: error %v after %d tries (counts %v), want a failure after %d", tt.status, err, rcv.count(), counts, tt.tries)
		}
		if rcv.count() > 0 && rcv.headers[0].Get(notify.SignatureHeader) != "" {
			t.Errorf("an ad-hoc URL got a signature")
		}
	}
}

// TestNotifier_RetryStopsWithContext: a canceled context ends the retries.
func TestNotifier_RetryStopsWithContext(t *testing.T) {
	rcv := &receiver{status: 503}
	srv := httptest.NewServer(rcv)
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	n := failingAlert()
	n.Notify = []string{srv.URL}
	start := time.Now()
	err := notify.New(notify.Config{Sender: &notify.Sender{Retry: notify.Retry{Tries: 6, Initial: 100 * time.Millisecond, Max: time.Minute}}}).Notify(ctx, n)
	if err == nil || time.Since(start) > 2*time.Second || rcv.count() < 2 || rcv.count() > 3 {
		t.Errorf("error %v after %s and %d tries; want a failure at the deadline after 2-3 tries", err, time.Since(start), rcv.count())
	}
}

// TestNotifier_Slack: a Slack channel gets {"text": ...} with the message.
func TestNotifier_Slack(t *testing.T) {
	rcv := &receiver{}
	srv := httptest.NewServer(rcv)
	defer srv.Close()
	nf := notify.New(notify.Config{ConsoleURL: "http://c", Channels: func() ([]notify.Target, error) {
		return []notify.Target{{Name: "chat", Channel: channel.Channel{Name: "chat", Type: channel.TypeSlack, URL: srv.URL}}}, nil
	}})
	if err := nf.Notify(context.Background(), failingAlert()); err != nil {
		t.Fatal(err)
	}
	var body map[string]string
	if err := json.Unmarshal(rcv.bodies[0], &body); err != nil || len(body) != 1 {
		t.Fatalf("body %s: %v", rcv.bodies[0], err)
	}
	if !strings.HasPrefix(body["text"], "*FIRING critical: task nightly failing (3 failures)*\n") || !strings.Contains(body["text"], "<http://c/ui/#/instances/0000000000300001|Open in the console>") {
		t.Errorf("text %q", body["text"])
	}
}

// TestNotifier_Email: an email channel sends through SMTP: subject,
// recipients and the plain-text message.
func TestNotifier_Email(t *testing.T) {
	sink := notifytest.NewSMTPSink(t)
	email := func(tls string) notify.Target {
		return notify.Target{Name: "mail", Channel: channel.Channel{Name: "mail", Type: channel.TypeEmail,
			Email: &channel.Email{To: []string{"ops@example.com", "Oncall <oncall@example.com>"}, From: "ax@example.com", SMTP: sink.Addr(), TLS: tls}}}
	}
	nf := notify.New(notify.Config{ConsoleURL: "http://c", Channels: func() ([]notify.Target, error) { return []notify.Target{email(channel.EmailNoTLS)}, nil }})
	if err := nf.Notify(context.Background(), failingAlert()); err != nil {
		t.Fatal(err)
	}
	m := <-sink.Mails
	if m.From != "ax@example.com" || strings.Join(m.To, ",") != "ops@example.com,oncall@example.com" {
		t.Errorf("envelope from %s to %v", m.From, m.To)
	}
	if got := m.Header("Subject"); got != "[ax] FIRING critical: task nightly failing (3 failures)" {
		t.Errorf("subject %q", got)
	}
	if body := m.Body(); !strings.Contains(body, "Open:        http://c/ui/#/instances/0000000000300001") {
		t.Errorf("body:\n%s\nmessage:\n%s", body, m.Data)
	}

	// STARTTLS is required by default: a server without it is refused.
	nf = notify.New(notify.Config{Sender: &notify.Sender{Retry: notify.Retry{Tries: 1}},
		Channels: func() ([]notify.Target, error) { return []notify.Target{email(channel.EmailSTARTTLS)}, nil }})
	if err := nf.Notify(context.Background(), failingAlert()); err == nil || !strings.Contains(strings.ToLower(err.Error()), "starttls") {
		t.Errorf("starttls against a server without it: %v, want a refusal", err)
	}
}
