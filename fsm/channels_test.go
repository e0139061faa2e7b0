package fsm

import (
	"errors"
	"strings"
	"testing"

	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/model/channel"
)

// TestFSM_Channels: a channel is stored with its write-only values beside
// the definition, answered without them, keeps them when a later put
// leaves them out, and is deleted; a delete of a missing one is refused
// without a write.
func TestFSM_Channels(t *testing.T) {
	f := newTestFSM(t)
	a := &applier{t: t, f: f}
	put := func(now int64, p PutChannel) channel.Channel {
		t.Helper()
		var c channel.Channel
		if err := a.apply(cmd(t, CmdPutChannel, "", now, p)).Decode(&c); err != nil {
			t.Fatalf("put: %v", err)
		}
		return c
	}
	hook := channel.Channel{Name: "ops", Type: channel.TypeWebhook, URL: "https://hooks.example/ax", Match: map[string]string{"team": "data"}}
	c := put(1000, PutChannel{Channel: hook, Secret: []byte("k1")})
	if c.Version != 1 || !c.SecretSet || c.Secret != "" || c.MinSeverity != model.SeverityInfo || len(c.Events) != 2 {
		t.Errorf("first put answered %+v", c)
	}
	hook.MinSeverity = model.SeverityCritical
	c = put(2000, PutChannel{Channel: hook}) // no secret: keeps k1
	if c.Version != 2 || !c.SecretSet || c.CreatedAt.Millis() != 1000 || c.UpdatedAt.Millis() != 2000 {
		t.Errorf("second put answered %+v", c)
	}
	rec, ok := f.Channel("ops")
	if !ok || string(rec.Secret) != "k1" || rec.Channel.MinSeverity != model.SeverityCritical {
		t.Fatalf("stored %+v", rec)
	}
	put(3000, PutChannel{Channel: channel.Channel{Name: "mail", Type: channel.TypeEmail,
		Email: &channel.Email{To: []string{"ops@example.com"}, From: "ax@example.com", SMTP: "mail.example:587"}}, Password: []byte("pw")})
	list, err := f.Channels()
	if err != nil || len(list) != 2 || list[0].Name != "mail" || !list[0].Email.PasswordSet || list[0].Email.Password != "" || list[0].Email.TLS != channel.EmailSTARTTLS {
		t.Fatalf("list %+v, %v", list, err)
	}

	for _, tt := range []struct {
		name  string
		p     PutChannel
		field string
	}{
		{"bad scheme", PutChannel{Channel: channel.Channel{Name: "x", Type: channel.TypeWebhook, URL: "ftp://h/x"}}, "url"},
		{"secret on slack", PutChannel{Channel: channel.Channel{Name: "x", Type: channel.TypeSlack, URL: "https://h/x"}, Secret: []byte("k")}, "secret"},
		{"secret inside the definition", PutChannel{Channel: channel.Channel{Name: "x", Type: channel.TypeWebhook, URL: "https://h/x", Secret: "k"}}, ""},
		{"bad name", PutChannel{Channel: channel.Channel{Name: "Ops", Type: channel.TypeWebhook, URL: "https://h/x"}}, "name"},
		{"bad smtp", PutChannel{Channel: channel.Channel{Name: "x", Type: channel.TypeEmail,
			Email: &channel.Email{To: []string{"a@b"}, From: "c@d", SMTP: "mail"}}}, "email.smtp"},
		{"bad to", PutChannel{Channel: channel.Channel{Name: "x", Type: channel.TypeEmail,
			Email: &channel.Email{To: []string{"nobody"}, From: "c@d", SMTP: "mail:25"}}}, "email.to"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := a.apply(cmd(t, CmdPutChannel, "", 4000, tt.p)).Decode(nil)
			var me *model.Error
			if !errors.As(err, &me) || me.Code != model.CodeInvalid || me.Field != tt.field {
				t.Errorf("got %v, want invalid_argument on %q", err, tt.field)
			}
		})
	}

	if err := a.apply(cmd(t, CmdDeleteChannel, "", 5000, TaskRef{Name: "ops"})).Decode(nil); err != nil {
		t.Fatal(err)
	}
	if _, ok := f.Channel("ops"); ok {
		t.Error("deleted channel still stored")
	}
	if r := f.Precheck(cmd(t, CmdDeleteChannel, "", 6000, TaskRef{Name: "ops"})); r == nil || !errors.Is(r.Err, model.ErrNotFound) {
		t.Errorf("precheck of a delete of a missing channel: %+v, want not found", r)
	}
}

