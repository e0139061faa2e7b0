package agent

import (
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/api/pages"
	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/notify"
	"github.com/ax-scheduler/ax/notify/notifytest"
)

// TestAgent_ChannelTestSend: POST /v1/channels/{name}/test sends a test
// notification through the real notifier, its values opened from their
// sealed form, to receivers that check signatures (a webhook's
// X-AX-Signature, a DingTalk robot's sign), whatever the channel's match
// and minSeverity; and answers delivered, or why not: a refusal
// (permanent), an unreachable receiver, an unknown channel (404).
func TestAgent_ChannelTestSend(t *testing.T) {
	key := make([]byte, EncryptKeySize)
	_, _ = rand.Read(key)
	a := startAgent(t, func(c *Config) { c.EncryptKey = key })
	hooks := &hookReceiver{}
	srv := httptest.NewServer(hooks)
	defer srv.Close()
	ding := notifytest.NewChatReceiver(t, notifytest.DingTalk, "TOKEN123", "ding-secret")
	refusing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "no such hook", http.StatusNotFound)
	}))
	defer refusing.Close()
	gone := httptest.NewServer(http.NotFoundHandler())
	goneURL := gone.URL
	gone.Close()

	for name, body := range map[string]string{
		"ops":  fmt.Sprintf(`{"type":"webhook","url":%q,"secret":"s3cret-key","match":{"team":"none"},"minSeverity":"critical"}`, srv.URL+"/ax"),
		"ding": fmt.Sprintf(`{"type":"dingtalk","url":%q,"secret":"ding-secret"}`, ding.URL()),
		"bad":  fmt.Sprintf(`{"type":"webhook","url":%q}`, refusing.URL+"/hook"),
		"gone": fmt.Sprintf(`{"type":"slack","url":%q}`, goneURL+"/services/x"),
	} {
		if code := apiCall(t, a, http.MethodPut, "/v1/channels/"+name, body, nil); code != 200 {
			t.Fatalf("put channel %s: %d", name, code)
		}
	}

	var got pages.ChannelTest
	if code := apiCall(t, a, http.MethodPost, "/v1/channels/ops/test", "", &got); code != 200 || !got.Delivered || got.Error != "" ||
		got.Channel != "ops" || got.Type != "webhook" || got.Node == "" {
		t.Fatalf("test send to ops: %d %+v", code, got)
	}
	req, body, ok := hooks.get(0)
	if !ok {
		t.Fatal("the webhook received nothing")
	}
	if !notify.Verify([]byte("s3cret-key"), req.Header.Get(notify.TimestampHeader), body, req.Header.Get(notify.SignatureHeader)) {
		t.Errorf("signature %q does not verify", req.Header.Get(notify.SignatureHeader))
	}
	var n model.Notification
	if err := json.Unmarshal(body, &n); err != nil {
		t.Fatal(err)
	}
	if n.Alert.Rule != notify.RuleTest || !strings.Contains(n.Alert.Summary, "Test notification to channel ops") || n.Event != model.AlertFiring {
		t.Errorf("the webhook got %s", body)
	}

	if code := apiCall(t, a, http.MethodPost, "/v1/channels/ding/test", "", &got); code != 200 || !got.Delivered {
		t.Fatalf("test send to ding: %d %+v", code, got)
	}
	if m := ding.Next(t, 5*time.Second); !m.Signed || !strings.Contains(m.Text, "Test notification to channel ding") {
		t.Errorf("the DingTalk robot got %+v", m)
	}

	if code := apiCall(t, a, http.MethodPost, "/v1/channels/bad/test", "", &got); code != 200 || got.Delivered || !got.Permanent ||
		!strings.Contains(got.Error, "404") || !strings.Contains(got.Error, "no such hook") {
		t.Errorf("test send to a refusing receiver: %d %+v", code, got)
	}
	start := time.Now()
	if code := apiCall(t, a, http.MethodPost, "/v1/channels/gone/test", "", &got); code != 200 || got.Delivered || got.Error == "" ||
		strings.Contains(got.Error, "/services/x") {
		t.Errorf("test send to an unreachable receiver: %d %+v (the error must not show the URL's path, the credential)", code, got)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("a test send to an unreachable receiver took %v: it should try once", took)
	}
	var e model.ErrorBody
	if code := apiCall(t, a, http.MethodPost, "/v1/channels/nope/test", "", &e); code != 404 || e.Error == nil || e.Error.Field != "name" {
		t.Errorf("test send to no channel: %d %+v", code, e.Error)
	}
}
