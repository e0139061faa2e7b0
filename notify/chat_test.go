package notify_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/model/channel"
	"github.com/ax-scheduler/ax/notify"
	"github.com/ax-scheduler/ax/notify/notifytest"
)

// TestDingTalkSign_Vectors: the sign of a DingTalk robot's request is
// Base64(HmacSHA256(key secret, timestamp+"\n"+secret)): fixed vectors
// computed outside Go (openssl dgst -sha256 -hmac, and Python's hmac, as
// DingTalk's sample does), and an independent computation.
func TestDingTalkSign_Vectors(t *testing.T) {
	const secret = "SEC0123456789abcdef"
	for _, tt := range []struct {
		ms   int64
		want string
	}{
		// printf '1700000000000\nSEC0123456789abcdef' | openssl dgst -sha256 -hmac SEC0123456789abcdef -binary | base64
		{1700000000000, "TSZbRFUuvaSQaRKUpF970OPCb2/LcQAP3wOvwZIzBZk="},
		{1700000000001, "h9I8htdbvJCasKF0f8Gu+a2Cr5fjl9T+pzb6hx3n+pE="},
	} {
		if got := notify.DingTalkSign(secret, tt.ms); got != tt.want {
			t.Errorf("DingTalkSign(%d) = %q, want %q", tt.ms, got, tt.want)
		}
	}
	ms := time.Date(2026, 3, 4, 2, 0, 7, 123e6, time.UTC).UnixMilli()
	m := hmac.New(sha256.New, []byte("other secret"))
	fmt.Fprintf(m, "%d\n%s", ms, "other secret")
	if got, want := notify.DingTalkSign("other secret", ms), base64.StdEncoding.EncodeToString(m.Sum(nil)); got != want {
		t.Errorf("DingTalkSign = %q, want %q", got, want)
	}
}

// TestFeishuSign_Vectors: a Feishu bot's sign is Base64(HmacSHA256 keyed
// with timestamp+"\n"+secret, of an empty message).
func TestFeishuSign_Vectors(t *testing.T) {
	// printf '' | openssl dgst -sha256 -hmac "$(printf '1700000000\nfeishu-s3cret')" -binary | base64
	if got, want := notify.FeishuSign("feishu-s3cret", 1700000000), "CBMkI8pFpCItovfr0MtDzbw5+M8rXlUZbSwCGRxAig0="; got != want {
		t.Errorf("FeishuSign = %q, want %q", got, want)
	}
	m := hmac.New(sha256.New, []byte("1772589607\nanother"))
	if got, want := notify.FeishuSign("another", 1772589607), base64.StdEncoding.EncodeToString(m.Sum(nil)); got != want {
		t.Errorf("FeishuSign = %q, want %q", got, want)
	}
	if notify.FeishuSign("another", 1772589607) == notify.FeishuSign("another", 1772589608) {
		t.Error("the sign does not depend on the timestamp")
	}
}

