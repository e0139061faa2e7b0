package notify

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/ax-scheduler/ax/model"
)

// The chat robots of seed 002's teams: what each platform documents, and
// what this file follows. (The pages were read through the search tool's
// copies: the platforms' own pages, and the articles and SDKs that quote
// them; see docs/alerts.md.)
//
// DingTalk custom robot, "自定义机器人接入"
// (https://open.dingtalk.com/document/group/custom-robot-access) and its
// message types (https://open.dingtalk.com/document/orgapp/custom-bot-send-message-type):
// POST {"msgtype":"markdown","markdown":{"title","text"}} (UTF-8) to
// https://oapi.dingtalk.com/robot/send?access_token=…. With the "加签"
// (signing) security setting the query also carries timestamp, the Unix
// time in milliseconds (within an hour of DingTalk's clock), and sign:
// "把 timestamp+"\n"+密钥 当做签名字符串，使用 HmacSHA256 算法计算签名，然后进行
// Base64 encode，最后再把签名参数再进行 urlEncode" (the key is the secret,
// "SEC…"). The answer is HTTP 200 with {"errcode":0,"errmsg":"ok"}, or
// another errcode: 310000 (signature, keyword or IP), 130101 (more than
// 20 messages a minute), 460101 (a body over 20,000 bytes).
//
// WeCom group robot, "群机器人配置说明"
// (https://developer.work.weixin.qq.com/document/path/91770): POST
// {"msgtype":"markdown","markdown":{"content"}} to
// https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=…: the key is the
// credential, there is no signature. content is at most 4096 bytes of
// UTF-8 (errcode 40058 beyond); its markdown has headings, bold, links,
// one-line `code`, > quotes and <font color="info|comment|warning">. The
// answer is {"errcode":0,"errmsg":"ok"}; 20 messages a minute (errcode
// 45009 beyond).
//
// Feishu/Lark custom bot, "自定义机器人使用指南"
// (https://open.feishu.cn/document/client-docs/bot-v3/add-custom-bot):
// POST JSON to https://open.feishu.cn/open-apis/bot/v2/hook/… (Lark:
// open.larksuite.com); markdown travels in an interactive card,
// {"msg_type":"interactive","card":{"header":…,"elements":[{"tag":"markdown","content":…}]}}.
// With signature verification (签名校验) the body also holds "timestamp",
// the Unix time in seconds (within an hour), and "sign": "把 timestamp +
// "\n" + 密钥 当做签名字符串，使用 HmacSHA256 算法计算签名，再进行 Base64
// 编码" — the string is the HMAC's key and the message is empty. The
// answer is {"code":0,"msg":"success"} (StatusCode in older answers), or
// code 19021 "sign match fail or timestamp is not within one hour from
// current time"; a request body is at most 20 KB.

// Chat message limits, in bytes.
const (
	// DingTalkMaxBody bounds a DingTalk robot's request body.
	DingTalkMaxBody = 20000
	// WeComMaxContent bounds a WeCom robot's markdown.content.
	WeComMaxContent = 4096
	// FeishuMaxBody bounds a Feishu bot's request body (20 KB, counted
	// in thousands).
	FeishuMaxBody = 20000
	// chatLineMax bounds one line of output in a chat message.
	chatLineMax = 500
	// feishuSignRoom is what a Feishu body's timestamp and sign add.
	feishuSignRoom = 100
)

// Answer codes a platform uses for its rate limit: the delivery is
// retried (any other non-zero code is permanent).
const (
	dingTalkTooFast = 130101
	weComTooFast    = 45009
)

// DingTalkSign returns a signed DingTalk robot request's sign, before it
// is URL-encoded into the query: Base64(HMAC-SHA256(key secret, message
// timestamp + "\n" + secret)), timestamp in Unix milliseconds.
func DingTalkSign(secret string, timestampMs int64) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(strconv.FormatInt(timestampMs, 10) + "\n" + secret))
	return base64.StdEncoding.EncodeToString(m.Sum(nil))
}

// FeishuSign returns a signed Feishu bot request's sign:
// Base64(HMAC-SHA256(key timestamp + "\n" + secret, empty message)),
// timestamp in Unix seconds.
func FeishuSign(secret string, timestampSec int64) string {
	m := hmac.New(sha256.New, []byte(strconv.FormatInt(timestampSec, 10)+"\n"+secret))
	return base64.StdEncoding.EncodeToString(m.Sum(nil))
}

// dialect is how one platform's markdown writes a message.
type dialect struct {
	name    string // the platform, in the truncation marker
	nl      string // between rows
	escape  func(string) string
	heading func(n *model.AlertNotification) string // nil for none (Feishu: the card's header)
	output  func(lines []string) string
}

