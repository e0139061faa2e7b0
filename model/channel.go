package model

import (
	"errors"
	"fmt"
	"net"
	"net/mail"
	"net/url"
	"slices"
	"strings"
)

// Channel types.
const (
	ChannelWebhook = "webhook" // a generic JSON webhook, signed with Secret
	ChannelSlack   = "slack"   // a Slack-compatible incoming webhook
	ChannelEmail   = "email"   // mail over SMTP
)

// Email TLS modes.
const (
	EmailSTARTTLS = "starttls" // plain connection upgraded with STARTTLS (default; required)
	EmailTLS      = "tls"      // TLS from the first byte (port 465)
	EmailNoTLS    = "none"     // no TLS: only for a relay on a trusted network
)

// Limits of a channel definition.
const (
	MaxChannelURL      = 2048
	MaxChannelSecret   = 4096
	MaxChannelMatch    = 32
	MaxChannelEmailTo  = 50
	maxChannelFieldLen = 512
)

// Channel is a named notification channel: where alerts go and which ones.
// Secret and Email.Password are write-only: a read answers them empty and
// says whether one is set (SecretSet, Email.PasswordSet). A write that
// leaves them empty keeps the stored value, so a channel read back can be
// applied again; delete the channel to drop one.
type Channel struct {
	Name string `json:"name,omitempty"`
	Type string `json:"type"`
	// URL receives webhook and slack notifications (http or https).
	URL string `json:"url,omitempty"`
	// Secret is a webhook's HMAC-SHA256 key (X-AX-Signature).
	Secret    string        `json:"secret,omitempty"`
	SecretSet bool          `json:"secretSet,omitempty"`
	Email     *EmailChannel `json:"email,omitempty"`
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

	Version   uint64 `json:"version,omitempty"`
	CreatedAt *Time  `json:"createdAt,omitempty"`
	UpdatedAt *Time  `json:"updatedAt,omitempty"`
	UpdatedBy string `json:"updatedBy,omitempty"`
}

// EmailChannel is where an email channel sends: an SMTP server and its
// credentials.
type EmailChannel struct {
	To          []string `json:"to"`
	From        string   `json:"from"`
	SMTP        string   `json:"smtp"` // host:port
	Username    string   `json:"username,omitempty"`
	Password    string   `json:"password,omitempty"` // write-only
	PasswordSet bool     `json:"passwordSet,omitempty"`
	TLS         string   `json:"tls,omitempty"` // starttls (default), tls, none
}

// ChannelList answers GET /v1/channels, by name.
type ChannelList struct {
	Channels []Channel `json:"channels"`
}

// SeverityRank orders severities: info 1, warning 2, critical 3, else 0.
func SeverityRank(s string) int {
	switch s {
	case SeverityInfo:
		return 1
	case SeverityWarning:
		return 2
	case SeverityCritical:
		return 3
	}
	return 0
}

// Normalize fills the defaults that do not change meaning (minSeverity
// info, both events, email tls starttls) and sorts events.
func (c *Channel) Normalize() {
	if c.MinSeverity == "" {
		c.MinSeverity = SeverityInfo
	}
	if len(c.Events) == 0 {
		c.Events = []string{AlertFiring, AlertResolved}
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
		min = SeverityInfo
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
		if err := ValidateName("name", c.Name); err != nil {
			return err
		}
	}
	switch c.Type {
	case ChannelWebhook, ChannelSlack:
		if err := checkHTTPURL("url", c.URL); err != nil {
			return err
		}
		if c.Email != nil {
			return FieldErrorf("email", "only for type email")
		}
		if c.Type == ChannelSlack && c.Secret != "" {
			return FieldErrorf("secret", "only for type webhook (a Slack webhook's URL is its credential)")
		}
	case ChannelEmail:
		if c.URL != "" {
			return FieldErrorf("url", "not for type email: set email.smtp")
		}
		if c.Secret != "" {
			return FieldErrorf("secret", "only for type webhook")
		}
		if c.Email == nil {
			return FieldErrorf("email", "required for type email")
		}
		if err := c.Email.validate(); err != nil {
			return err
		}
	case "":
		return FieldErrorf("type", "required: webhook, slack or email")
	default:
		return FieldErrorf("type", "%q: use webhook, slack or email", c.Type)
	}
	if len(c.Secret) > MaxChannelSecret {
		return FieldErrorf("secret", "at most %d bytes", MaxChannelSecret)
	}
	if len(c.Match) > MaxChannelMatch {
		return FieldErrorf("match", "at most %d labels", MaxChannelMatch)
	}
	for _, k := range sortedKeys(c.Match) {
		if k == "" || len(k) > maxChannelFieldLen || len(c.Match[k]) > maxChannelFieldLen {
			return FieldErrorf("match", "label %q: keys are 1-%d bytes, values at most %d", k, maxChannelFieldLen, maxChannelFieldLen)
		}
	}
	if c.MinSeverity != "" && SeverityRank(c.MinSeverity) == 0 {
		return FieldErrorf("minSeverity", "%q: use info, warning or critical", c.MinSeverity)
	}
	if len(c.Events) > 2 {
		return FieldErrorf("events", "at most firing and resolved")
	}
	for _, e := range c.Events {
		if e != AlertFiring && e != AlertResolved {
			return FieldErrorf("events", "%q: use firing or resolved", e)
		}
	}
	return nil
}

func (e *EmailChannel) validate() error {
	if len(e.To) == 0 {
		return FieldErrorf("email.to", "at least one address")
	}
	if len(e.To) > MaxChannelEmailTo {
		return FieldErrorf("email.to", "at most %d addresses", MaxChannelEmailTo)
	}
	for i, a := range e.To {
		if err := checkAddress(a); err != nil {
			return FieldErrorf("email.to", "entry %d: %v", i, err)
		}
	}
	if err := checkAddress(e.From); err != nil {
		return FieldErrorf("email.from", "%v", err)
	}
	host, port, err := net.SplitHostPort(e.SMTP)
	if err != nil || host == "" || port == "" || strings.ContainsAny(host, " /") || !allDigits(port) || len(e.SMTP) > maxChannelFieldLen {
		return FieldErrorf("email.smtp", "%q is not host:port", e.SMTP)
	}
	if len(e.Username) > maxChannelFieldLen {
		return FieldErrorf("email.username", "at most %d bytes", maxChannelFieldLen)
	}
	if len(e.Password) > MaxChannelSecret {
		return FieldErrorf("email.password", "at most %d bytes", MaxChannelSecret)
	}
	switch e.TLS {
	case "", EmailSTARTTLS, EmailTLS, EmailNoTLS:
	default:
		return FieldErrorf("email.tls", "%q: use starttls, tls or none", e.TLS)
	}
	return nil
}

// checkAddress accepts one bare address (user@host) or "Name <user@host>".
func checkAddress(a string) error {
	if a == "" {
		return errors.New("required")
	}
	if len(a) > maxChannelFieldLen || strings.ContainsAny(a, "\r\n") {
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
		return FieldErrorf(field, "required")
	}
	if len(s) > MaxChannelURL {
		return FieldErrorf(field, "at most %d bytes", MaxChannelURL)
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return FieldErrorf(field, "%q is not an absolute http(s) URL", s)
	}
	return nil
}

// IsNotifyURL reports whether a policy.notify entry is an ad-hoc webhook
// URL (http:// or https://) rather than a channel name.
func IsNotifyURL(s string) bool {
	return strings.HasPrefix(s, "http://") || strings.HasPrefix(s, "https://")
}

// RedactedPath replaces the path and query of a URL whose credentials
// may be in them (a Slack webhook's are).
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
