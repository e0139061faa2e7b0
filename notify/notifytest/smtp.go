// Package notifytest has test helpers for notification delivery, on
// 127.0.0.1, that hand what they accept to the test: an SMTP sink, and
// the DingTalk, WeCom and Feishu robots' webhooks (ChatReceiver), which
// check requests as those platforms document.
package notifytest

import (
	"bufio"
	"io"
	"mime/quotedprintable"
	"net"
	"net/textproto"
	"strings"
	"sync"
	"testing"
)

// Mail is one message the sink accepted.
type Mail struct {
	From string
	To   []string
	Data string // headers and body as received, dot-unstuffed, LF line ends
}

// SMTPSink is a minimal SMTP server (RFC 5321's happy path: EHLO/HELO,
// MAIL, RCPT, DATA, RSET, NOOP, QUIT; no TLS, no AUTH) on 127.0.0.1 that
// hands each accepted message to Mails.
type SMTPSink struct {
	ln    net.Listener
	Mails chan Mail
	wg    sync.WaitGroup
	mu    sync.Mutex
	conns []net.Conn
}

// NewSMTPSink starts a sink that is closed when the test ends.
func NewSMTPSink(t testing.TB) *SMTPSink {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &SMTPSink{ln: ln, Mails: make(chan Mail, 16)}
	s.wg.Add(1)
	go s.serve()
	t.Cleanup(func() {
		ln.Close()
		s.mu.Lock()
		for _, c := range s.conns {
			c.Close() // a client that gave up may leave its connection open
		}
		s.mu.Unlock()
		s.wg.Wait()
	})
	return s
}

// Addr is the sink's host:port.
func (s *SMTPSink) Addr() string { return s.ln.Addr().String() }

func (s *SMTPSink) serve() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		s.conns = append(s.conns, c)
		s.mu.Unlock()
		s.wg.Add(1)
		go func() { defer s.wg.Done(); s.session(c) }()
	}
}

func (s *SMTPSink) session(c net.Conn) {
	defer c.Close()
	tp := textproto.NewConn(c)
	reply := func(code int, msg string) bool { return tp.PrintfLine("%d %s", code, msg) == nil }
	if !reply(220, "sink ESMTP ready") {
		return
	}
	var m Mail
	for {
		line, err := tp.ReadLine()
		if err != nil {
			return
		}
		verb, arg, _ := strings.Cut(line, " ")
		switch strings.ToUpper(verb) {
		case "EHLO":
			if tp.PrintfLine("250-sink greets %s", arg) != nil || !reply(250, "8BITMIME") {
				return
			}
		case "HELO":
			reply(250, "sink")
		case "MAIL":
			m = Mail{From: addrOf(arg)}
			reply(250, "ok")
		case "RCPT":
			m.To = append(m.To, addrOf(arg))
			reply(250, "ok")
		case "DATA":
			if !reply(354, "end with <CRLF>.<CRLF>") {
				return
			}
			b, err := io.ReadAll(tp.DotReader())
			if err != nil {
				return
			}
			m.Data = string(b)
			s.Mails <- m
			m = Mail{}
			reply(250, "queued")
		case "RSET":
			m = Mail{}
			reply(250, "ok")
		case "NOOP":
			reply(250, "ok")
		case "QUIT":
			reply(221, "bye")
			return
		default:
			reply(502, "not implemented")
		}
	}
}

// addrOf takes the address out of "FROM:<a@b> SIZE=..." or "TO:<a@b>".
func addrOf(arg string) string {
	if i := strings.IndexByte(arg, '<'); i >= 0 {
		if j := strings.IndexByte(arg[i:], '>'); j > 0 {
			return arg[i+1 : i+j]
		}
	}
	return arg
}

// Body returns the message's body (what follows the header's blank
// line), decoded when it is quoted-printable, with LF line ends.
func (m Mail) Body() string {
	_, body, _ := strings.Cut(strings.ReplaceAll(m.Data, "\r\n", "\n"), "\n\n")
	if strings.EqualFold(m.Header("Content-Transfer-Encoding"), "quoted-printable") {
		if b, err := io.ReadAll(quotedprintable.NewReader(strings.NewReader(body))); err == nil {
			body = string(b)
		}
	}
	return strings.ReplaceAll(body, "\r\n", "\n")
}

// Header returns a header's value from the message.
func (m Mail) Header(name string) string {
	r := textproto.NewReader(bufio.NewReader(strings.NewReader(m.Data)))
	h, _ := r.ReadMIMEHeader()
	return h.Get(name)
}
