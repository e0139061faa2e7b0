package security

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/internal/testkit"
	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/model/channel"
	"github.com/ax-scheduler/ax/notify/notifytest"
)

// TestChannels_ChatRobotsOverTLSWithACL (real processes): on three TLS
// nodes with ACLs, a writer puts a DingTalk, a WeCom and a Feishu robot
// through a follower; a reader sees them with their URLs redacted to
// scheme and host and their signing secrets only as set, and may not
// write one; a failing task's alert reaches each robot, signed, with its
// instance.
func TestChannels_ChatRobotsOverTLSWithACL(t *testing.T) {
	c := startCluster(t, 3, withTLS(t.TempDir()), withArgs("-executor", "true"))
	ctx := ctxT(t, 2*time.Minute)
	follower, leader, err := c.Follower(ctx, 15*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	boot, err := tokenClient(c, "", follower.HTTPAddr).ACLBootstrap(ctx)
	if err != nil {
		t.Fatal(err)
	}
	adm := tokenClient(c, boot.Secret, follower.HTTPAddr)
	writer := tokenClient(c, createToken(t, ctx, adm, model.ACLTokenRequest{Name: "deployer", Role: model.RoleWriter}), follower.HTTPAddr)
	reader := tokenClient(c, createToken(t, ctx, adm, model.ACLTokenRequest{Name: "viewer", Role: model.RoleReader}), leader.HTTPAddr)

	secrets := map[string]string{channel.TypeDingTalk: "SEC-" + randHex(t), channel.TypeFeishu: "LARK-" + randHex(t)}
	tokens := map[string]string{channel.TypeDingTalk: "DING-" + randHex(t), channel.TypeWeCom: "WECOM-" + randHex(t), channel.TypeFeishu: "HOOK-" + randHex(t)}
	rcv := map[string]*notifytest.ChatReceiver{
		channel.TypeDingTalk: notifytest.NewChatReceiver(t, notifytest.DingTalk, tokens[channel.TypeDingTalk], secrets[channel.TypeDingTalk]),
		channel.TypeWeCom:    notifytest.NewChatReceiver(t, notifytest.WeCom, tokens[channel.TypeWeCom], ""),
		channel.TypeFeishu:   notifytest.NewChatReceiver(t, notifytest.Feishu, tokens[channel.TypeFeishu], secrets[channel.TypeFeishu]),
	}
	for typ, r := range rcv {
		ch := channel.Channel{Name: "team-" + typ, Type: typ, URL: r.URL(), Secret: secrets[typ], Match: map[string]string{"team": "data"}}
		testkit.Eventually(t, 30*time.Second, func() error { // the chat robots need protocol 7
			_, err := writer.PutChannel(ctx, &ch)
			return err
		})
	}
	_, err = reader.PutChannel(ctx, &channel.Channel{Name: "nope", Type: channel.TypeWeCom, URL: "https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=k"})
	wantCode(t, "reader puts a channel", err, model.CodeForbidden)
	testkit.Eventually(t, 10*time.Second, func() error {
		list, err := reader.ListChannels(ctx)
		if err != nil {
			return err
		}
		raw, _ := json.Marshal(list)
		for _, s := range []string{secrets[channel.TypeDingTalk], secrets[channel.TypeFeishu], tokens[channel.TypeDingTalk], tokens[channel.TypeWeCom], tokens[channel.TypeFeishu]} {
			if strings.Contains(string(raw), s) {
				return fmt.Errorf("a reader reads %s: %s", s, raw)
			}
		}
		if len(list.Channels) != 3 {
			return fmt.Errorf("%d channels: %s", len(list.Channels), raw)
		}
		for _, ch := range list.Channels {
			if !strings.HasSuffix(ch.URL, "/(redacted)") || ch.SecretSet != (secrets[ch.Type] != "") {
				return fmt.Errorf("a reader reads %+v", ch)
			}
		}
		return nil
	})

	task := shellTask("etl", "echo boom; exit 5", model.Policy{})
	task.Labels = map[string]string{"team": "data"}
	if _, err := writer.PutTask(ctx, task); err != nil {
		t.Fatal(err)
	}
	s, err := writer.Trigger(ctx, "etl", model.TriggerRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for typ, r := range rcv {
		m := r.Next(t, 60*time.Second)
		if !strings.Contains(m.Text, "**Instance:** ["+s.ID+"]") || !strings.Contains(m.Text, "**Failure:** exit 5") || m.Signed != (secrets[typ] != "") {
			t.Errorf("%s: signed %v:\n%s", typ, m.Signed, m.Text)
		}
	}
}