// chatMessage renders n (with failure report f, when set) for the chat
// robots through Notifier.Render.
func chatMessage(t *testing.T, n model.AlertNotification, f *model.FailureReport) *notify.Message {
	t.Helper()
	nf := notify.New(notify.Config{ConsoleURL: "http://ax.example:7070",
		Failure: func(context.Context, *model.AlertNotification, string) *model.FailureReport { return f }})
	m, err := nf.Render(context.Background(), &n)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// decodeChat returns the markdown of each chat body, with DingTalk's
// title and the Feishu card's header.
func decodeChat(t *testing.T, m *notify.Message) (dingTitle, ding, wecom, feishuTitle, feishuColor, feishu string) {
	t.Helper()
	var d struct {
		MsgType  string `json:"msgtype"`
		Markdown struct{ Title, Text string }
	}
	var w struct {
		MsgType  string `json:"msgtype"`
		Markdown struct{ Content string }
	}
	var c struct {
		Header struct {
			Title    struct{ Tag, Content string }
			Template string
		}
		Elements []struct{ Tag, Content string }
	}
	for _, x := range []struct {
		b []byte
		v any
	}{{m.DingTalk, &d}, {m.WeCom, &w}, {m.FeishuCard, &c}} {
		if err := json.Unmarshal(x.b, x.v); err != nil {
			t.Fatalf("%s: %v", x.b, err)
		}
	}
	if d.MsgType != "markdown" || w.MsgType != "markdown" || len(c.Elements) != 1 || c.Elements[0].Tag != "markdown" || c.Header.Title.Tag != "plain_text" {
		t.Fatalf("bodies %s %s %s", m.DingTalk, m.WeCom, m.FeishuCard)
	}
	return d.Markdown.Title, d.Markdown.Text, w.Markdown.Content, c.Header.Title.Content, c.Header.Template, c.Elements[0].Content
}

func failureReport(output string) *model.FailureReport {
	return notify.Failure(failedInstance(model.Attempt{Number: 3, Outcome: model.OutcomeFailed, ExitCode: ip(3), Executor: "w1", Host: "h1", Error: "exit status 3"}, 3),
		shellTask(model.Policy{MaxRetries: 2, RetryableExitCodes: []int{75}}), output, "http://ax.example:7070/ui/#/instances/0000000000300001")
}

// TestChat_FailureReport: each robot's markdown carries the failure
// report the other channels carry (task, instance, failure time, attempt
// n of m, error class, error, executor, suggestion, the last 20 lines of
// output, the console link) in its platform's markup.
func TestChat_FailureReport(t *testing.T) {
	var out strings.Builder
	for i := 1; i <= 30; i++ {
		fmt.Fprintf(&out, "line %d <b>&`x`\n", i)
	}
	m := chatMessage(t, failingAlert(), failureReport(out.String()))
	dingTitle, ding, wecom, feishuTitle, color, feishu := decodeChat(t, m)
	const link = "http://ax.example:7070/ui/#/instances/0000000000300001"
	common := []string{"**Task:** nightly", "**Instance:** [0000000000300001](" + link + ")", "**Failed at:** 2026-03-04T02:00:07Z",
		"**Attempt:** 3 of 3", "**Failure:** exit 3 (not retryable)", "**Error:** exit status 3", "**Executor:** w1 on host h1",
		"**What to do:** exit 3 is not retryable (policy.retryableExitCodes): fix the input and trigger again (ax trigger nightly)",
		"**Last 20 lines of output:**", "[Open in the console](" + link + ")", "**Alert:** instance_failed:nightly", "**Count:** 3"}
	for _, tt := range []struct {
		platform, text string
		want           []string
	}{
		{"dingtalk", ding, append([]string{"#### [ax] FIRING critical: task nightly failing (3 failures)\n\n", "> line 11 <b>&`x`\n\n", "> line 30 <b>&`x`\n\n"}, common...)},
		{"wecom", wecom, append([]string{`### <font color="warning">[ax] FIRING critical: task nightly failing (3 failures)</font>` + "\n", "`line 11 <b>&'x'`\n", "`line 30 <b>&'x'`\n"}, common...)},
		{"feishu", feishu, append([]string{"```\nline 11 <b>&`x`\n", "line 30 <b>&`x`\n```\n"}, common...)},
	} {
		for _, want := range tt.want {
			if !strings.Contains(tt.text, want) {
				t.Errorf("%s markdown lacks %q:\n%s", tt.platform, want, tt.text)
			}
		}
		if strings.Contains(tt.text, "line 10 ") {
			t.Errorf("%s markdown holds more than the last 20 lines:\n%s", tt.platform, tt.text)
		}
	}
	if want := "[ax] FIRING critical: task nightly failing (3 failures)"; dingTitle != want || feishuTitle != want || color != "red" {
		t.Errorf("titles %q, %q, color %q; want %q, red", dingTitle, feishuTitle, color, want)
	}
}

// TestChat_OtherAlerts: a resolved alert, and an alert that is not a
// failure, carry their summary, details, times and link, as Slack's and
// email's do; Feishu escapes what its markdown would read as a tag.
func TestChat_OtherAlerts(t *testing.T) {
	resolved := time.Date(2026, 3, 4, 3, 0, 0, 0, time.UTC)
	n := model.AlertNotification{Event: model.AlertResolved, Alert: model.Alert{ID: "executor_lost:w2", Rule: model.RuleExecutorLost,
		Severity: model.SeverityWarning, Subject: model.AlertSubject{Executor: "w2"}, Summary: "executor w2 lost",
		FirstSeen: model.Time{Time: resolved.Add(-time.Hour)}, ResolvedAt: &model.Time{Time: resolved},
		Details: map[string]string{"lastSeen": "2026-03-04T01:00:00Z", "host": "<batch-2>"}}}
	_, ding, wecom, title, color, feishu := decodeChat(t, chatMessage(t, n, nil))
	for platform, text := range map[string]string{"dingtalk": ding, "wecom": wecom, "feishu": feishu} {
		for _, want := range []string{"**Executor:** w2", "**lastSeen:** 2026-03-04T01:00:00Z", "[Open in the console](http://ax.example:7070/ui/#/)",
			"**Resolved:** 2026-03-04T03:00:00Z", "**First seen:** 2026-03-04T02:00:00Z"} {
			if !strings.Contains(text, want) {
				t.Errorf("%s markdown lacks %q:\n%s", platform, want, text)
			}
		}
	}
	if !strings.Contains(ding, "#### [ax] RESOLVED warning: executor w2 lost") || !strings.Contains(wecom, `<font color="info">[ax] RESOLVED warning: executor w2 lost</font>`) ||
		title != "[ax] RESOLVED warning: executor w2 lost" || color != "green" {
		t.Errorf("headings: dingtalk %q, wecom %q, feishu %q %s", ding, wecom, title, color)
	}
	if !strings.Contains(feishu, "**host:** &lt;batch-2&gt;") || !strings.Contains(ding, "**host:** <batch-2>") {
		t.Errorf("details: feishu %q, dingtalk %q", feishu, ding)
	}
}

// TestChat_SizeLimits: a message that would pass a platform's limit
// keeps its last lines of output and cuts the earliest, saying so;
// one that is too long without any output is cut itself, marked; every
// body stays within its limit and valid UTF-8.
func TestChat_SizeLimits(t *testing.T) {
	var out strings.Builder
	for i := 1; i <= 20; i++ {
		fmt.Fprintf(&out, "%02d %s\n", i, strings.Repeat("数据", 400)) // 2,400 bytes a line, capped at 500
	}
	huge := failingAlert()
	huge.Alert.Rule, huge.Alert.Subject.Instance = model.RuleStuckReady, ""
	huge.Alert.Details = map[string]string{}
	for i := 0; i < 200; i++ {
		huge.Alert.Details[fmt.Sprintf("k%03d", i)] = strings.Repeat("é", 150)
	}
	for _, tt := range []struct {
		name       string
		n          model.AlertNotification
		f          *model.FailureReport
		ding, wc   string // what the markdown must hold
		fs         string
		dingCut    bool // whether DingTalk's is cut (its limit is the largest)
		lastOutput bool
	}{
		{"long output", failingAlert(), failureReport(out.String()), "", "", "", false, true},
		{"long details", huge, nil, "… (cut to fit DingTalk's message limit)", "… (cut to fit WeCom's message limit)", "… (cut to fit Feishu's message limit)", true, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m := chatMessage(t, tt.n, tt.f)
			_, ding, wecom, _, _, feishu := decodeChat(t, m)
			if len(m.DingTalk) > notify.DingTalkMaxBody || len(wecom) > notify.WeComMaxContent || len(m.FeishuCard)+100 > notify.FeishuMaxBody {
				t.Errorf("sizes: dingtalk body %d (max %d), wecom content %d (max %d), feishu card %d (max %d with its signature)",
					len(m.DingTalk), notify.DingTalkMaxBody, len(wecom), notify.WeComMaxContent, len(m.FeishuCard), notify.FeishuMaxBody)
			}
			for platform, text := range map[string]string{"dingtalk": ding, "wecom": wecom, "feishu": feishu} {
				if !utf8.ValidString(text) {
					t.Errorf("%s: not valid UTF-8", platform)
				}
				if !strings.Contains(text, "**Task:** nightly") {
					t.Errorf("%s: the head of the message is cut:\n%s", platform, text)
				}
				if tt.lastOutput && !strings.Contains(text, "20 "+strings.Repeat("数据", 82)) {
					t.Errorf("%s: the last line of output is cut:\n%s", platform, text)
				}
			}
			if tt.lastOutput {
				if !strings.Contains(wecom, "earlier lines cut to fit WeCom's message limit") || strings.Contains(wecom, "`01 ") {
					t.Errorf("wecom: the earliest lines are not cut, or not marked:\n%s", wecom)
				}
				if !strings.Contains(ding, "**Last 20 lines of output:**") || !strings.Contains(ding, "> 01 ") {
					t.Errorf("dingtalk: 20 lines of 500 bytes fit in 20,000 bytes, but were cut:\n%s", ding)
				}
			}
			for _, x := range []struct{ text, want string }{{ding, tt.ding}, {wecom, tt.wc}, {feishu, tt.fs}} {
				if x.want != "" && !strings.HasSuffix(x.text, x.want) {
					t.Errorf("markdown does not end with %q:\n...%s", x.want, x.text[max(0, len(x.text)-200):])
				}
			}
		})
	}
}

