package notifytest

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// The chat platforms a ChatReceiver stands in for.
const (
	DingTalk = "dingtalk"
	WeCom    = "wecom"
	Feishu   = "feishu"
)

// ChatMessage is one message a ChatReceiver accepted.
type ChatMessage struct {
	Platform string
	// Title is a DingTalk message's markdown.title or a Feishu card's
	// header title (empty for WeCom).
	Title string
	// Text is the markdown: DingTalk's markdown.text, WeCom's
	// markdown.content, the content of a Feishu card's markdown
	// elements.
	Text string
	// Signed: the request carried a signature that verified (always
	// true for a receiver with a secret: it refuses the others).
	Signed bool
	Body   []byte // as received
}

// ChatReceiver is a chat platform's robot webhook on 127.0.0.1, written
// from the platform's documentation without ax's code, so that a test
// checks what ax sends against what the platform takes. It checks each
// request as the platform does — POST, the credential in the URL (a
// DingTalk access_token, a WeCom key, a Feishu hook id), the JSON message
// with its markdown, the size limit, and with a secret the signature and
// its timestamp, within an hour of the receiver's clock — and answers as
// the platform does: HTTP 200 with a zero code, or the platform's error
// code and message (refusals are kept, Refusals).
//
//   - DingTalk ("自定义机器人接入"): POST /robot/send?access_token=T with
//     {"msgtype":"markdown","markdown":{"title","text"}}, the body at most
//     20,000 bytes; signed: &timestamp=<Unix ms>&sign=<urlEncode(Base64(
//     HmacSHA256(key secret, timestamp+"\n"+secret)))>.
//   - WeCom ("群机器人配置说明"): POST /cgi-bin/webhook/send?key=K with
//     {"msgtype":"markdown","markdown":{"content"}}, content at most 4096
//     bytes; no signature.
//   - Feishu ("自定义机器人使用指南"): POST /open-apis/bot/v2/hook/H with
//     {"msg_type":"interactive","card":{...}} (or "text"/"post"), the body
//     at most 20 KB; signed: "timestamp" (Unix seconds, a string) and
//     "sign" = Base64(HmacSHA256(key timestamp+"\n"+secret, empty message))
//     in the body.
type ChatReceiver struct {
	platform, token, secret string
	srv                     *httptest.Server
	// Messages receives each accepted message.
	Messages chan ChatMessage

	mu       sync.Mutex
	now      func() time.Time
	refusals []string
}

// NewChatReceiver starts a receiver for platform (DingTalk, WeCom or
// Feishu) whose webhook holds token (the access_token, key or hook id);
// with a secret (DingTalk, Feishu) it takes only signed requests. It is
// closed when the test ends.
func NewChatReceiver(t testing.TB, platform, token, secret string) *ChatReceiver {
	t.Helper()
	switch platform {
	case DingTalk, Feishu:
	case WeCom:
		if secret != "" {
			t.Fatalf("notifytest: a WeCom robot has no secret")
		}
	default:
		t.Fatalf("notifytest: unknown chat platform %q", platform)
	}
	r := &ChatReceiver{platform: platform, token: token, secret: secret, now: time.Now, Messages: make(chan ChatMessage, 64)}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.srv.Close)
	return r
}

// URL is the robot's webhook URL, as the platform shows it.
func (r *ChatReceiver) URL() string {
	switch r.platform {
	case DingTalk:
		return r.srv.URL + "/robot/send?access_token=" + r.token
	case WeCom:
		return r.srv.URL + "/cgi-bin/webhook/send?key=" + r.token
	}
	return r.srv.URL + "/open-apis/bot/v2/hook/" + r.token
}

// SetClock sets the clock the timestamps are held to (default time.Now).
func (r *ChatReceiver) SetClock(now func() time.Time) {
	r.mu.Lock()
	r.now = now
	r.mu.Unlock()
}

// Refusals are the reasons of the requests refused so far.
func (r *ChatReceiver) Refusals() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.refusals...)
}

// Next waits up to d for the next accepted message; it fails the test
// (naming the refusals) if none comes.
func (r *ChatReceiver) Next(t testing.TB, d time.Duration) ChatMessage {
	t.Helper()
	select {
	case m := <-r.Messages:
		return m
	case <-time.After(d):
		t.Fatalf("%s: no message in %s (refused: %q)", r.platform, d, r.Refusals())
		return ChatMessage{}
	}
}

// refusal is a platform's error answer.
type refusal struct {
	code int
	msg  string
}

func (r *ChatReceiver) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(req.Body, 1<<20))
	var m ChatMessage
	var ref *refusal
	switch r.platform {
	case DingTalk:
		m, ref = r.dingTalk(req, body)
	case WeCom:
		m, ref = r.weCom(req, body)
	default:
		m, ref = r.feishu(req, body)
	}
	w.Header().Set("Content-Type", "application/json")
	if ref != nil {
		r.mu.Lock()
		r.refusals = append(r.refusals, fmt.Sprintf("%d %s", ref.code, ref.msg))
		r.mu.Unlock()
		if r.platform == Feishu {
			fmt.Fprintf(w, `{"code":%d,"data":{},"msg":%q}`, ref.code, ref.msg)
		} else {
			fmt.Fprintf(w, `{"errcode":%d,"errmsg":%q}`, ref.code, ref.msg)
		}
		return
	}
	m.Platform, m.Body = r.platform, body
	r.Messages <- m
	if r.platform == Feishu {
		fmt.Fprint(w, `{"code":0,"data":{},"msg":"success"}`)
	} else {
		fmt.Fprint(w, `{"errcode":0,"errmsg":"ok"}`)
	}
}

