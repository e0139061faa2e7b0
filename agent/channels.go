package agent

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/ax-scheduler/ax/api"
	"github.com/ax-scheduler/ax/fsm"
	"github.com/ax-scheduler/ax/fsm/command"
	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/notify"
)

// Channel values are sealed under their own names, so that a sealed value
// cannot be moved to another channel or to a secret (secret names hold
// no '/').
func channelSealName(channel, field string) string { return "channel/" + channel + "/" + field }

// PutChannel implements api.ChannelBackend. The write-only values are
// sealed here with -encrypt-key-file, before they are proposed, as secret
// values are.
func (a *Agent) PutChannel(ctx context.Context, c api.Caller, name string, ch *model.Channel) (*model.Channel, error) {
	def := *ch
	def.Name = name
	body := command.PutChannel{}
	if def.Secret != "" {
		body.Secret, body.SecretEncrypted = a.sealValue(channelSealName(name, "secret"), def.Secret)
	}
	if def.Email != nil {
		e := *def.Email
		if e.Password != "" {
			body.Password, body.PasswordEncrypted = a.sealValue(channelSealName(name, "password"), e.Password)
		}
		e.Password = ""
		def.Email = &e
	}
	def.Secret = ""
	if a.acc.Sealer() != nil && (def.Type == model.ChannelWebhook || def.Type == model.ChannelSlack) && a.fsm.Proto() >= command.ProtoSealedChannels {
		// The URL is often the credential (a Slack webhook's is): the
		// state machine keeps only its scheme and host in the clear.
		body.SealedURL, _ = a.sealValue(channelSealName(name, "url"), def.URL)
		def.URL = model.RedactURL(def.URL)
	}
	body.Channel = def
	var out model.Channel
	if err := a.command(ctx, c, command.TypePutChannel, body, &out); err != nil {
		return nil, err
	}
	if body.SealedURL != nil {
		out.URL = ch.URL
	}
	return &out, nil
}

func (a *Agent) sealValue(name, v string) ([]byte, bool) {
	sl := a.acc.Sealer()
	if sl == nil {
		return []byte(v), false
	}
	return sl.Seal(name, []byte(v)), true
}

// sealChannelsEvery is how often a leader with -encrypt-key-file looks
// for channel values stored in the clear.
const sealChannelsEvery = 30 * time.Second

