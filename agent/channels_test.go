package agent

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/api"
	"github.com/ax-scheduler/ax/fsm/command"
	"github.com/ax-scheduler/ax/internal/testkit"
	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/model/channel"
	"github.com/ax-scheduler/ax/notify"
	"github.com/ax-scheduler/ax/notify/notifytest"
)

// hookReceiver records the requests a webhook channel receives.
type hookReceiver struct {
	mu   sync.Mutex
	reqs []*http.Request
	body [][]byte
}

func (h *hookReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	h.mu.Lock()
	h.reqs, h.body = append(h.reqs, r), append(h.body, b)
	h.mu.Unlock()
}

func (h *hookReceiver) get(i int) (*http.Request, []byte, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if i >= len(h.reqs) {
		return nil, nil, false
	}
	return h.reqs[i], h.body[i], true
}

func apiCall(t *testing.T, a *Agent, method, path, body string, out any) int {
	t.Helper()
	return apiCallHeader(t, a, method, path, body, nil, out)
}

// apiCallHeader sends one request with the headers hdr to a's API and
// decodes its answer into out (when set); it returns the status.
func apiCallHeader(t *testing.T, a *Agent, method, path, body string, hdr map[string]string, out any) int {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+a.HTTPAddr()+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: %v (%s)", method, path, err, b)
		}
	}
	if resp.StatusCode/100 != 2 {
		t.Logf("%s %s: %d %s", method, path, resp.StatusCode, b)
	}
	return resp.StatusCode
}

