package notifytest_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/notify/notifytest"
)

// post sends body to u and returns the platform's answer code.
func post(t *testing.T, u, body string) int {
	t.Helper()
	resp, err := http.Post(u, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var a struct {
		ErrCode *int `json:"errcode"`
		Code    *int `json:"code"`
	}
	if resp.StatusCode != http.StatusOK || json.Unmarshal(b, &a) != nil || (a.ErrCode == nil) == (a.Code == nil) {
		t.Fatalf("answer %d %s", resp.StatusCode, b)
	}
	if a.ErrCode != nil {
		return *a.ErrCode
	}
	return *a.Code
}

func sign(key, msg string) string {
	m := hmac.New(sha256.New, []byte(key))
	m.Write([]byte(msg))
	return base64.StdEncoding.EncodeToString(m.Sum(nil))
}

// TestChatReceiver_DingTalk: the receiver takes a markdown message signed
// as DingTalk documents, with a timestamp in milliseconds up to an hour
// either side of its clock, and refuses a wrong token, a missing or wrong
// sign, a sign not URL-encoded ("+" reads as a space), a timestamp out of
// the window, and a body over 20,000 bytes.
func TestChatReceiver_DingTalk(t *testing.T) {
	const secret = "SEC0123456789abcdef"
	r := notifytest.NewChatReceiver(t, notifytest.DingTalk, "tok", secret)
	now := time.UnixMilli(1700000000001)
	r.SetClock(func() time.Time { return now })
	const msg = `{"msgtype":"markdown","markdown":{"title":"t","text":"hello"}}`
	signed := func(ts time.Time, encode bool) string {
		ms := strconv.FormatInt(ts.UnixMilli(), 10)
		s := sign(secret, ms+"\n"+secret)
		if encode {
			s = url.QueryEscape(s)
		}
		return r.URL() + "&timestamp=" + ms + "&sign=" + s
	}
	// The sign at 1700000000001 holds a "+": h9I8htdbvJCasKF0f8Gu+a2Cr5fjl9T+pzb6hx3n+pE=
	for _, tt := range []struct {
		name, url, body string
		code            int
	}{
		{"signed", signed(now, true), msg, 0},
		{"59 minutes early", signed(now.Add(-59*time.Minute), true), msg, 0},
		{"59 minutes late", signed(now.Add(59*time.Minute), true), msg, 0},
		{"61 minutes early", signed(now.Add(-61*time.Minute), true), msg, 310000},
		{"61 minutes late", signed(now.Add(61*time.Minute), true), msg, 310000},
		{"sign not URL-encoded", signed(now, false), msg, 310000},
		{"unsigned", r.URL(), msg, 310000},
		{"wrong sign", r.URL() + "&timestamp=1700000000001&sign=" + url.QueryEscape(sign("other", "1700000000001\nother")), msg, 310000},
		{"wrong token", strings.Replace(signed(now, true), "access_token=tok", "access_token=tik", 1), msg, 300001},
		{"text message", signed(now, true), `{"msgtype":"text","text":{"content":"x"}}`, 40035},
		{"too long", signed(now, true), `{"msgtype":"markdown","markdown":{"title":"t","text":"` + strings.Repeat("x", 20000) + `"}}`, 460101},
	} {
		if got := post(t, tt.url, tt.body); got != tt.code {
			t.Errorf("%s: code %d, want %d", tt.name, got, tt.code)
		}
	}
	if m := r.Next(t, time.Second); !m.Signed || m.Title != "t" || m.Text != "hello" {
		t.Errorf("message %+v", m)
	}
	if n := len(r.Refusals()); n != 8 {
		t.Errorf("%d refusals, want 8: %q", n, r.Refusals())
	}
}

// TestChatReceiver_WeCom: the key in the URL is the credential; content
// is at most 4096 bytes.
func TestChatReceiver_WeCom(t *testing.T) {
	r := notifytest.NewChatReceiver(t, notifytest.WeCom, "k-1", "")
	body := func(content string) string {
		b, _ := json.Marshal(map[string]any{"msgtype": "markdown", "markdown": map[string]string{"content": content}})
		return string(b)
	}
	for _, tt := range []struct {
		name, url, body string
		code            int
	}{
		{"4096 bytes", r.URL(), body(strings.Repeat("é", 2048)), 0},
		{"4097 bytes", r.URL(), body(strings.Repeat("é", 2048) + "x"), 40058},
		{"wrong key", strings.Replace(r.URL(), "key=k-1", "key=k-2", 1), body("x"), 93000},
		{"not markdown", r.URL(), `{"msgtype":"text","text":{"content":"x"}}`, 40008},
	} {
		if got := post(t, tt.url, tt.body); got != tt.code {
			t.Errorf("%s: code %d, want %d", tt.name, got, tt.code)
		}
	}
	if m := r.Next(t, time.Second); m.Signed || len(m.Text) != 4096 {
		t.Errorf("message signed %v, %d bytes", m.Signed, len(m.Text))
	}
}

// TestChatReceiver_Feishu: the receiver takes an interactive card whose
// body holds timestamp (seconds) and sign as Feishu documents, within an
// hour of its clock, and refuses anything else with code 19021.
func TestChatReceiver_Feishu(t *testing.T) {
	const secret = "feishu-s3cret"
	r := notifytest.NewChatReceiver(t, notifytest.Feishu, "hook-1", secret)
	now := time.Unix(1700000000, 0)
	r.SetClock(func() time.Time { return now })
	card := `"msg_type":"interactive","card":{"header":{"title":{"tag":"plain_text","content":"T"}},"elements":[{"tag":"markdown","content":"**x**"}]}`
	signed := func(ts time.Time, key string) string {
		s := strconv.FormatInt(ts.Unix(), 10)
		return fmt.Sprintf(`{"timestamp":%q,"sign":%q,%s}`, s, sign(s+"\n"+key, ""), card)
	}
	for _, tt := range []struct {
		name, url, body string
		code            int
	}{
		{"signed", r.URL(), signed(now, secret), 0},
		{"59 minutes late", r.URL(), signed(now.Add(59*time.Minute), secret), 0},
		{"61 minutes late", r.URL(), signed(now.Add(61*time.Minute), secret), 19021},
		{"61 minutes early", r.URL(), signed(now.Add(-61*time.Minute), secret), 19021},
		{"wrong secret", r.URL(), signed(now, "other"), 19021},
		{"keyed with the secret alone", r.URL(), fmt.Sprintf(`{"timestamp":"1700000000","sign":%q,%s}`, sign(secret, "1700000000\n"+secret), card), 19021},
		{"unsigned", r.URL(), "{" + card + "}", 19021},
		{"wrong hook", strings.Replace(r.URL(), "hook-1", "hook-2", 1), signed(now, secret), 19001},
	} {
		if got := post(t, tt.url, tt.body); got != tt.code {
			t.Errorf("%s: code %d, want %d", tt.name, got, tt.code)
		}
	}
	if m := r.Next(t, time.Second); !m.Signed || m.Title != "T" || m.Text != "**x**" {
		t.Errorf("message %+v", m)
	}
}