// chatTargets are a DingTalk robot and a Feishu bot (both signed) and a
// WeCom robot, on notifytest's receivers.
func chatTargets(t *testing.T) ([]notify.Target, map[string]*notifytest.ChatReceiver) {
	rcv := map[string]*notifytest.ChatReceiver{
		"dingtalk": notifytest.NewChatReceiver(t, notifytest.DingTalk, "d1ng-token", "SEC0123456789abcdef"),
		"wecom":    notifytest.NewChatReceiver(t, notifytest.WeCom, "693a91f6-7xxx", ""),
		"feishu":   notifytest.NewChatReceiver(t, notifytest.Feishu, "0f1e2d3c-hook", "feishu-s3cret"),
	}
	return []notify.Target{
		{Name: "ding", Secret: "SEC0123456789abcdef", Channel: channel.Channel{Name: "ding", Type: channel.TypeDingTalk, URL: rcv["dingtalk"].URL()}},
		{Name: "wecom", Channel: channel.Channel{Name: "wecom", Type: channel.TypeWeCom, URL: rcv["wecom"].URL()}},
		{Name: "lark", Secret: "feishu-s3cret", Channel: channel.Channel{Name: "lark", Type: channel.TypeFeishu, URL: rcv["feishu"].URL()}},
	}, rcv
}