// TestAgent_ChannelNotifications: channels PUT through the API (values
// sealed, never answered) receive the notification of a really failed
// instance: the webhook signed, with the failure's log tail, failure
// time, attempt n of m, suggestion and console link; the email through an
// SMTP sink.
func TestAgent_ChannelNotifications(t *testing.T) {
	key := make([]byte, EncryptKeySize)
	_, _ = rand.Read(key)
	tc := startCluster(t, 1, func(c *Config) { c.Executor, c.EncryptKey = true, key })
	a := tc.agents[0]
	hooks := &hookReceiver{}
	srv := httptest.NewServer(hooks)
	defer srv.Close()
	sink := notifytest.NewSMTPSink(t)

	if code := apiCall(t, a, http.MethodPut, "/v1/channels/ops", fmt.Sprintf(`{"name":"ops","type":"webhook","url":%q,"secret":"s3cret-key"}`, srv.URL+"/ax"), nil); code != 200 {
		t.Fatalf("put webhook channel: %d", code)
	}
	if code := apiCall(t, a, http.MethodPut, "/v1/channels/mail", fmt.Sprintf(`{"type":"email","match":{"team":"data"},"minSeverity":"critical",
		"email":{"to":["oncall@example.com"],"from":"ax@example.com","smtp":%q,"tls":"none","username":"","password":"pw-123"}}`, sink.Addr()), nil); code != 200 {
		t.Fatalf("put email channel: %d", code)
	}
	var list channel.List
	apiCall(t, a, http.MethodGet, "/v1/channels", "", &list)
	raw, _ := json.Marshal(list)
	if len(list.Channels) != 2 || !list.Channels[1].SecretSet || !list.Channels[0].Email.PasswordSet ||
		strings.Contains(string(raw), "s3cret-key") || strings.Contains(string(raw), "pw-123") {
		t.Fatalf("channels answered %s", raw)
	}
	if rec, _ := a.fsm.Channel("ops"); !rec.SecretEncrypted || bytes.Contains(rec.Secret, []byte("s3cret-key")) {
		t.Errorf("the webhook secret is stored in the clear: %+v", rec)
	}

	task := &model.Task{Name: "nightly", Labels: map[string]string{"team": "data"}, Trigger: model.Trigger{Type: model.TriggerEvent},
		Action: model.Action{Type: model.ActionShell, Command: `for i in $(seq 1 30); do echo "line $i"; done; exit 3`},
		Policy: model.Policy{MaxRetries: 1, RetryableExitCodes: []int{75}, Notify: []string{"ops"}}}
	ctx := context.Background()
	if _, err := a.tasks.PutTask(ctx, api.Caller{Actor: "tester"}, task, api.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	sub, err := a.tasks.Trigger(ctx, api.Caller{Actor: "tester"}, "nightly", model.TriggerRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var in *model.Instance
	testkit.Until(t, 20*time.Second, "the instance to fail", func() bool {
		in, err = a.tasks.GetInstance(ctx, sub.ID)
		return err == nil && in.State == model.StateFailed
	})
	link := "http://" + tc.nodes[0].Addr() + "/ui/#/instances/" + sub.ID

	check := func(what string, req *http.Request, body []byte) {
		t.Helper()
		if !notify.Verify([]byte("s3cret-key"), req.Header.Get(notify.TimestampHeader), body, req.Header.Get(notify.SignatureHeader)) {
			t.Errorf("%s: signature %q does not verify", what, req.Header.Get(notify.SignatureHeader))
		}
		var n model.Notification
		if err := json.Unmarshal(body, &n); err != nil {
			t.Fatal(err)
		}
		f := n.Failure
		if f == nil {
			t.Fatalf("%s: no failure in %s", what, body)
		}
		if f.InstanceID != sub.ID || f.Attempt != 1 || f.MaxAttempts != 2 || f.Class != model.FailureExit || f.Retryable ||
			*f.ExitCode != 3 || !f.FailedAt.Equal(in.FinishedAt.Time) || f.Link != link || n.Link != link {
			t.Errorf("%s: failure %+v, want attempt 1 of 2, exit 3 not retryable, failed at %s, link %s", what, f, in.FinishedAt, link)
		}
		if len(f.LogTail) != 20 || f.LogTail[0] != "line 11" || f.LogTail[19] != "line 30" {
			t.Errorf("%s: log tail %q, want lines 11 to 30", what, f.LogTail)
		}
		if want := "exit 3 is not retryable (policy.retryableExitCodes): fix the input and trigger again (ax trigger nightly)"; f.Suggestion != want {
			t.Errorf("%s: suggestion %q, want %q", what, f.Suggestion, want)
		}
		for _, want := range []string{"Attempt:     1 of 2\n", "Failed at:   " + in.FinishedAt.UTC().Format(time.RFC3339), "  | line 30\n", "Open:        " + link} {
			if !strings.Contains(n.Text, want) {
				t.Errorf("%s: text lacks %q:\n%s", what, want, n.Text)
			}
		}
	}

	// The failure raises the task's instance_failed alert, whose
	// notification the leader's loop sends to the channels.
	testkit.Until(t, 20*time.Second, "the failure's webhook", func() bool { _, _, ok := hooks.get(0); return ok })
	req, body, _ := hooks.get(0)
	check("alerter", req, body)
	select {
	case m := <-sink.Mails:
		if got := m.Header("Subject"); !strings.HasPrefix(got, "[ax] FIRING critical: task nightly") || !strings.Contains(got, "exit status 3") {
			t.Errorf("mail subject %q", got)
		}
		if b := m.Body(); !strings.Contains(b, "Attempt:     1 of 2\n") || !strings.Contains(b, "What to do: exit 3 is not retryable") || !strings.Contains(b, link) {
			t.Errorf("mail body:\n%s", b)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("no mail")
	}

	// The alert records (a parallel branch) call the notifier with the
	// incident: the same rendering.
	n := model.AlertNotification{Event: model.AlertFiring, TaskLabels: task.Labels, Notify: []string{"ops"},
		Alert: model.Alert{ID: "instance_failed:nightly", Rule: model.RuleInstanceFailed, Severity: model.SeverityCritical,
			Subject: model.AlertSubject{Task: "nightly", Instance: sub.ID}, Summary: "task nightly failing", State: model.AlertFiring,
			FirstSeen: in.FinishedAt, LastSeen: in.FinishedAt, Count: 3}}
	if err := a.chans.Notify(ctx, n); err != nil {
		t.Fatal(err)
	}
	req, body, ok := hooks.get(1)
	if !ok {
		t.Fatal("no second webhook")
	}
	check("records", req, body)
	if m := <-sink.Mails; m.Header("Subject") != "[ax] FIRING critical: task nightly failing (3 failures)" {
		t.Errorf("mail subject %q", m.Header("Subject"))
	}

	if code := apiCall(t, a, http.MethodDelete, "/v1/channels/ops", "", nil); code != 200 {
		t.Errorf("delete: %d", code)
	}
	if code := apiCall(t, a, http.MethodGet, "/v1/channels/ops", "", nil); code != 404 {
		t.Errorf("get after delete: %d, want 404", code)
	}
}

// TestAgent_ChannelURLsSealed: with -encrypt-key-file a slack or webhook
// channel's URL (a Slack webhook's URL is its credential) is sealed like
// its secret: the state machine keeps only its scheme and host, writers
// read it whole, readers redacted. Channels stored in the clear (before
// the key, or before protocol 6: an upgrade) are sealed by the leader,
// a compare-and-set that keeps a change made meanwhile.
func TestAgent_ChannelURLsSealed(t *testing.T) {
	key := make([]byte, EncryptKeySize)
	_, _ = rand.Read(key)
	a := startAgent(t, func(c *Config) { c.EncryptKey = key })
	testkit.Until(t, 10*time.Second, "protocol 6", func() bool { return a.fsm.Proto() >= command.ProtoSealedChannels })
	const slackURL = "https://hooks.slack.com/services/T000/B000/SLACKSECRET"
	if code := apiCall(t, a, http.MethodPut, "/v1/channels/chat", `{"type":"slack","url":"`+slackURL+`"}`, nil); code != 200 {
		t.Fatalf("put slack channel: %d", code)
	}
	rec, _ := a.fsm.Channel("chat")
	if len(rec.SealedURL) == 0 || rec.Channel.URL != "https://hooks.slack.com/(redacted)" || bytes.Contains(rec.SealedURL, []byte("SLACKSECRET")) {
		t.Fatalf("stored %+v: want the URL sealed and only its host in the clear", rec)
	}
	var got channel.Channel
	if apiCall(t, a, http.MethodGet, "/v1/channels/chat", "", &got); got.URL != slackURL {
		t.Errorf("an admin reads URL %q, want %q", got.URL, slackURL)
	}

	// Stored in the clear, as before the key or the upgrade: the leader
	// seals it, keeping its definition.
	plain := command.PutChannel{Channel: channel.Channel{Name: "ops", Type: channel.TypeWebhook, URL: "https://user:pass@hooks.example/ax?key=KEYSECRET",
		Match: map[string]string{"team": "data"}}, Secret: []byte("SIGNSECRET")}
	ctx := context.Background()
	if err := a.rep.ProposeOwn(ctx, command.TypePutChannel, plain); err != nil {
		t.Fatal(err)
	}
	a.chans.Seal(ctx)
	rec, _ = a.fsm.Channel("ops")
	if !rec.Sealed() || !rec.SecretEncrypted || bytes.Contains(rec.Secret, []byte("SIGNSECRET")) || rec.Channel.URL != "https://hooks.example/(redacted)" ||
		rec.Channel.Match["team"] != "data" || rec.Version != 2 {
		t.Fatalf("after sealing: %+v", rec)
	}
	if apiCall(t, a, http.MethodGet, "/v1/channels/ops", "", &got); got.URL != plain.Channel.URL || !got.SecretSet {
		t.Errorf("an admin reads %+v, want the URL %q", got, plain.Channel.URL)
	}
	targets, err := a.chans.Targets()
	if err != nil || len(targets) != 2 || targets[1].Channel.URL != plain.Channel.URL || targets[1].Secret != "SIGNSECRET" || targets[0].Channel.URL != slackURL {
		t.Fatalf("the notifier's targets: %+v, %v", targets, err)
	}
}