// TestFSM_NotifyChannelNamesNeedProto4: a task naming a channel in
// policy.notify is refused while the cluster is at protocol 2 or 3 (as an
// older replica refuses it, with its words) and stored from protocol 4.
func TestFSM_NotifyChannelNamesNeedProto4(t *testing.T) {
	f := newTestFSM(t)
	a := &applier{t: t, f: f}
	task := cronTask("nightly", "0 2 * * *")
	task.Policy.Notify = []string{"https://hooks.example/ax", "ops"}
	a.apply(cmd(t, CmdSetProto, "", 1000, SetProto{Proto: 3}))
	pc := cmd(t, CmdPutTask, "", 2000, PutTask{Task: task})
	if r := f.Precheck(pc); r == nil || r.Err == nil || !strings.Contains(r.Err.Message, "protocol 4") {
		t.Errorf("precheck at protocol 3: %+v, want a refusal naming protocol 4", r)
	}
	err := a.apply(pc).Decode(nil)
	if err == nil || !strings.Contains(err.Error(), "is not an absolute http(s) URL") {
		t.Errorf("apply at protocol 3: %v, want the earlier release's refusal", err)
	}
	a.apply(cmd(t, CmdSetProto, "", 3000, SetProto{Proto: 4}))
	if r := f.Precheck(cmd(t, CmdPutTask, "", 4000, PutTask{Task: task})); r != nil {
		t.Errorf("precheck at protocol 4: %+v", r)
	}
	writeResult(t, a.apply(cmd(t, CmdPutTask, "", 4000, PutTask{Task: task})))
}

func TestMinProto_Channels(t *testing.T) {
	for _, c := range []CommandType{CmdPutChannel, CmdDeleteChannel} {
		if got := MinProto(c); got != 4 || got > ProtoVersion {
			t.Errorf("MinProto(%s) = %d, want 4 (ProtoVersion %d)", c, got, ProtoVersion)
		}
	}
}

// TestFSM_SealedChannelURLFromProto6: below protocol 6 put_channel
// ignores SealedURL and IfVersion (as an older replica does); from 6 it
// keeps the sealed URL beside the redacted definition and refuses a put
// whose IfVersion is not the stored version.
func TestFSM_SealedChannelURLFromProto6(t *testing.T) {
	f := newTestFSM(t)
	a := &applier{t: t, f: f}
	slack := channel.Channel{Name: "chat", Type: channel.TypeSlack, URL: "https://hooks.slack.com/(redacted)"}
	sealed := []byte("ciphertext of the URL")
	a.apply(cmd(t, CmdSetProto, "", 1000, SetProto{Proto: 5}))
	if err := a.apply(cmd(t, CmdPutChannel, "", 2000, PutChannel{Channel: slack, SealedURL: sealed, IfVersion: 7})).Decode(nil); err != nil {
		t.Fatalf("at protocol 5 (IfVersion ignored): %v", err)
	}
	if rec, _ := f.Channel("chat"); rec.SealedURL != nil || rec.Sealed() {
		t.Fatalf("at protocol 5 the sealed URL was kept: %+v", rec)
	}
	a.apply(cmd(t, CmdSetProto, "", 3000, SetProto{Proto: 6}))
	err := a.apply(cmd(t, CmdPutChannel, "", 4000, PutChannel{Channel: slack, SealedURL: sealed, IfVersion: 7})).Decode(nil)
	if !errors.Is(err, model.ErrConflict) {
		t.Fatalf("IfVersion 7 on version 1: %v, want conflict", err)
	}
	if err := a.apply(cmd(t, CmdPutChannel, "", 5000, PutChannel{Channel: slack, SealedURL: sealed, IfVersion: 1})).Decode(nil); err != nil {
		t.Fatal(err)
	}
	rec, _ := f.Channel("chat")
	if string(rec.SealedURL) != string(sealed) || !rec.Sealed() || rec.Version != 2 || rec.IfVersion != 0 {
		t.Fatalf("stored %+v", rec)
	}
	mail := PutChannel{Channel: channel.Channel{Name: "x", Type: channel.TypeEmail,
		Email: &channel.Email{To: []string{"a@b.c"}, From: "c@d.e", SMTP: "mail:25"}}, SealedURL: sealed}
	if err := a.apply(cmd(t, CmdPutChannel, "", 6000, mail)).Decode(nil); !errors.Is(err, model.ErrInvalid) {
		t.Errorf("a sealed URL on an email channel: %v, want invalid", err)
	}
}