var (
	dingTalkDialect = &dialect{name: "DingTalk", nl: "\n\n", escape: verbatim,
		heading: func(n *model.AlertNotification) string { return "#### " + Subject(n) },
		// Quotes: the code spans and blocks DingTalk does not document.
		output: func(lines []string) string { return joinEach(lines, "> ", "", "\n\n") }}
	weComDialect = &dialect{name: "WeCom", nl: "\n", escape: verbatim,
		heading: func(n *model.AlertNotification) string {
			color := "warning"
			if n.Event == model.AlertResolved {
				color = "info"
			}
			return `### <font color="` + color + `">` + Subject(n) + "</font>"
		},
		// One code span a line (WeCom's spans do not cross lines).
		output: func(lines []string) string {
			return joinEach(lines, "`", "`", "\n", func(l string) string { return strings.ReplaceAll(l, "`", "'") })
		}}
	feishuDialect = &dialect{name: "Feishu", nl: "\n", escape: htmlEscape,
		output: func(lines []string) string {
			return "```\n" + joinEach(lines, "", "", "\n", func(l string) string { return strings.ReplaceAll(l, "```", "'''") }) + "\n```"
		}}
)

func verbatim(s string) string { return s }

// htmlEscape escapes what a Feishu card's markdown reads as a tag or an
// entity.
func htmlEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

// joinEach joins lines, each (after the edits) between pre and post.
func joinEach(lines []string, pre, post, sep string, edits ...func(string) string) string {
	var b strings.Builder
	for i, l := range lines {
		for _, e := range edits {
			l = e(l)
		}
		if i > 0 {
			b.WriteString(sep)
		}
		b.WriteString(pre + l + post)
	}
	return b.String()
}

// chatMarkdown renders a notification in d's markdown, as Text does in
// plain text: what happened; for a failure the task, instance, failure
// time, attempt n of m, how it failed, the error, the executor, what to
// do and the last lines of output (only the last keep of them, saying how
// many were cut); the console link and the alert's times.
func chatMarkdown(d *dialect, n *model.AlertNotification, f *model.FailureReport, link string, keep int) string {
	var rows []string
	row := func(k, v string) {
		if v != "" {
			rows = append(rows, "**"+k+":** "+v)
		}
	}
	a := &n.Alert
	if d.heading != nil {
		rows = append(rows, d.heading(n))
	}
	if f != nil && n.Event == model.AlertFiring {
		row("Task", d.escape(f.Task))
		row("Instance", "["+f.InstanceID+"]("+link+")")
		row("Failed at", timeText(f.FailedAt))
		row("Attempt", fmt.Sprintf("%d of %d", f.Attempt, f.MaxAttempts))
		row("Failure", d.escape(ClassText(f)))
		row("Error", d.escape(oneLine(f.Error, 300)))
		if f.Executor != "" {
			where := f.Executor
			if f.Host != "" {
				where += " on host " + f.Host
			}
			row("Executor", d.escape(where))
		}
		row("What to do", d.escape(f.Suggestion))
		tail := f.LogTail
		switch cut := len(tail) - keep; {
		case len(tail) == 0:
			rows = append(rows, "(no output)")
		case cut > 0:
			rows = append(rows, fmt.Sprintf("**Last %d lines of output** (%d earlier lines cut to fit %s's message limit):", keep, cut, d.name))
			tail = tail[cut:]
		default:
			rows = append(rows, fmt.Sprintf("**Last %d lines of output:**", len(tail)))
		}
		if len(tail) > 0 {
			lines := make([]string, len(tail))
			for i, l := range tail {
				lines[i] = strings.ToValidUTF8(capBytes(l, chatLineMax), "")
			}
			rows = append(rows, d.output(lines))
		}
	} else {
		row("Task", d.escape(a.Subject.Task))
		row("Instance", d.escape(a.Subject.Instance))
		row("Node", d.escape(a.Subject.Node))
		row("Executor", d.escape(a.Subject.Executor))
		for _, k := range detailKeys(a) {
			row(d.escape(k), d.escape(oneLine(a.Details[k], 300)))
		}
	}
	rows = append(rows, "[Open in the console]("+link+")")
	row("Alert", d.escape(a.ID))
	for _, r := range alertTimes(n) {
		row(r[0], r[1])
	}
	return strings.Join(rows, d.nl)
}

// capBytes cuts s to at most n bytes, marked with "…".
func capBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// fitChat renders with as many of the output's last lines as size lets
// the message hold within limit, cutting the earliest first (render says
// how many it cut); when even none fit (long details), it cuts the text
// itself, marked.
func fitChat(d *dialect, limit int, size func(text string) int, render func(keep int) string, lines int) string {
	for keep := lines; ; keep-- {
		text := render(keep)
		if size(text) <= limit {
			return text
		}
		if keep <= 0 {
			return cutToFit(text, d.nl+"… (cut to fit "+d.name+"'s message limit)", limit, size)
		}
	}
}

// cutToFit cuts text, at a character boundary, until it and marker fit
// limit as size measures them.
func cutToFit(text, marker string, limit int, size func(string) int) string {
	for len(text) > 0 {
		over := size(text+marker) - limit
		if over <= 0 {
			break
		}
		text = strings.ToValidUTF8(text[:max(len(text)-over, 0)], "")
	}
	return text + marker
}