// TestNotifier_ChatRobots: a notification reaches each robot, signed as
// its platform documents (checked by notifytest's receivers), with the
// message's markdown; the receivers refuse a wrong secret and a stale
// timestamp, and those refusals are not retried.
func TestNotifier_ChatRobots(t *testing.T) {
	targets, rcv := chatTargets(t)
	var counts []string
	var mu sync.Mutex
	nf := notify.New(notify.Config{ConsoleURL: "http://c", Channels: func() ([]notify.Target, error) { return targets, nil },
		Count: func(typ string, delivered bool, _ time.Duration) {
			mu.Lock()
			counts = append(counts, fmt.Sprintf("%s/%v", typ, delivered))
			mu.Unlock()
		}})
	if err := nf.Notify(context.Background(), failingAlert()); err != nil {
		t.Fatal(err)
	}
	for platform, r := range rcv {
		msg := r.Next(t, time.Second)
		if msg.Signed != (platform != "wecom") || !strings.Contains(msg.Text, "[Open in the console](http://c/ui/#/instances/0000000000300001)") {
			t.Errorf("%s: signed %v, text %q", platform, msg.Signed, msg.Text)
		}
		if refused := r.Refusals(); len(refused) > 0 {
			t.Errorf("%s refused %q", platform, refused)
		}
	}
	if len(counts) != 3 || strings.Contains(strings.Join(counts, " "), "false") {
		t.Errorf("counts %v", counts)
	}

	// A wrong secret, then a clock an hour and a half off: refused, once.
	for _, tt := range []struct {
		name  string
		edit  func(*notify.Target)
		clock time.Duration
	}{
		{"wrong secret", func(tg *notify.Target) { tg.Secret += "x" }, 0},
		{"stale timestamp", func(*notify.Target) {}, 90 * time.Minute},
	} {
		for _, i := range []int{0, 2} {
			tg := targets[i]
			tt.edit(&tg)
			r := rcv[map[int]string{0: "dingtalk", 2: "feishu"}[i]]
			r.SetClock(func() time.Time { return time.Now().Add(tt.clock) })
			before := len(r.Refusals())
			var waits []time.Duration
			tries, err := fastSender(&waits).Deliver(context.Background(), &tg, chatMessage(t, failingAlert(), nil))
			r.SetClock(time.Now)
			if err == nil || !notify.IsPermanent(err) || tries != 1 || len(r.Refusals()) != before+1 {
				t.Errorf("%s %s: %d tries, error %v (refusals %q); want one permanent refusal", tt.name, tg.Channel.Type, tries, err, r.Refusals())
			}
		}
	}
}

