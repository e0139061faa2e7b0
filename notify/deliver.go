package notify

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/ax-scheduler/ax/model/channel"
	"github.com/wneessen/go-mail"
)

// Webhook headers.
const (
	// SignatureHeader is "sha256=" and the hex HMAC-SHA256, keyed with
	// the channel's secret, of TimestampHeader's value, a ".", and the
	// body: a receiver recomputes it and compares in constant time, and
	// refuses timestamps older than it tolerates (a replay).
	SignatureHeader = "X-AX-Signature"
	// TimestampHeader is the Unix time in seconds the request was signed
	// (each try is signed again).
	TimestampHeader = "X-AX-Timestamp"
	// DeliveryHeader is the delivery's id: the same on every try of one
	// delivery, so a receiver can drop a repeat.
	DeliveryHeader = "X-AX-Delivery"
	// EventHeader is the notification's event: firing or resolved.
	EventHeader = "X-AX-Event"
)

// Sign returns the X-AX-Signature value of body sent at timestamp ts
// (Unix seconds) with key secret.
func Sign(secret []byte, ts string, body []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(ts))
	m.Write([]byte{'.'})
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// Verify checks a signature made by Sign (for receivers and tests).
func Verify(secret []byte, ts string, body []byte, sig string) bool {
	return hmac.Equal([]byte(Sign(secret, ts, body)), []byte(sig))
}

// Retry is how deliveries are retried: Tries attempts at most, waiting
// Initial, then twice as long each time up to Max, within the context.
type Retry struct {
	Tries   int
	Initial time.Duration
	Max     time.Duration
}

// DefaultRetry: 6 tries, 1 s doubling to 1 min (about a minute in all).
var DefaultRetry = Retry{Tries: 6, Initial: time.Second, Max: time.Minute}

// permanentError is a failure a retry cannot fix (a 4xx answer other
// than 408 and 429, a bad address).
type permanentError struct{ err error }

func (e permanentError) Error() string { return e.err.Error() }
func (e permanentError) Unwrap() error { return e.err }

// IsPermanent reports whether err is a failure a retry cannot fix.
func IsPermanent(err error) bool {
	var p permanentError
	return errors.As(err, &p)
}

// retry runs try until it succeeds, fails permanently, runs out of tries
// or ctx ends; it returns the last error and how many tries it made.
func (r Retry) run(ctx context.Context, sleep func(context.Context, time.Duration) error, try func(ctx context.Context) error) (int, error) {
	tries := max(r.Tries, 1)
	wait := r.Initial
	var err error
	for i := 1; ; i++ {
		if err = try(ctx); err == nil || IsPermanent(err) || i >= tries {
			return i, err
		}
		if serr := sleep(ctx, wait); serr != nil {
			return i, fmt.Errorf("%w (then: %v)", err, serr)
		}
		wait = min(wait*2, r.Max)
	}
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// deliveryID returns a random id for one delivery.
func deliveryID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// postJSON sends body to url once: 2xx is delivered (if check, when
// set, takes the answer's body), 4xx other than 408 and 429 a permanent
// failure, anything else worth a retry.
func (s *Sender) postJSON(ctx context.Context, to string, body []byte, hdr func(http.Header), check func([]byte) error) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, to, bytes.NewReader(body))
	if err != nil {
		return permanentError{err}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "ax-notifier")
	if hdr != nil {
		hdr(req.Header)
	}
	resp, err := s.http().Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			// The URL may be the credential (a Slack webhook's path, a
			// robot's token, a DingTalk signature): the error is logged.
			ue.URL = channel.RedactURL(ue.URL)
		}
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 == 2 {
		if check == nil {
			return nil
		}
		answer, err := io.ReadAll(io.LimitReader(resp.Body, 4096))
		if err != nil {
			return err
		}
		return check(answer)
	}
	snippet, _ := io.ReadAll(io.LimitReader(resp.Body, 256))
	err = fmt.Errorf("answered %s: %s", resp.Status, oneLine(string(snippet), 200))
	if resp.StatusCode/100 == 4 && resp.StatusCode != http.StatusRequestTimeout && resp.StatusCode != http.StatusTooManyRequests {
		return permanentError{err}
	}
	return err
}

// Sender delivers rendered messages to targets.
type Sender struct {
	// HTTP sends webhook and Slack requests (default: 10 s timeout).
	HTTP *http.Client
	// Retry governs every delivery (default DefaultRetry).
	Retry Retry
	// Sleep waits between tries (default: a timer that ends with ctx).
	Sleep func(context.Context, time.Duration) error
	// Now gives the signature timestamp (default time.Now).
	Now func() time.Time
}

func (s *Sender) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

func (s *Sender) http() *http.Client {
	if s.HTTP != nil {
		return s.HTTP
	}
	return &http.Client{Timeout: 10 * time.Second}
}

func (s *Sender) retry() Retry {
	if s.Retry.Tries == 0 {
		return DefaultRetry
	}
	return s.Retry
}

func (s *Sender) sleep() func(context.Context, time.Duration) error {
	if s.Sleep != nil {
		return s.Sleep
	}
	return sleepCtx
}

// Message is one notification rendered for every channel type.
type Message struct {
	Event   string
	Subject string
	Text    string // plain text (email body)
	Slack   string // Slack mrkdwn text
	JSON    []byte // the webhook body (model.Notification)
	// The chat robots' bodies, each within its platform's limit.
	DingTalk   []byte // {"msgtype":"markdown",...}
	WeCom      []byte // {"msgtype":"markdown",...}
	FeishuCard []byte // the interactive card (the body is made per try)
}