// TestFSM_ChatChannelsFromProto7: below protocol 7 a put_channel of a
// chat robot's type is refused as a replica of protocol 6 refuses it
// (its validation does not know the type), and Precheck says which
// protocol it needs; from 7 it is stored, its signing secret kept by a
// put without one, and its sealed URL kept; a wecom robot takes no
// secret.
func TestFSM_ChatChannelsFromProto7(t *testing.T) {
	f := newTestFSM(t)
	a := &applier{t: t, f: f}
	ding := PutChannel{Channel: channel.Channel{Name: "ding", Type: channel.TypeDingTalk, URL: "https://oapi.dingtalk.com/(redacted)"},
		Secret: []byte("SEC-sealed"), SecretEncrypted: true, SealedURL: []byte("sealed URL")}
	a.apply(cmd(t, CmdSetProto, "", 1000, SetProto{Proto: 6}))
	var me *model.Error
	if r := f.Precheck(cmd(t, CmdPutChannel, "", 0, ding)); r == nil || !errors.As(r.Err, &me) || me.Code != model.CodePrecondition ||
		me.Field != "type" || me.Message != "type dingtalk needs protocol 7, the cluster is at protocol 6: upgrade every member first" {
		t.Fatalf("precheck at protocol 6: %+v", r)
	}
	// The words of protocol 6's validation (model.Channel.Validate then).
	err := a.apply(cmd(t, CmdPutChannel, "", 2000, ding)).Decode(nil)
	if !errors.As(err, &me) || me.Code != model.CodeInvalid || me.Field != "type" || me.Message != `"dingtalk": use webhook, slack or email` {
		t.Fatalf("apply at protocol 6: %v", err)
	}
	if _, ok := f.Channel("ding"); ok {
		t.Fatal("stored at protocol 6")
	}
	a.apply(cmd(t, CmdSetProto, "", 3000, SetProto{Proto: 7}))
	if r := f.Precheck(cmd(t, CmdPutChannel, "", 0, ding)); r != nil {
		t.Fatalf("precheck at protocol 7: %+v", r)
	}
	writeResult(t, a.apply(cmd(t, CmdPutChannel, "", 4000, ding)))
	again := ding
	again.Secret, again.SecretEncrypted, again.Channel.MinSeverity = nil, false, model.SeverityCritical
	writeResult(t, a.apply(cmd(t, CmdPutChannel, "", 5000, again)))
	rec, _ := f.Channel("ding")
	if string(rec.Secret) != "SEC-sealed" || !rec.SecretEncrypted || string(rec.SealedURL) != "sealed URL" || !rec.Sealed() || rec.Version != 2 {
		t.Fatalf("stored %+v", rec)
	}
	if m := rec.Model(); !m.SecretSet || m.Secret != "" {
		t.Errorf("answered %+v", m)
	}
	wecom := PutChannel{Channel: channel.Channel{Name: "wecom", Type: channel.TypeWeCom, URL: "https://qyapi.weixin.qq.com/(redacted)"}, Secret: []byte("k")}
	if err := a.apply(cmd(t, CmdPutChannel, "", 6000, wecom)).Decode(nil); !errors.As(err, &me) || me.Field != "secret" {
		t.Errorf("a secret on a wecom robot: %v, want invalid secret", err)
	}
}