// TestNotifier_ChatSignatureOnTheWire: the DingTalk sign is URL-encoded
// into the query next to the robot's access_token (a "+" in it would
// otherwise read as a space), with the Unix time in milliseconds; the
// Feishu timestamp (seconds, a string) and sign are in the body; a
// fixed clock gives the vectors of the signing tests.
func TestNotifier_ChatSignatureOnTheWire(t *testing.T) {
	var mu sync.Mutex
	var queries, bodies []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		queries, bodies = append(queries, r.URL.RawQuery), append(bodies, string(b))
		mu.Unlock()
		_, _ = w.Write([]byte(`{"errcode":0,"errmsg":"ok"}`))
	}))
	defer srv.Close()
	s := &notify.Sender{Now: func() time.Time { return time.UnixMilli(1700000000001) }}
	m := chatMessage(t, failingAlert(), nil)
	ding := notify.Target{Name: "d", Secret: "SEC0123456789abcdef", Channel: channel.Channel{Type: channel.TypeDingTalk, URL: srv.URL + "/robot/send?access_token=abc"}}
	if _, err := s.Deliver(context.Background(), &ding, m); err != nil {
		t.Fatal(err)
	}
	if want := "access_token=abc&timestamp=1700000000001&sign=h9I8htdbvJCasKF0f8Gu%2Ba2Cr5fjl9T%2Bpzb6hx3n%2BpE%3D"; queries[0] != want {
		t.Errorf("query %q, want %q", queries[0], want)
	}
	if bodies[0] != string(m.DingTalk) {
		t.Errorf("body %s, want the rendered one", bodies[0])
	}
	s.Now = func() time.Time { return time.Unix(1700000000, 0) }
	lark := notify.Target{Name: "f", Secret: "feishu-s3cret", Channel: channel.Channel{Type: channel.TypeFeishu, URL: srv.URL + "/open-apis/bot/v2/hook/h"}}
	if _, err := s.Deliver(context.Background(), &lark, m); err != nil {
		t.Fatal(err)
	}
	want := `{"timestamp":"1700000000","sign":"CBMkI8pFpCItovfr0MtDzbw5+M8rXlUZbSwCGRxAig0=","msg_type":"interactive","card":` + string(m.FeishuCard) + `}`
	if bodies[1] != want || queries[1] != "" {
		t.Errorf("feishu body %s (query %q), want %s", bodies[1], queries[1], want)
	}
	lark.Secret = "" // unsigned: neither field
	if _, err := s.Deliver(context.Background(), &lark, m); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(bodies[2], `{"msg_type":"interactive","card":{`) {
		t.Errorf("unsigned feishu body %s", bodies[2])
	}
}

