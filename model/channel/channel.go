package channel

import (
	"errors"
	"fmt"
	"maps"
	"net"
	"net/mail"
	"net/url"
	"slices"
	"strings"

	"github.com/ax-scheduler/ax/model"
)

// Channel types.
const (
	TypeWebhook = "webhook" // a generic JSON webhook, signed with Secret
	TypeSlack   = "slack"   // a Slack-compatible incoming webhook
	TypeEmail   = "email"   // mail over SMTP
	// The chat robots of seed 002's teams (protocol 7): each gets the
	// message in its platform's markdown.
	TypeDingTalk = "dingtalk" // a DingTalk custom robot, optionally signed with Secret
	TypeWeCom    = "wecom"    // a WeCom (WeChat Work) group robot
	TypeFeishu   = "feishu"   // a Feishu/Lark custom bot, optionally signed with Secret
)

// typesText lists the channel types for error messages.
const typesText = "webhook, slack, email, dingtalk, wecom or feishu"

// HasURL reports whether channels of type t deliver to URL, which may
// carry their credential (a Slack webhook's path, a DingTalk robot's
// access_token, a WeCom robot's key, a Feishu bot's hook id): every type
// but email.
func HasURL(t string) bool {
	switch t {
	case TypeWebhook, TypeSlack, TypeDingTalk, TypeWeCom, TypeFeishu:
		return true
	}
	return false
}

// HasSecret reports whether channels of type t take a Secret: a
// webhook's HMAC key, a DingTalk robot's or a Feishu bot's signing
// secret.
func HasSecret(t string) bool { return t == TypeWebhook || t == TypeDingTalk || t == TypeFeishu }

// IsChat reports whether t is one of the chat robots' types, which need
// every member at protocol 7.
func IsChat(t string) bool { return t == TypeDingTalk || t == TypeWeCom || t == TypeFeishu }

// Email TLS modes.
const (
	EmailSTARTTLS = "starttls" // plain connection upgraded with STARTTLS (default; required)
	EmailTLS      = "tls"      // TLS from the first byte (port 465)
	EmailNoTLS    = "none"     // no TLS: only for a relay on a trusted network
)

// Limits of a channel definition.
const (
	MaxURL      = 2048
	MaxSecret   = 4096
	MaxMatch    = 32
	MaxEmailTo  = 50
	maxFieldLen = 512
)

// Channel is a named notification channel: where alerts go and which ones.
// Secret and Email.Password are write-only: a read answers them empty and
// says whether one is set (SecretSet, Email.PasswordSet). A write that
// leaves them empty keeps the stored value, so a channel read back can be
// applied again; delete the channel to drop one.
type Channel struct {
	Name string `json:"name,omitempty"`
	Type string `json:"type"`
	// URL receives the notifications of every type but email (http or
	// https): the webhook, or the robot's webhook address with its token.
	URL string `json:"url,omitempty"`
	// Secret is a webhook's HMAC-SHA256 key (X-AX-Signature), or the
	// signing secret of a dingtalk robot or a feishu bot (optional).
	Secret    string `json:"secret,omitempty"`
	SecretSet bool   `json:"secretSet,omitempty"`
	Email     *Email `json:"email,omitempty"`
	// Match routes the alerts of tasks whose labels hold all of these
	// pairs to the channel; empty matches every alert. Tasks also name
	// channels in policy.notify.
	Match map[string]string `json:"match,omitempty"`
	// MinSeverity is the lowest severity delivered: info (default),
	// warning or critical.
	MinSeverity string `json:"minSeverity,omitempty"`
	// Events are the transitions delivered: firing, resolved (default
	// both).
	Events []string `json:"events,omitempty"`

	Version   uint64      `json:"version,omitempty"`
	CreatedAt *model.Time `json:"createdAt,omitempty"`
	UpdatedAt *model.Time `json:"updatedAt,omitempty"`
	UpdatedBy string      `json:"updatedBy,omitempty"`
}

// Email is where an email channel sends: an SMTP server and its
// credentials.
type Email struct {
	To          []string `json:"to"`
	From        string   `json:"from"`
	SMTP        string   `json:"smtp"` // host:port
	Username    string   `json:"username,omitempty"`
	Password    string   `json:"password,omitempty"` // write-only
	PasswordSet bool     `json:"passwordSet,omitempty"`
	TLS         string   `json:"tls,omitempty"` // starttls (default), tls, none
}

// List answers GET /v1/channels, by name.
type List struct {
	Channels []Channel `json:"channels"`
}

// SeverityRank orders severities: info 1, warning 2, critical 3, else 0.
func SeverityRank(s string) int {
	switch s {
	case model.SeverityInfo:
		return 1
	case model.SeverityWarning:
		return 2
	case model.SeverityCritical:
		return 3
	}
	return 0
}

// Normalize fills the defaults that do not change meaning (minSeverity
// info, both events, email tls starttls) and sorts events.
func (c *Channel) Normalize() {
	if c.MinSeverity == "" {
		c.MinSeverity = model.SeverityInfo
	}
	if len(c.Events) == 0 {
		c.Events = []string{model.AlertFiring, model.AlertResolved}
	}
	slices.Sort(c.Events)
	c.Events = slices.Compact(c.Events)
	if c.Email != nil && c.Email.TLS == "" {
		c.Email.TLS = EmailSTARTTLS
	}
}

// Admits reports whether the channel delivers an event of an alert of
// that severity.
func (c *Channel) Admits(event, severity string) bool {
	min := c.MinSeverity
	if min == "" {
		min = model.SeverityInfo
	}
	if SeverityRank(severity) < SeverityRank(min) {
		return false
	}
	return len(c.Events) == 0 || slices.Contains(c.Events, event)
}

