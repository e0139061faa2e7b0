package channel_test

import (
	"errors"
	"testing"

	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/model/channel"
)

// TestChannel_ValidateChatRobots: the chat robots take an http(s) URL;
// dingtalk and feishu an optional signing secret, wecom none (its URL's
// key is its credential); errors name the field.
func TestChannel_ValidateChatRobots(t *testing.T) {
	const ding, wecom, lark = "https://oapi.dingtalk.com/robot/send?access_token=t", "https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=k", "https://open.feishu.cn/open-apis/bot/v2/hook/h"
	for _, tt := range []struct {
		name  string
		c     channel.Channel
		field string // "" when valid
	}{
		{"dingtalk", channel.Channel{Type: channel.TypeDingTalk, URL: ding}, ""},
		{"dingtalk signed", channel.Channel{Type: channel.TypeDingTalk, URL: ding, Secret: "SECx"}, ""},
		{"wecom", channel.Channel{Type: channel.TypeWeCom, URL: wecom}, ""},
		{"feishu signed", channel.Channel{Type: channel.TypeFeishu, URL: lark, Secret: "s"}, ""},
		{"dingtalk over http", channel.Channel{Type: channel.TypeDingTalk, URL: "http://127.0.0.1:8080/robot/send?access_token=t"}, ""},
		{"dingtalk without url", channel.Channel{Type: channel.TypeDingTalk}, "url"},
		{"feishu url not absolute", channel.Channel{Type: channel.TypeFeishu, URL: "open.feishu.cn/open-apis/bot/v2/hook/h"}, "url"},
		{"wecom with a secret", channel.Channel{Type: channel.TypeWeCom, URL: wecom, Secret: "s"}, "secret"},
		{"slack with a secret", channel.Channel{Type: channel.TypeSlack, URL: wecom, Secret: "s"}, "secret"},
		{"dingtalk with email", channel.Channel{Type: channel.TypeDingTalk, URL: ding, Email: &channel.Email{}}, "email"},
		{"unknown type", channel.Channel{Type: "teams", URL: ding}, "type"},
	} {
		err := tt.c.Validate()
		var me *model.Error
		switch {
		case tt.field == "" && err != nil:
			t.Errorf("%s: %v", tt.name, err)
		case tt.field != "" && (!errors.As(err, &me) || me.Field != tt.field):
			t.Errorf("%s: %v, want an error naming %s", tt.name, err, tt.field)
		}
	}
}

// TestChannel_Kinds: which types have a URL (sealed, redacted), a
// secret, and need protocol 7.
func TestChannel_Kinds(t *testing.T) {
	for _, tt := range []struct {
		typ                 string
		url, secret, isChat bool
	}{
		{channel.TypeWebhook, true, true, false}, {channel.TypeSlack, true, false, false}, {channel.TypeEmail, false, false, false},
		{channel.TypeDingTalk, true, true, true}, {channel.TypeWeCom, true, false, true}, {channel.TypeFeishu, true, true, true},
	} {
		if channel.HasURL(tt.typ) != tt.url || channel.HasSecret(tt.typ) != tt.secret || channel.IsChat(tt.typ) != tt.isChat {
			t.Errorf("%s: url %v secret %v chat %v", tt.typ, channel.HasURL(tt.typ), channel.HasSecret(tt.typ), channel.IsChat(tt.typ))
		}
	}
	if got := channel.RedactURL("https://oapi.dingtalk.com/robot/send?access_token=t0k"); got != "https://oapi.dingtalk.com/(redacted)" {
		t.Errorf("redacted %q", got)
	}
}