// withinHour reports whether t is within an hour of the receiver's clock.
func (r *ChatReceiver) withinHour(t time.Time) bool {
	r.mu.Lock()
	now := r.now()
	r.mu.Unlock()
	d := now.Sub(t)
	return d <= time.Hour && d >= -time.Hour
}

func hmacBase64(key, msg string) string {
	m := hmac.New(sha256.New, []byte(key))
	m.Write([]byte(msg))
	return base64.StdEncoding.EncodeToString(m.Sum(nil))
}

func (r *ChatReceiver) dingTalk(req *http.Request, body []byte) (ChatMessage, *refusal) {
	q := req.URL.Query()
	switch {
	case req.Method != http.MethodPost || req.URL.Path != "/robot/send":
		return ChatMessage{}, &refusal{404, "not found: " + req.Method + " " + req.URL.Path}
	case q.Get("access_token") != r.token:
		return ChatMessage{}, &refusal{300001, "token is not exist"}
	}
	signed := false
	if r.secret != "" {
		ms, err := strconv.ParseInt(q.Get("timestamp"), 10, 64)
		if err != nil || !r.withinHour(time.UnixMilli(ms)) {
			return ChatMessage{}, &refusal{310000, "invalid timestamp " + q.Get("timestamp")}
		}
		// Query() undoes the sign's urlEncode: what is left is the Base64.
		if want := hmacBase64(r.secret, q.Get("timestamp")+"\n"+r.secret); !hmac.Equal([]byte(q.Get("sign")), []byte(want)) {
			return ChatMessage{}, &refusal{310000, "sign not match"}
		}
		signed = true
	}
	if len(body) > 20000 {
		return ChatMessage{}, &refusal{460101, fmt.Sprintf("message too long, exceed 20000 bytes (%d)", len(body))}
	}
	var msg struct {
		MsgType  string `json:"msgtype"`
		Markdown *struct {
			Title string `json:"title"`
			Text  string `json:"text"`
		} `json:"markdown"`
	}
	if err := json.Unmarshal(body, &msg); err != nil || msg.MsgType != "markdown" || msg.Markdown == nil || msg.Markdown.Title == "" || msg.Markdown.Text == "" {
		return ChatMessage{}, &refusal{40035, "invalid markdown message"}
	}
	return ChatMessage{Title: msg.Markdown.Title, Text: msg.Markdown.Text, Signed: signed}, nil
}

func (r *ChatReceiver) weCom(req *http.Request, body []byte) (ChatMessage, *refusal) {
	switch {
	case req.Method != http.MethodPost || req.URL.Path != "/cgi-bin/webhook/send":
		return ChatMessage{}, &refusal{404, "not found: " + req.Method + " " + req.URL.Path}
	case req.URL.Query().Get("key") != r.token:
		return ChatMessage{}, &refusal{93000, "invalid webhook url"}
	}
	var msg struct {
		MsgType  string `json:"msgtype"`
		Markdown *struct {
			Content string `json:"content"`
		} `json:"markdown"`
	}
	if err := json.Unmarshal(body, &msg); err != nil || msg.MsgType != "markdown" || msg.Markdown == nil || msg.Markdown.Content == "" {
		return ChatMessage{}, &refusal{40008, "invalid message type"}
	}
	if n := len(msg.Markdown.Content); n > 4096 {
		return ChatMessage{}, &refusal{40058, fmt.Sprintf("markdown.content exceed max length 4096 (%d)", n)}
	}
	return ChatMessage{Text: msg.Markdown.Content}, nil
}

func (r *ChatReceiver) feishu(req *http.Request, body []byte) (ChatMessage, *refusal) {
	if req.Method != http.MethodPost || req.URL.Path != "/open-apis/bot/v2/hook/"+r.token {
		return ChatMessage{}, &refusal{19001, "param invalid: incoming webhook access token invalid"}
	}
	if len(body) > 20000 {
		return ChatMessage{}, &refusal{9499, fmt.Sprintf("request body too large (%d bytes; at most 20 KB)", len(body))}
	}
	var msg struct {
		Timestamp string `json:"timestamp"`
		Sign      string `json:"sign"`
		MsgType   string `json:"msg_type"`
		Card      *struct {
			Header struct {
				Title struct {
					Content string `json:"content"`
				} `json:"title"`
			} `json:"header"`
			Elements []struct {
				Tag     string `json:"tag"`
				Content string `json:"content"`
			} `json:"elements"`
		} `json:"card"`
	}
	if err := json.Unmarshal(body, &msg); err != nil {
		return ChatMessage{}, &refusal{9499, "Bad Request: " + err.Error()}
	}
	signed := false
	if r.secret != "" {
		sec, err := strconv.ParseInt(msg.Timestamp, 10, 64)
		if err != nil || !r.withinHour(time.Unix(sec, 0)) ||
			!hmac.Equal([]byte(msg.Sign), []byte(hmacBase64(msg.Timestamp+"\n"+r.secret, ""))) {
			return ChatMessage{}, &refusal{19021, "sign match fail or timestamp is not within one hour from current time"}
		}
		signed = true
	}
	if msg.MsgType != "interactive" || msg.Card == nil {
		return ChatMessage{}, &refusal{19002, "the receiver takes interactive cards only, got msg_type " + msg.MsgType}
	}
	var texts []string
	for _, e := range msg.Card.Elements {
		if e.Tag == "markdown" {
			texts = append(texts, e.Content)
		}
	}
	if len(texts) == 0 {
		return ChatMessage{}, &refusal{19002, "a card without a markdown element"}
	}
	return ChatMessage{Title: msg.Card.Header.Title.Content, Text: strings.Join(texts, "\n"), Signed: signed}, nil
}