// Matches reports whether a task's labels hold every pair of c.Match (an
// empty Match matches every task, and alerts about no task).
func (c *Channel) Matches(labels map[string]string) bool {
	for k, v := range c.Match {
		if got, ok := labels[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// Validate checks a channel definition; errors name the field. It does
// no lookups (the state machine runs it too).
func (c *Channel) Validate() error {
	if c.Name != "" {
		if err := model.ValidateName("name", c.Name); err != nil {
			return err
		}
	}
	switch c.Type {
	case TypeWebhook, TypeSlack, TypeDingTalk, TypeWeCom, TypeFeishu:
		if err := checkHTTPURL("url", c.URL); err != nil {
			return err
		}
		if c.Email != nil {
			return model.FieldErrorf("email", "only for type email")
		}
		if !HasSecret(c.Type) && c.Secret != "" {
			return model.FieldErrorf("secret", "only for types webhook, dingtalk and feishu (a %s webhook's URL is its credential)", c.Type)
		}
	case TypeEmail:
		if c.URL != "" {
			return model.FieldErrorf("url", "not for type email: set email.smtp")
		}
		if c.Secret != "" {
			return model.FieldErrorf("secret", "only for types webhook, dingtalk and feishu")
		}
		if c.Email == nil {
			return model.FieldErrorf("email", "required for type email")
		}
		if err := c.Email.validate(); err != nil {
			return err
		}
	case "":
		return model.FieldErrorf("type", "required: "+typesText)
	default:
		return model.FieldErrorf("type", "%q: use "+typesText, c.Type)
	}
	if len(c.Secret) > MaxSecret {
		return model.FieldErrorf("secret", "at most %d bytes", MaxSecret)
	}
	if len(c.Match) > MaxMatch {
		return model.FieldErrorf("match", "at most %d labels", MaxMatch)
	}
	for _, k := range slices.Sorted(maps.Keys(c.Match)) {
		if k == "" || len(k) > maxFieldLen || len(c.Match[k]) > maxFieldLen {
			return model.FieldErrorf("match", "label %q: keys are 1-%d bytes, values at most %d", k, maxFieldLen, maxFieldLen)
		}
	}
	if c.MinSeverity != "" && SeverityRank(c.MinSeverity) == 0 {
		return model.FieldErrorf("minSeverity", "%q: use info, warning or critical", c.MinSeverity)
	}
	if len(c.Events) > 2 {
		return model.FieldErrorf("events", "at most firing and resolved")
	}
	for _, e := range c.Events {
		if e != model.AlertFiring && e != model.AlertResolved {
			return model.FieldErrorf("events", "%q: use firing or resolved", e)
		}
	}
	return nil
}

func (e *Email) validate() error {
	if len(e.To) == 0 {
		return model.FieldErrorf("email.to", "at least one address")
	}
	if len(e.To) > MaxEmailTo {
		return model.FieldErrorf("email.to", "at most %d addresses", MaxEmailTo)
	}
	for i, a := range e.To {
		if err := checkAddress(a); err != nil {
			return model.FieldErrorf("email.to", "entry %d: %v", i, err)
		}
	}
	if err := checkAddress(e.From); err != nil {
		return model.FieldErrorf("email.from", "%v", err)
	}
	host, port, err := net.SplitHostPort(e.SMTP)
	if err != nil || host == "" || port == "" || strings.ContainsAny(host, " /") || !allDigits(port) || len(e.SMTP) > maxFieldLen {
		return model.FieldErrorf("email.smtp", "%q is not host:port", e.SMTP)
	}
	if len(e.Username) > maxFieldLen {
		return model.FieldErrorf("email.username", "at most %d bytes", maxFieldLen)
	}
	if len(e.Password) > MaxSecret {
		return model.FieldErrorf("email.password", "at most %d bytes", MaxSecret)
	}
	switch e.TLS {
	case "", EmailSTARTTLS, EmailTLS, EmailNoTLS:
	default:
		return model.FieldErrorf("email.tls", "%q: use starttls, tls or none", e.TLS)
	}
	return nil
}

// checkAddress accepts one bare address (user@host) or "Name <user@host>".
func checkAddress(a string) error {
	if a == "" {
		return errors.New("required")
	}
	if len(a) > maxFieldLen || strings.ContainsAny(a, "\r\n") {
		return errors.New("not an email address")
	}
	p, err := mail.ParseAddress(a)
	if err != nil || !strings.Contains(p.Address, "@") {
		return fmt.Errorf("%q is not an email address", a)
	}
	return nil
}

func allDigits(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return s != ""
}

// checkHTTPURL requires an absolute http or https URL with a host.
func checkHTTPURL(field, s string) error {
	if s == "" {
		return model.FieldErrorf(field, "required")
	}
	if len(s) > MaxURL {
		return model.FieldErrorf(field, "at most %d bytes", MaxURL)
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return model.FieldErrorf(field, "%q is not an absolute http(s) URL", s)
	}
	return nil
}

// RedactedPath replaces the path and query of a URL whose credentials
// may be in them (a Slack webhook's and the chat robots' are).
const RedactedPath = "(redacted)"

// RedactURL keeps a URL's scheme and host and replaces the rest (path,
// query, user info) by RedactedPath: what readers below writer see of a
// channel's URL, and what the state machine keeps of a sealed one.
func RedactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" {
		return s
	}
	return u.Scheme + "://" + u.Host + "/" + RedactedPath
}