// withQuery adds the encoded parameters q to the query of rawURL,
// keeping what it holds (a robot's access token).
func withQuery(rawURL, q string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return rawURL // a channel's URL parses (Validate): the request will say what is wrong
	}
	if u.RawQuery != "" {
		u.RawQuery += "&"
	}
	u.RawQuery += q
	return u.String()
}

// Deliver sends m to t, retrying as s.Retry says; it returns how many
// tries it made and the last error.
func (s *Sender) Deliver(ctx context.Context, t *Target, m *Message) (int, error) {
	switch t.Channel.Type {
	case channel.TypeWebhook:
		id := deliveryID()
		return s.retry().run(ctx, s.sleep(), func(ctx context.Context) error {
			return s.postJSON(ctx, t.Channel.URL, m.JSON, func(h http.Header) {
				h.Set(DeliveryHeader, id)
				h.Set(EventHeader, m.Event)
				if t.Secret != "" {
					ts := strconv.FormatInt(s.now().Unix(), 10)
					h.Set(TimestampHeader, ts)
					h.Set(SignatureHeader, Sign([]byte(t.Secret), ts, m.JSON))
				}
			}, nil)
		})
	case channel.TypeSlack:
		body, err := json.Marshal(map[string]string{"text": m.Slack})
		if err != nil {
			return 0, err
		}
		return s.retry().run(ctx, s.sleep(), func(ctx context.Context) error {
			return s.postJSON(ctx, t.Channel.URL, body, nil, nil)
		})
	case channel.TypeDingTalk:
		return s.retry().run(ctx, s.sleep(), func(ctx context.Context) error {
			u := t.Channel.URL
			if t.Secret != "" { // signed again each try: a fresh timestamp
				ts := s.now().UnixMilli()
				u = withQuery(u, "timestamp="+strconv.FormatInt(ts, 10)+"&sign="+url.QueryEscape(DingTalkSign(t.Secret, ts)))
			}
			return s.postJSON(ctx, u, m.DingTalk, nil, chatAnswer(dingTalkTooFast))
		})
	case channel.TypeWeCom:
		return s.retry().run(ctx, s.sleep(), func(ctx context.Context) error {
			return s.postJSON(ctx, t.Channel.URL, m.WeCom, nil, chatAnswer(weComTooFast))
		})
	case channel.TypeFeishu:
		return s.retry().run(ctx, s.sleep(), func(ctx context.Context) error {
			body := feishuBody{MsgType: "interactive", Card: m.FeishuCard}
			if t.Secret != "" {
				ts := s.now().Unix()
				body.Timestamp, body.Sign = strconv.FormatInt(ts, 10), FeishuSign(t.Secret, ts)
			}
			return s.postJSON(ctx, t.Channel.URL, chatJSON(&body), nil, chatAnswer())
		})
	case channel.TypeEmail:
		msg, err := s.mailMessage(t, m)
		if err != nil {
			return 0, permanentError{err}
		}
		return s.retry().run(ctx, s.sleep(), func(ctx context.Context) error {
			return s.sendMail(ctx, t, msg)
		})
	}
	return 0, permanentError{fmt.Errorf("unknown channel type %q", t.Channel.Type)}
}

func (s *Sender) mailMessage(t *Target, m *Message) (*mail.Msg, error) {
	e := t.Channel.Email
	if e == nil {
		return nil, errors.New("email channel without email settings")
	}
	msg := mail.NewMsg()
	if err := msg.From(e.From); err != nil {
		return nil, fmt.Errorf("from: %w", err)
	}
	if err := msg.To(e.To...); err != nil {
		return nil, fmt.Errorf("to: %w", err)
	}
	msg.Subject(m.Subject)
	msg.SetDate()
	msg.SetMessageID()
	msg.SetGenHeader("X-AX-Event", m.Event)
	msg.SetBodyString(mail.TypeTextPlain, m.Text)
	return msg, nil
}

// sendMail sends one message over SMTP as the channel says: STARTTLS
// required (default), TLS from the start, or none; with PLAIN/LOGIN
// authentication (whichever the server offers) when a username is set.
func (s *Sender) sendMail(ctx context.Context, t *Target, msg *mail.Msg) error {
	e := t.Channel.Email
	host, portText, err := net.SplitHostPort(e.SMTP)
	if err != nil {
		return permanentError{err}
	}
	port, err := strconv.Atoi(portText)
	if err != nil {
		return permanentError{err}
	}
	opts := []mail.Option{mail.WithPort(port), mail.WithTimeout(15 * time.Second)}
	switch e.TLS {
	case channel.EmailTLS:
		opts = append(opts, mail.WithSSL(), mail.WithPort(port))
	case channel.EmailNoTLS:
		opts = append(opts, mail.WithTLSPolicy(mail.NoTLS))
	default:
		opts = append(opts, mail.WithTLSPolicy(mail.TLSMandatory))
	}
	if e.Username != "" {
		opts = append(opts, mail.WithSMTPAuth(mail.SMTPAuthAutoDiscover), mail.WithUsername(e.Username), mail.WithPassword(t.Password))
	}
	c, err := mail.NewClient(host, opts...)
	if err != nil {
		return permanentError{err}
	}
	return c.DialAndSendWithContext(ctx, msg)
}