// chatJSON encodes a chat body as the platforms show theirs: without
// Go's escaping of <, > and & (which would only make it larger).
func chatJSON(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil // strings and maps of strings: cannot fail
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// The chat bodies, fields in the platforms' order.
type (
	dingTalkBody struct {
		MsgType  string `json:"msgtype"`
		Markdown struct {
			Title string `json:"title"`
			Text  string `json:"text"`
		} `json:"markdown"`
	}
	weComBody struct {
		MsgType  string `json:"msgtype"`
		Markdown struct {
			Content string `json:"content"`
		} `json:"markdown"`
	}
	feishuBody struct {
		Timestamp string          `json:"timestamp,omitempty"`
		Sign      string          `json:"sign,omitempty"`
		MsgType   string          `json:"msg_type"`
		Card      json.RawMessage `json:"card"`
	}
	feishuText struct {
		Tag     string `json:"tag"`
		Content string `json:"content"`
	}
	feishuCard struct {
		Config struct {
			WideScreenMode bool `json:"wide_screen_mode"`
		} `json:"config"`
		Header struct {
			Title    feishuText `json:"title"`
			Template string     `json:"template"`
		} `json:"header"`
		Elements []feishuText `json:"elements"`
	}
)

// chatBodies renders n for the chat robots, each within its platform's
// limit: the DingTalk and WeCom request bodies and the Feishu card (its
// body is made per try, with a fresh signature).
func chatBodies(n *model.AlertNotification, f *model.FailureReport, link string) (dingTalk, weCom, feishu []byte) {
	lines := 0
	if f != nil && n.Event == model.AlertFiring {
		lines = len(f.LogTail)
	}
	render := func(d *dialect) func(int) string {
		return func(keep int) string { return chatMarkdown(d, n, f, link, keep) }
	}
	subject := oneLine(Subject(n), 200)

	var dt dingTalkBody
	dt.MsgType, dt.Markdown.Title = "markdown", subject
	dingTalkSize := func(text string) int {
		dt.Markdown.Text = text
		return len(chatJSON(&dt))
	}
	dt.Markdown.Text = fitChat(dingTalkDialect, DingTalkMaxBody, dingTalkSize, render(dingTalkDialect), lines)

	var wc weComBody
	wc.MsgType = "markdown"
	wc.Markdown.Content = fitChat(weComDialect, WeComMaxContent, func(s string) int { return len(s) }, render(weComDialect), lines)

	var card feishuCard
	card.Config.WideScreenMode = true
	card.Header.Title = feishuText{Tag: "plain_text", Content: subject}
	card.Header.Template = feishuColor(n)
	card.Elements = []feishuText{{Tag: "markdown"}}
	feishuSize := func(text string) int {
		card.Elements[0].Content = text
		return len(chatJSON(&feishuBody{MsgType: "interactive", Card: chatJSON(&card)})) + feishuSignRoom
	}
	card.Elements[0].Content = fitChat(feishuDialect, FeishuMaxBody, feishuSize, render(feishuDialect), lines)
	return chatJSON(&dt), chatJSON(&wc), chatJSON(&card)
}

// feishuColor is a card header's color: red for a critical alert firing,
// orange for a warning, blue for info, green once resolved.
func feishuColor(n *model.AlertNotification) string {
	switch {
	case n.Event == model.AlertResolved:
		return "green"
	case n.Alert.Severity == model.SeverityCritical:
		return "red"
	case n.Alert.Severity == model.SeverityWarning:
		return "orange"
	}
	return "blue"
}

// chatAnswer checks a robot's answer to a request it took (2xx): the
// platforms answer HTTP 200 whatever happened, with a code in the body,
// errcode (DingTalk, WeCom) or code (Feishu; StatusCode in its older
// answers). A non-zero code is a failure, permanent unless it is one of
// the platform's rate-limit codes. An answer that is not JSON is taken.
func chatAnswer(rateLimited ...int) func([]byte) error {
	return func(body []byte) error {
		var a struct {
			ErrCode       *int   `json:"errcode"`
			ErrMsg        string `json:"errmsg"`
			Code          *int   `json:"code"`
			Msg           string `json:"msg"`
			StatusCode    *int   `json:"StatusCode"`
			StatusMessage string `json:"StatusMessage"`
		}
		if json.Unmarshal(body, &a) != nil {
			return nil
		}
		code, msg := 0, ""
		switch {
		case a.ErrCode != nil:
			code, msg = *a.ErrCode, a.ErrMsg
		case a.Code != nil:
			code, msg = *a.Code, a.Msg
		case a.StatusCode != nil:
			code, msg = *a.StatusCode, a.StatusMessage
		}
		if code == 0 {
			return nil
		}
		err := fmt.Errorf("answered code %d: %s", code, oneLine(msg, 200))
		if slices.Contains(rateLimited, code) {
			return err
		}
		return permanentError{err}
	}
}
