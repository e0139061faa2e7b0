package notify

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/model/channel"
)

// Target is one place a notification goes: a named channel with its
// write-only values in plaintext, or an ad-hoc webhook URL from a task's
// policy.notify (Name is then the URL, Channel a webhook without secret).
type Target struct {
	Name     string
	Channel  channel.Channel
	Secret   string
	Password string
	// AdHoc marks a policy.notify URL.
	AdHoc bool
}

// Route picks the targets of a notification: the channels the task's
// policy.notify names and the channels whose match fits the task's
// labels (an empty match fits every alert), each only if its minSeverity
// and events admit the notification; and the http(s) URLs of
// policy.notify as ad-hoc webhooks, which take every event. Each target
// once, in a stable order. missing lists the names policy.notify gives
// that no channel has.
func Route(n *model.AlertNotification, channels []Target) (targets []Target, missing []string) {
	byName := make(map[string]*Target, len(channels))
	for i := range channels {
		byName[channels[i].Name] = &channels[i]
	}
	seen := map[string]bool{}
	add := func(t *Target) {
		if !seen[t.Name] {
			seen[t.Name] = true
			targets = append(targets, *t)
		}
	}
	for _, e := range n.Notify {
		if model.IsNotifyURL(e) {
			add(&Target{Name: e, AdHoc: true, Channel: channel.Channel{Type: channel.TypeWebhook, URL: e}})
			continue
		}
		c, ok := byName[e]
		if !ok {
			missing = append(missing, e)
			continue
		}
		if c.Channel.Admits(n.Event, n.Alert.Severity) {
			add(c)
		}
	}
	names := make([]string, 0, len(byName))
	for name := range byName {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		c := byName[name]
		if c.Channel.Matches(n.TaskLabels) && c.Channel.Admits(n.Event, n.Alert.Severity) {
			add(c)
		}
	}
	return targets, missing
}

// Config configures a Notifier.
type Config struct {
	// Channels returns the channels as they are now, values opened.
	Channels func() ([]Target, error)
	// Failure returns the report of an instance_failed alert's instance
	// (nil when it cannot be read: the alert is rendered from itself).
	Failure func(ctx context.Context, n *model.AlertNotification, link string) *model.FailureReport
	// ConsoleURL is the console's base URL for links.
	ConsoleURL string
	// Node names the sending node in webhook bodies.
	Node   string
	Sender *Sender
	Logger hclog.Logger
	// Count, when set, counts each delivery by channel type: delivered,
	// or given up on after its retries, and how long it took.
	Count func(channelType string, delivered bool, took time.Duration)
}

// Notifier routes, renders and delivers alert notifications.
type Notifier struct{ cfg Config }

// New returns a Notifier.
func New(cfg Config) *Notifier {
	if cfg.Sender == nil {
		cfg.Sender = &Sender{}
	}
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	return &Notifier{cfg: cfg}
}

// Render builds the message of n for every channel type.
func (nf *Notifier) Render(ctx context.Context, n *model.AlertNotification) (*Message, error) {
	link := Link(nf.cfg.ConsoleURL, &n.Alert)
	var f *model.FailureReport
	if n.Alert.Rule == model.RuleInstanceFailed && n.Alert.Subject.Instance != "" && nf.cfg.Failure != nil {
		f = nf.cfg.Failure(ctx, n, link)
	}
	body := model.Notification{Event: n.Event, Alert: n.Alert, Subject: Subject(n), Text: Text(n, f, link), Link: link, Node: nf.cfg.Node}
	if n.Event == model.AlertFiring {
		body.Failure = f
	}
	js, err := json.Marshal(&body)
	if err != nil {
		return nil, err
	}
	m := &Message{Event: n.Event, Subject: body.Subject, Text: body.Text, Slack: Slack(n, f, link), JSON: js}
	m.DingTalk, m.WeCom, m.FeishuCard = chatBodies(n, f, link)
	return m, nil
}

// Notify delivers n to every target Route picks, in parallel, each with
// its retries. Failures are logged at WARN with the channel and reason
// and counted. It fails only when there were targets and none took the
// notification (so a caller that retries does not resend to the channels
// that did); a policy.notify name without a channel is logged.
func (nf *Notifier) Notify(ctx context.Context, n model.AlertNotification) error {
	var channels []Target
	if nf.cfg.Channels != nil {
		var err error
		if channels, err = nf.cfg.Channels(); err != nil {
			return fmt.Errorf("notify: reading channels: %w", err)
		}
	}
	targets, missing := Route(&n, channels)
	log := nf.cfg.Logger.With("alert", n.Alert.ID, "event", n.Event)
	for _, m := range missing {
		log.Warn("policy.notify names a channel that does not exist", "channel", m, "task", n.Alert.Subject.Task)
	}
	if len(targets) == 0 {
		return nil
	}
	msg, err := nf.Render(ctx, &n)
	if err != nil {
		return err
	}
	errs := make([]error, len(targets))
	var wg sync.WaitGroup
	for i := range targets {
		wg.Add(1)
		go func(t *Target) {
			defer wg.Done()
			start := time.Now()
			tries, err := nf.cfg.Sender.Deliver(ctx, t, msg)
			took := time.Since(start)
			if err != nil {
				errs[i] = fmt.Errorf("%s %s: %w", t.Channel.Type, displayName(t), err)
				log.Warn("notification not delivered", "channel", displayName(t), "type", t.Channel.Type, "tries", tries,
					"permanent", IsPermanent(err), "reason", err)
			} else {
				log.Debug("notification delivered", "channel", displayName(t), "type", t.Channel.Type, "tries", tries)
			}
			if nf.cfg.Count != nil {
				nf.cfg.Count(t.Channel.Type, err == nil, took)
			}
		}(&targets[i])
	}
	wg.Wait()
	for _, e := range errs {
		if e == nil {
			return nil
		}
	}
	return errors.Join(errs...)
}

// displayName names a target in logs: the channel's name, or an ad-hoc
// URL without its query (which may hold a token).
func displayName(t *Target) string {
	if !t.AdHoc {
		return t.Name
	}
	return redactURL(t.Name)
}