// runSealChannels is the leader's service that seals, with
// -encrypt-key-file, the values of channels stored in the clear: those
// put before the cluster had a key, or (URLs) before it reached protocol
// 6. Each is put again with its values sealed, a compare-and-set on its
// version (a change made meanwhile is kept, and sealed when it is put).
func (a *Agent) runSealChannels(ctx context.Context) error {
	if a.acc.Sealer() == nil {
		return nil
	}
	tick := time.NewTicker(sealChannelsEvery)
	defer tick.Stop()
	for {
		if a.fsm.Proto() >= command.ProtoSealedChannels {
			a.sealChannels(ctx)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// sealChannels seals the values of every channel stored in the clear.
func (a *Agent) sealChannels(ctx context.Context) {
	recs, err := a.fsm.ChannelRecords()
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
			body.Secret, body.SecretEncrypted = a.sealValue(channelSealName(name, "secret"), string(body.Secret))
		}
		if len(body.Password) > 0 && !body.PasswordEncrypted {
			body.Password, body.PasswordEncrypted = a.sealValue(channelSealName(name, "password"), string(body.Password))
		}
		if len(body.SealedURL) == 0 && (body.Channel.Type == model.ChannelWebhook || body.Channel.Type == model.ChannelSlack) {
			body.SealedURL, _ = a.sealValue(channelSealName(name, "url"), body.Channel.URL)
			body.Channel.URL = model.RedactURL(body.Channel.URL)
		}
		body.IfVersion = r.Version
		if err := a.rep.ProposeOwn(ctx, command.TypePutChannel, body); err != nil {
			a.log.Debug("sealing a channel's values failed; trying again later", "channel", name, "error", err)
			continue
		}
		a.log.Info("sealed the values of a channel stored in the clear (-encrypt-key-file)", "channel", name)
	}
}

// ListChannels implements api.ChannelBackend.
func (a *Agent) ListChannels(ctx context.Context) (*model.ChannelList, error) {
	recs, err := a.fsm.ChannelRecords()
	if err != nil {
		return nil, err
	}
	cs := make([]model.Channel, len(recs))
	for i := range recs {
		cs[i] = a.channelModel(&recs[i])
	}
	return &model.ChannelList{Channels: cs}, nil
}

// GetChannel implements api.ChannelBackend.
func (a *Agent) GetChannel(ctx context.Context, name string) (*model.Channel, error) {
	rec, ok := a.fsm.Channel(name)
	if !ok {
		return nil, &model.Error{Code: model.CodeNotFound, Field: "name", Message: "no channel named " + name}
	}
	c := a.channelModel(rec)
	return &c, nil
}

// channelModel is a stored channel as the API answers it, with its URL
// opened when it is sealed (the API redacts it for readers below writer);
// one this node cannot open stays redacted.
func (a *Agent) channelModel(rec *fsm.ChannelRecord) model.Channel {
	c := rec.Model()
	if len(rec.SealedURL) > 0 {
		if u, err := a.acc.Sealer().Open(channelSealName(rec.Channel.Name, "url"), rec.SealedURL); err == nil {
			c.URL = string(u)
		}
	}
	return c
}

// DeleteChannel implements api.ChannelBackend.
func (a *Agent) DeleteChannel(ctx context.Context, c api.Caller, name string) (*model.Channel, error) {
	var out model.Channel
	if err := a.command(ctx, c, command.TypeDeleteChannel, command.TaskRef{Name: name}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// channelNotifier delivers alert notifications to the channels of the
// state machine and to the ad-hoc URLs of policy.notify (notify.Notifier
// does the routing, rendering and delivery). It reads the channels when
// it sends, so a change applies to the next notification; a channel
// whose sealed value this node cannot open is skipped, logged.
type channelNotifier struct {
	a *Agent
	n *notify.Notifier
}

func newChannelNotifier(a *Agent, sender *notify.Sender) *channelNotifier {
	cn := &channelNotifier{a: a}
	cn.n = notify.New(notify.Config{
		Channels:   cn.targets,
		Failure:    cn.failure,
		ConsoleURL: a.consoleURL(),
		Node:       a.cfg.NodeID,
		Sender:     sender,
		Logger:     a.log.Named("notify"),
		Count:      a.metrics.countNotification,
	})
	return cn
}

// Notify implements the leader's notifier: see notify.Notifier.Notify.
func (cn *channelNotifier) Notify(ctx context.Context, n model.AlertNotification) error {
	return cn.n.Notify(ctx, n)
}

// targets returns the stored channels with their values opened.
func (cn *channelNotifier) targets() ([]notify.Target, error) {
	recs, err := cn.a.fsm.ChannelRecords()
	if err != nil {
		return nil, err
	}
	out := make([]notify.Target, 0, len(recs))
	for i := range recs {
		r := &recs[i]
		t := notify.Target{Name: r.Channel.Name, Channel: r.Channel}
		if t.Secret, err = cn.open(r.Channel.Name, "secret", r.Secret, r.SecretEncrypted); err == nil {
			t.Password, err = cn.open(r.Channel.Name, "password", r.Password, r.PasswordEncrypted)
		}
		if err == nil && len(r.SealedURL) > 0 {
			t.Channel.URL, err = cn.open(r.Channel.Name, "url", r.SealedURL, true)
		}
		if err != nil {
			cn.a.log.Warn("a channel's value cannot be read; the channel is skipped", "channel", r.Channel.Name, "error", err)
			continue
		}
		out = append(out, t)
	}
	return out, nil
}

func (cn *channelNotifier) open(channel, field string, v []byte, sealed bool) (string, error) {
	if !sealed {
		return string(v), nil
	}
	plain, err := cn.a.acc.Sealer().Open(channelSealName(channel, field), v)
	if err != nil {
		return "", fmt.Errorf("%s: %w", field, err)
	}
	return string(plain), nil
}

// failure reads the failed instance of an instance_failed alert: its
// attempts, its task's policy and the latest attempt's output.
func (cn *channelNotifier) failure(ctx context.Context, n *model.AlertNotification, link string) *model.FailureReport {
	id, err := model.ParseID(n.Alert.Subject.Instance)
	if err != nil {
		return nil
	}
	in, err := cn.a.fsm.GetInstance(id)
	if err != nil {
		cn.a.log.Debug("the failed instance of an alert cannot be read", "instance", n.Alert.Subject.Instance, "error", err)
		return nil
	}
	task, err := cn.a.fsm.GetTask(in.Task)
	if err != nil {
		task = nil // deleted since
	}
	var output string
	if l, err := cn.a.fsm.Log(id); err == nil {
		output = l.Output
	}
	return notify.Failure(in, task, output, link)
}

// consoleURL is the base of the console links in notifications:
// -console-url, else this node's advertised HTTP address.
func (a *Agent) consoleURL() string {
	if a.cfg.ConsoleURL != "" {
		return strings.TrimRight(a.cfg.ConsoleURL, "/")
	}
	scheme := "http://"
	if a.cfg.TLS != nil {
		scheme = "https://"
	}
	return scheme + a.advertisedHTTP()
}

// failureNotification is the notification of one FAILED instance as this
// release's failure alerter sends it (runAlerts): an instance_failed
// alert about the instance, routed by the task's labels and its
// policy.notify channel names.
func failureNotification(in *model.Instance, t *model.Task) model.AlertNotification {
	maxAttempts := 1
	var labels map[string]string
	var names []string
	if t != nil {
		maxAttempts, labels = t.Policy.MaxRetries+1, t.Labels
		for _, n := range t.Policy.Notify {
			if !model.IsNotifyURL(n) {
				names = append(names, n)
			}
		}
	}
	return model.AlertNotification{Event: model.AlertFiring, TaskLabels: labels, Notify: names,
		Alert: model.Alert{ID: model.RuleInstanceFailed + ":" + in.Task, Rule: model.RuleInstanceFailed, Severity: model.SeverityCritical,
			Subject: model.AlertSubject{Task: in.Task, Instance: in.ID}, Summary: "task " + in.Task + " failed",
			Details: map[string]string{"attempt": fmt.Sprint(in.Attempts), "maxAttempts": fmt.Sprint(maxAttempts),
				"error": in.LastError, "failedAt": in.FinishedAt.Format(model.TimeLayout)},
			State: model.AlertFiring, FirstSeen: in.FinishedAt, LastSeen: in.FinishedAt, Count: 1}}
}
