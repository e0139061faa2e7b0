package alerts

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ax-scheduler/ax/api"
	"github.com/ax-scheduler/ax/api/pages"
	"github.com/ax-scheduler/ax/fsm"
	"github.com/ax-scheduler/ax/fsm/command"
	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/model/channel"
	"github.com/ax-scheduler/ax/notify"
	"github.com/ax-scheduler/ax/replica"
)

// Channel values are sealed under their own names, so that a sealed value
// cannot be moved to another channel or to a secret (secret names hold
// no '/').
func channelSealName(channel, field string) string { return "channel/" + channel + "/" + field }

// PutChannel implements api.ChannelBackend. The write-only values are
// sealed here with -encrypt-key-file, before they are proposed, as secret
// values are.
func (cs *Channels) PutChannel(ctx context.Context, c api.Caller, name string, ch *channel.Channel) (*channel.Channel, error) {
	def := *ch
	def.Name = name
	body := command.PutChannel{Channel: def}
	if e := body.ProtoRefusal(cs.state.Proto()); e != nil {
		return nil, e // as the leader's Precheck would, even when the leader runs an older release
	}
	if def.Secret != "" {
		body.Secret, body.SecretEncrypted = cs.sealValue(channelSealName(name, "secret"), def.Secret)
	}
	if def.Email != nil {
		e := *def.Email
		if e.Password != "" {
			body.Password, body.PasswordEncrypted = cs.sealValue(channelSealName(name, "password"), e.Password)
		}
		e.Password = ""
		def.Email = &e
	}
	def.Secret = ""
	if cs.sealer != nil && channel.HasURL(def.Type) && cs.state.Proto() >= command.ProtoSealedChannels {
		// The URL is often the credential (a Slack webhook's and the chat
		// robots' are): the state machine keeps only its scheme and host
		// in the clear.
		body.SealedURL, _ = cs.sealValue(channelSealName(name, "url"), def.URL)
		def.URL = channel.RedactURL(def.URL)
	}
	body.Channel = def
	var out channel.Channel
	if err := replica.Write(ctx, cs.rep, c, command.TypePutChannel, body, &out); err != nil {
		return nil, err
	}
	if body.SealedURL != nil {
		out.URL = ch.URL
	}
	return &out, nil
}

func (cs *Channels) sealValue(name, v string) ([]byte, bool) {
	if cs.sealer == nil {
		return []byte(v), false
	}
	return cs.sealer.Seal(name, []byte(v)), true
}

// sealChannelsEvery is how often a leader with -encrypt-key-file looks
// for channel values stored in the clear.
const sealChannelsEvery = 30 * time.Second