// TestNotifier_ChatAnswers: the robots answer HTTP 200 with a code: zero
// is delivered; a rate limit (DingTalk 130101, WeCom 45009) is retried;
// any other code is a permanent failure, not retried.
func TestNotifier_ChatAnswers(t *testing.T) {
	for _, tt := range []struct {
		typ, answer string
		tries       int
		ok          bool
	}{
		{channel.TypeDingTalk, `{"errcode":0,"errmsg":"ok"}`, 1, true},
		{channel.TypeDingTalk, `{"errcode":310000,"errmsg":"keywords not in content"}`, 1, false},
		{channel.TypeDingTalk, `{"errcode":130101,"errmsg":"send too fast"}`, 6, false},
		{channel.TypeWeCom, `{"errcode":45009,"errmsg":"api freq out of limit"}`, 6, false},
		{channel.TypeWeCom, `{"errcode":93000,"errmsg":"invalid webhook url"}`, 1, false},
		{channel.TypeFeishu, `{"code":19024,"data":{},"msg":"Key Words Not Found"}`, 1, false},
		{channel.TypeFeishu, `{"StatusCode":0,"StatusMessage":"success"}`, 1, true},
		{channel.TypeFeishu, `{"code":0,"data":{},"msg":"success"}`, 1, true},
	} {
		var n int
		var mu sync.Mutex
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			n++
			mu.Unlock()
			_, _ = w.Write([]byte(tt.answer))
		}))
		var waits []time.Duration
		tg := notify.Target{Name: "x", Channel: channel.Channel{Type: tt.typ, URL: srv.URL}}
		tries, err := fastSender(&waits).Deliver(context.Background(), &tg, chatMessage(t, failingAlert(), nil))
		srv.Close()
		if (err == nil) != tt.ok || tries != tt.tries || n != tt.tries {
			t.Errorf("%s answered %s: %d tries (%d requests), error %v; want %d, delivered %v", tt.typ, tt.answer, tries, n, err, tt.tries, tt.ok)
		}
		if err != nil && !strings.Contains(err.Error(), "answered code") {
			t.Errorf("error %q does not give the code", err)
		}
	}
}

// TestNotifier_ErrorsHideTheURL: a delivery that gets no answer fails
// with an error (logged at WARN) that holds the URL's scheme and host
// only: a Slack webhook's path, a robot's token and a DingTalk signature
// are credentials. (The error held the whole URL.)
func TestNotifier_ErrorsHideTheURL(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	base := srv.URL
	srv.Close() // nothing answers there now
	for _, tg := range []notify.Target{
		{Name: "chat", Channel: channel.Channel{Type: channel.TypeSlack, URL: base + "/services/T0/B0/CREDENTIAL"}},
		{Name: "ding", Secret: "SECx", Channel: channel.Channel{Type: channel.TypeDingTalk, URL: base + "/robot/send?access_token=CREDENTIAL"}},
		{Name: "wecom", Channel: channel.Channel{Type: channel.TypeWeCom, URL: base + "/cgi-bin/webhook/send?key=CREDENTIAL"}},
		{Name: "lark", Channel: channel.Channel{Type: channel.TypeFeishu, URL: base + "/open-apis/bot/v2/hook/CREDENTIAL"}},
	} {
		var waits []time.Duration
		_, err := fastSender(&waits).Deliver(context.Background(), &tg, chatMessage(t, failingAlert(), nil))
		if err == nil || strings.Contains(err.Error(), "CREDENTIAL") || strings.Contains(err.Error(), "sign=") || !strings.Contains(err.Error(), base+"/(redacted)") {
			t.Errorf("%s: error %v", tg.Channel.Type, err)
		}
	}
}
