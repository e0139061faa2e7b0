package api_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/ax-scheduler/ax/api"
	"github.com/ax-scheduler/ax/model/channel"
)

// TestServer_PutChannelValidation: a bad channel is a 400 naming the
// field, and reaches no backend.
func TestServer_PutChannelValidation(t *testing.T) {
	put := func(name, body string) request {
		return request{method: http.MethodPut, path: "/v1/channels/" + name, body: body}
	}
	mail := func(email string) string { return `{"type":"email","email":` + email + `}` }
	tests := []struct {
		name  string
		req   request
		field string
	}{
		{"no type", put("ops", `{"url":"https://h/x"}`), "type"},
		{"bad type", put("ops", `{"type":"pager","url":"https://h/x"}`), "type"},
		{"url scheme", put("ops", `{"type":"webhook","url":"ftp://h/x"}`), "url"},
		{"url relative", put("ops", `{"type":"slack","url":"/hook"}`), "url"},
		{"secret on slack", put("ops", `{"type":"slack","url":"https://h/x","secret":"k"}`), "secret"},
		{"name differs", put("ops", `{"name":"dev","type":"webhook","url":"https://h/x"}`), "name"},
		{"bad path name", put("Ops", `{"type":"webhook","url":"https://h/x"}`), "name"},
		{"unknown field", put("ops", `{"type":"webhook","url":"https://h/x","secrt":"k"}`), "secrt"},
		{"severity", put("ops", `{"type":"webhook","url":"https://h/x","minSeverity":"high"}`), "minSeverity"},
		{"events", put("ops", `{"type":"webhook","url":"https://h/x","events":["fired"]}`), "events"},
		{"email missing", put("ops", `{"type":"email"}`), "email"},
		{"email to", put("ops", mail(`{"to":["not-an-address"],"from":"ax@example.com","smtp":"mail:587"}`)), "email.to"},
		{"email from", put("ops", mail(`{"to":["a@example.com"],"from":"","smtp":"mail:587"}`)), "email.from"},
		{"email smtp", put("ops", mail(`{"to":["a@example.com"],"from":"ax@example.com","smtp":"mail"}`)), "email.smtp"},
		{"email smtp port", put("ops", mail(`{"to":["a@example.com"],"from":"ax@example.com","smtp":"mail:smtp"}`)), "email.smtp"},
		{"email tls", put("ops", mail(`{"to":["a@example.com"],"from":"ax@example.com","smtp":"mail:25","tls":"ssl"}`)), "email.tls"},
		{"email with url", put("ops", `{"type":"email","url":"https://h/x","email":{"to":["a@example.com"],"from":"ax@example.com","smtp":"mail:25"}}`), "url"},
		{"dingtalk without url", put("ops", `{"type":"dingtalk","secret":"SECx"}`), "url"},
		{"dingtalk url scheme", put("ops", `{"type":"dingtalk","url":"oapi.dingtalk.com/robot/send?access_token=t"}`), "url"},
		{"secret on wecom", put("ops", `{"type":"wecom","url":"https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=k","secret":"s"}`), "secret"},
		{"wecom without url", put("ops", `{"type":"wecom"}`), "url"},
		{"feishu url relative", put("ops", `{"type":"feishu","url":"/open-apis/bot/v2/hook/h"}`), "url"},
		{"email on feishu", put("ops", `{"type":"feishu","url":"https://open.feishu.cn/open-apis/bot/v2/hook/h","email":{"to":["a@example.com"],"from":"ax@example.com","smtp":"mail:25"}}`), "email"},
		{"feishu secret too long", put("ops", `{"type":"feishu","url":"https://open.feishu.cn/open-apis/bot/v2/hook/h","secret":"`+strings.Repeat("s", 4097)+`"}`), "secret"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fb := &fakeBackend{}
			rec := serve(t, api.Config{}, fb, tt.req)
			if got := fb.Methods(); len(got) != 0 {
				t.Errorf("backend calls: got %v, want none", got)
			}
			if rec.Code != http.StatusBadRequest {
				t.Fatalf("status: got %d, want 400 (body %s)", rec.Code, rec.Body)
			}
			if e := errorOf(t, rec); e.Field != tt.field {
				t.Errorf("field: got %q, want %q (message %q)", e.Field, tt.field, e.Message)
			}
		})
	}
	for _, body := range []string{
		`{"name":"ops","type":"webhook","url":"https://h/x","secret":"k","match":{"team":"data"}}`,
		`{"name":"ops","type":"dingtalk","url":"https://oapi.dingtalk.com/robot/send?access_token=t","secret":"k"}`,
		`{"name":"ops","type":"feishu","url":"https://open.feishu.cn/open-apis/bot/v2/hook/h","secret":"k"}`,
	} {
		fb := &fakeBackend{}
		rec := serve(t, api.Config{}, fb, put("ops", body))
		if rec.Code != http.StatusOK || strings.Contains(rec.Body.String(), `"k"`) || !strings.Contains(rec.Body.String(), `"secretSet":true`) {
			t.Errorf("put %s: %d %s", body, rec.Code, rec.Body)
		}
	}
	for _, body := range []string{`{"type":"wecom","url":"https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=k"}`, `{"type":"dingtalk","url":"http://127.0.0.1:9/robot/send?access_token=t"}`} {
		if rec := serve(t, api.Config{}, &fakeBackend{}, put("ops", body)); rec.Code != http.StatusOK {
			t.Errorf("put %s: %d %s", body, rec.Code, rec.Body)
		}
	}
}

// TestServer_ChannelURLRedacted: readers see a channel URL's scheme and
// host only (a Slack webhook's path is its credential, a DingTalk robot's
// access_token); writers see it.
func TestServer_ChannelURLRedacted(t *testing.T) {
	list := &channel.List{Channels: []channel.Channel{{Name: "chat", Type: channel.TypeSlack, URL: "https://hooks.slack.com/services/T0/B0/XYZ"}}}
	ding := &channel.List{Channels: []channel.Channel{{Name: "chat", Type: channel.TypeDingTalk, URL: "https://oapi.dingtalk.com/robot/send?access_token=T0K"}}}
	for _, tt := range []struct {
		role, want string
		list       *channel.List
	}{{"reader", "https://hooks.slack.com/(redacted)", list}, {"writer", "https://hooks.slack.com/services/T0/B0/XYZ", list},
		{"reader", "https://oapi.dingtalk.com/(redacted)", ding}, {"writer", "https://oapi.dingtalk.com/robot/send?access_token=T0K", ding}} {
		for _, path := range []string{"/v1/channels", "/v1/channels/chat"} {
			fb := &fakeBackend{ChannelsV: tt.list}
			rec := serve(t, api.Config{Auth: roleTokens}, fb, request{method: http.MethodGet, path: path,
				header: map[string]string{"Authorization": "Bearer " + tt.role}})
			var got struct {
				URL      string            `json:"url"`
				Channels []channel.Channel `json:"channels"`
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
				t.Fatal(err)
			}
			if len(got.Channels) > 0 {
				got.URL = got.Channels[0].URL
			}
			if got.URL != tt.want {
				t.Errorf("%s as %s: url %q, want %q", path, tt.role, got.URL, tt.want)
			}
		}
	}
	if list.Channels[0].URL != "https://hooks.slack.com/services/T0/B0/XYZ" {
		t.Error("the backend's channel was changed")
	}
}