// RunSealing is the leader's per-term service that seals, with
// -encrypt-key-file, the values of channels stored in the clear: those
// put before the cluster had a key, or (URLs) before it reached protocol
// 6. Each is put again with its values sealed, a compare-and-set on its
// version (a change made meanwhile is kept, and sealed when it is put).
func (cs *Channels) RunSealing(ctx context.Context) error {
	if cs.sealer == nil {
		return nil
	}
	tick := time.NewTicker(sealChannelsEvery)
	defer tick.Stop()
	for {
		if cs.state.Proto() >= command.ProtoSealedChannels {
			cs.Seal(ctx)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// Seal seals now the values of every channel stored in the clear
// (RunSealing does every sealChannelsEvery).
func (cs *Channels) Seal(ctx context.Context) {
	recs, err := cs.state.ChannelRecords()
	if err != nil {
		return
	}
	for i := range recs {
		r := &recs[i]
		if r.Sealed() {
			continue
		}
		name, body := r.Channel.Name, r.PutChannel
		if len(body.Secret) > 0 && !body.SecretEncrypted {
			body.Secret, body.SecretEncrypted = cs.sealValue(channelSealName(name, "secret"), string(body.Secret))
		}
		if len(body.Password) > 0 && !body.PasswordEncrypted {
			body.Password, body.PasswordEncrypted = cs.sealValue(channelSealName(name, "password"), string(body.Password))
		}
		if len(body.SealedURL) == 0 && channel.HasURL(body.Channel.Type) {
			body.SealedURL, _ = cs.sealValue(channelSealName(name, "url"), body.Channel.URL)
			body.Channel.URL = channel.RedactURL(body.Channel.URL)
		}
		body.IfVersion = r.Version
		if err := cs.rep.ProposeOwn(ctx, command.TypePutChannel, body); err != nil {
			cs.log.Debug("sealing a channel's values failed; trying again later", "channel", name, "error", err)
			continue
		}
		cs.log.Info("sealed the values of a channel stored in the clear (-encrypt-key-file)", "channel", name)
	}
}

// ListChannels implements api.ChannelBackend.
func (cs *Channels) ListChannels(ctx context.Context) (*channel.List, error) {
	recs, err := cs.state.ChannelRecords()
	if err != nil {
		return nil, err
	}
	list := make([]channel.Channel, len(recs))
	for i := range recs {
		list[i] = cs.channelModel(&recs[i])
	}
	return &channel.List{Channels: list}, nil
}

// GetChannel implements api.ChannelBackend.
func (cs *Channels) GetChannel(ctx context.Context, name string) (*channel.Channel, error) {
	rec, ok := cs.state.Channel(name)
	if !ok {
		return nil, &model.Error{Code: model.CodeNotFound, Field: "name", Message: "no channel named " + name}
	}
	c := cs.channelModel(rec)
	return &c, nil
}

// channelModel is a stored channel as the API answers it, with its URL
// opened when it is sealed (the API redacts it for readers below writer);
// one this node cannot open stays redacted.
func (cs *Channels) channelModel(rec *fsm.ChannelRecord) channel.Channel {
	c := rec.Model()
	if len(rec.SealedURL) > 0 {
		if u, err := cs.open(channelSealName(rec.Channel.Name, "url"), rec.SealedURL); err == nil {
			c.URL = string(u)
		}
	}
	return c
}

// DeleteChannel implements api.ChannelBackend.
func (cs *Channels) DeleteChannel(ctx context.Context, c api.Caller, name string) (*channel.Channel, error) {
	var out channel.Channel
	if err := replica.Write(ctx, cs.rep, c, command.TypeDeleteChannel, command.TaskRef{Name: name}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Notify delivers an alert notification to the channels of the state
// machine and to the ad-hoc URLs of policy.notify (notify.Notifier does
// the routing, rendering and delivery). It reads the channels when it
// sends, so a change applies to the next notification; a channel whose
// sealed value this node cannot open is skipped, logged.
func (cs *Channels) Notify(ctx context.Context, n model.AlertNotification) error {
	return cs.n.Notify(ctx, n)
}

// Targets returns the stored channels with their values opened: where
// Notify delivers.
func (cs *Channels) Targets() ([]notify.Target, error) {
	recs, err := cs.state.ChannelRecords()
	if err != nil {
		return nil, err
	}
	out := make([]notify.Target, 0, len(recs))
	for i := range recs {
		t, err := cs.target(&recs[i])
		if err != nil {
			cs.log.Warn("a channel's value cannot be read; the channel is skipped", "channel", recs[i].Channel.Name, "error", err)
			continue
		}
		out = append(out, t)
	}
	return out, nil
}

// target is a stored channel with its values opened.
func (cs *Channels) target(r *fsm.ChannelRecord) (t notify.Target, err error) {
	t = notify.Target{Name: r.Channel.Name, Channel: r.Channel}
	if t.Secret, err = cs.openField(r.Channel.Name, "secret", r.Secret, r.SecretEncrypted); err == nil {
		t.Password, err = cs.openField(r.Channel.Name, "password", r.Password, r.PasswordEncrypted)
	}
	if err == nil && len(r.SealedURL) > 0 {
		t.Channel.URL, err = cs.openField(r.Channel.Name, "url", r.SealedURL, true)
	}
	return t, err
}

func (cs *Channels) openField(channel, field string, v []byte, sealed bool) (string, error) {
	if !sealed {
		return string(v), nil
	}
	plain, err := cs.open(channelSealName(channel, field), v)
	if err != nil {
		return "", fmt.Errorf("%s: %w", field, err)
	}
	return string(plain), nil
}

// open opens a sealed value: an error without an encrypt key.
func (cs *Channels) open(name string, sealed []byte) ([]byte, error) {
	if cs.sealer == nil {
		return nil, errNoKey
	}
	return cs.sealer.Open(name, sealed)
}

// errNoKey is why a node without an encrypt key cannot open a value.
var errNoKey = errors.New("it is encrypted and this node has no -encrypt-key-file")

// failure reads the failed instance of an instance_failed alert: its
// attempts, its task's policy and the latest attempt's output.
func (cs *Channels) failure(ctx context.Context, n *model.AlertNotification, link string) *model.FailureReport {
	id, err := model.ParseID(n.Alert.Subject.Instance)
	if err != nil {
		return nil
	}
	in, err := cs.state.GetInstance(id)
	if err != nil {
		cs.log.Debug("the failed instance of an alert cannot be read", "instance", n.Alert.Subject.Instance, "error", err)
		return nil
	}
	task, err := cs.state.GetTask(in.Task)
	if err != nil {
		task = nil // deleted since
	}
	var output string
	if l, err := cs.state.Log(id); err == nil {
		output = l.Output
	}
	return notify.Failure(in, task, output, link)
}

// TestChannel implements api.ChannelTester: it sends a test notification
// (notify.TestNotification) to the channel name, with its values opened
// as Notify would, once, whatever the channel's match, minSeverity and
// events; and answers what became of it.
func (cs *Channels) TestChannel(ctx context.Context, c api.Caller, name string) (*pages.ChannelTest, error) {
	rec, ok := cs.state.Channel(name)
	if !ok {
		return nil, &model.Error{Code: model.CodeNotFound, Field: "name", Message: "no channel named " + name}
	}
	out := &pages.ChannelTest{Channel: name, Type: rec.Channel.Type, Node: cs.node}
	start := time.Now()
	t, err := cs.target(rec)
	if err == nil {
		n := notify.TestNotification(name, c.Actor, cs.node, start)
		err = cs.n.SendTest(ctx, &t, &n)
	} else {
		err = fmt.Errorf("its %w", err)
	}
	out.TookMs = time.Since(start).Milliseconds()
	out.Delivered = err == nil
	if err != nil {
		out.Error, out.Permanent = err.Error(), notify.IsPermanent(err)
		cs.log.Info("a test notification was not delivered", "channel", name, "actor", c.Actor, "error", err)
	} else {
		cs.log.Info("a test notification was delivered", "channel", name, "actor", c.Actor)
	}
	return out, nil
}
