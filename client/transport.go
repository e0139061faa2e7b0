package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/ax-scheduler/ax/model"
)

// transport sends a Client's requests: it spreads them over the
// configured addresses, retries what is safe to retry until the call's
// deadline, fails over from servers that stop answering, and turns every
// failure into a *model.Error that says what happened.
type transport struct {
	cfg   Config
	bases []string
	hc    *http.Client
	next  atomic.Uint32 // the address that answered last
}

// Request describes one API call for Do.
type Request struct {
	Method string
	Path   string // e.g. "/v1/tasks/x"
	Query  url.Values
	Body   any // encoded as JSON unless it is []byte
	Header http.Header
	// Idempotent marks a request that can be retried on another server
	// after an unknown outcome. Writes are made idempotent with an
	// Idempotency-Key, which Do adds when Method is not GET.
	Idempotent bool
	// NoRetry sends the request once to the first address.
	NoRetry bool
	// FailFast is Config.FailFast for this call: each address is tried
	// at most once, so that the caller retries, and says so, itself (the
	// executor's polls).
	FailFast bool
	// Unrepeatable marks a write an Idempotency-Key does not protect (it
	// is not a replicated command, e.g. a leadership transfer): it is
	// tried again, on another address, only when it was not sent.
	Unrepeatable bool
	// Also503 decodes the body of a 503 answer into out too (Do still
	// returns the error): /healthz answers an unhealthy node's health so.
	Also503 bool
	// TryTimeout, when set, bounds each try: a server that has not
	// answered within it counts as unreachable and the next address is
	// tried (the executor's heartbeats fail over this way within a
	// fraction of their lease). The call as a whole is bounded by ctx.
	TryTimeout time.Duration
	// Watch, when set, checks the server while a try waits for its
	// answer: a GET /livez every Watch, each bounded by 2*Watch. A server
	// that does not answer one before the try's answer starts ends the
	// try as unreachable and the next address is tried. A long poll
	// parked on a node cut off from this process would otherwise wait out
	// its whole wait for an answer that cannot come.
	Watch time.Duration
}

// Do sends req, decoding a 2xx JSON answer into out (unless out is nil)
// and an error answer into a *model.Error.
func (t *transport) Do(ctx context.Context, req Request, out any) error {
	var body []byte
	switch b := req.Body.(type) {
	case nil:
	case []byte:
		body = b
	default:
		var err error
		if body, err = json.Marshal(b); err != nil {
			return fmt.Errorf("client: encode body: %w", err)
		}
	}
	hdr := http.Header{}
	for k, v := range req.Header {
		hdr[k] = v
	}
	if req.Method != http.MethodGet && hdr.Get(HeaderIdempotencyKey) == "" {
		hdr.Set(HeaderIdempotencyKey, NewRequestID())
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, t.cfg.RetryFor)
		defer cancel()
	}
	start := int(t.next.Load())
	var lastErr error
	var failed []error // FailFast: each address's failure
	for attempt := 0; ; attempt++ {
		base := t.bases[(start+attempt)%len(t.bases)]
		retry, err := t.try(ctx, base, req, body, hdr, out)
		if err == nil {
			if attempt > 0 {
				t.next.Store(uint32((start + attempt) % len(t.bases)))
			}
			return nil
		}
		var answer *model.Error
		if ctx.Err() != nil && errors.As(lastErr, &answer) && !errors.As(err, new(*model.Error)) &&
			(req.Method == http.MethodGet || errors.Is(err, ErrNotSent)) {
			// The call's time ran out during a retry that changed nothing
			// (a read, or a write never sent): the last server's answer
			// says more than the cut request. A write cut after it was
			// sent keeps its own error: its outcome is unknown.
			return fmt.Errorf("%w (gave up: %v)", lastErr, ctx.Err())
		}
		lastErr = err
		if !retry || req.NoRetry || t.cfg.Once || (req.Unrepeatable && !errors.Is(err, ErrNotSent)) {
			return err
		}
		if t.cfg.FailFast || req.FailFast {
			failed = append(failed, err)
			if len(failed) == len(t.bases) {
				return everyAddressFailed(failed)
			}
			if ctx.Err() != nil {
				return err
			}
			continue
		}
		// Back off a little once every address has been tried.
		wait := time.Duration(0)
		if (attempt+1)%len(t.bases) == 0 {
			wait = time.Duration(min(50*(attempt+1), 500)) * time.Millisecond
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (gave up: %v)", lastErr, ctx.Err())
		case <-time.After(wait):
		}
	}
}

// everyAddressFailed is the error of a FailFast call that no address
// served: the one failure, or one naming each address's. It is
// ErrNotSent when no address received the request.
func everyAddressFailed(errs []error) error {
	if len(errs) == 1 {
		return errs[0]
	}
	msgs := make([]string, len(errs))
	sent := false
	for i, e := range errs {
		msgs[i] = e.Error()
		sent = sent || !errors.Is(e, ErrNotSent)
	}
	me := &model.Error{Code: model.CodeUnavailable, Message: "every address failed: " + strings.Join(msgs, "; ")}
	if sent {
		return me
	}
	return notSentError{err: me, causes: errs}
}

// try is once bounded by req.TryTimeout: a try that runs out of it (while
// ctx has not) is an unreachable server, worth trying the next one.
func (t *transport) try(ctx context.Context, base string, req Request, body []byte, hdr http.Header, out any) (retry bool, err error) {
	if req.Watch > 0 {
		return t.watched(ctx, base, req, body, hdr, out)
	}
	if req.TryTimeout <= 0 {
		return t.once(ctx, base, req, body, hdr, out)
	}
	tctx, cancel := context.WithTimeout(ctx, req.TryTimeout)
	defer cancel()
	retry, err = t.once(tctx, base, req, body, hdr, out)
	if err != nil && ctx.Err() == nil && tctx.Err() != nil {
		// Like a broken connection: the Idempotency-Key makes the retry
		// of a write safe.
		return true, &model.Error{Code: model.CodeUnavailable,
			Message: fmt.Sprintf("%s %s%s: no answer within %s", req.Method, base, req.Path, req.TryTimeout)}
	}
	return retry, err
}

// watched is once while a probe checks every req.Watch that the server
// still answers (see Request.Watch).
func (t *transport) watched(ctx context.Context, base string, req Request, body []byte, hdr http.Header, out any) (retry bool, err error) {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var answering, lost atomic.Bool
	// Only the request's own answer counts (not the probes').
	rctx := httptrace.WithClientTrace(wctx, &httptrace.ClientTrace{GotFirstResponseByte: func() { answering.Store(true) }})
	probed := make(chan struct{})
	go func() {
		defer close(probed)
		tick := time.NewTicker(req.Watch)
		defer tick.Stop()
		for {
			select {
			case <-wctx.Done():
				return
			case <-tick.C:
			}
			if err := t.probe(wctx, base, 2*req.Watch); err != nil && wctx.Err() == nil && !answering.Load() {
				lost.Store(true)
				cancel()
				return
			}
		}
	}()
	retry, err = t.once(rctx, base, req, body, hdr, out)
	cancel()
	<-probed
	if err != nil && lost.Load() && ctx.Err() == nil {
		return true, &model.Error{Code: model.CodeUnavailable,
			Message: fmt.Sprintf("%s %s%s: the server stopped answering (GET /livez got no answer within %s)", req.Method, base, req.Path, 2*req.Watch)}
	}
	return retry, err
}

// probe asks base's /livez, bounded by within.
func (t *transport) probe(ctx context.Context, base string, within time.Duration) error {
	pctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	hr, err := http.NewRequestWithContext(pctx, http.MethodGet, base+"/livez", nil)
	if err != nil {
		return err
	}
	resp, err := t.hc.Do(hr)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
	resp.Body.Close()
	return nil
}

// once sends one try; retry says whether another address may succeed.
func (t *transport) once(ctx context.Context, base string, req Request, body []byte, hdr http.Header, out any) (retry bool, err error) {
	hr, err := t.newRequest(ctx, base, req, body, hdr)
	if err != nil {
		return false, err
	}
	u := hr.URL.String()
	resp, err := t.hc.Do(hr)
	if err != nil {
		return t.sendFailed(ctx, req, hdr, u, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return true, &model.Error{Code: model.CodeUnavailable, Message: fmt.Sprintf("%s %s: read: %v", req.Method, u, err)}
	}
	if resp.StatusCode/100 == 2 {
		if out == nil || len(data) == 0 {
			return false, nil
		}
		if raw, ok := out.(*[]byte); ok {
			*raw = data
			return false, nil
		}
		if err := json.Unmarshal(data, out); err != nil {
			return false, fmt.Errorf("client: decode %s %s: %w", req.Method, u, err)
		}
		return false, nil
	}
	if resp.StatusCode == http.StatusServiceUnavailable && req.Also503 && out != nil {
		_ = json.Unmarshal(data, out)
	}
	return resp.StatusCode == http.StatusServiceUnavailable, answerError(req.Method, u, resp.StatusCode, data)
}

// newRequest builds the HTTP request of one try of req on base.
func (t *transport) newRequest(ctx context.Context, base string, req Request, body []byte, hdr http.Header) (*http.Request, error) {
	u := base + req.Path
	q := req.Query
	if t.cfg.StaleReads && req.Method == http.MethodGet && strings.HasPrefix(req.Path, "/v1/") &&
		!strings.HasPrefix(req.Path, "/v1/internal/") && !q.Has("stale") && !q.Has("consistent") {
		q = url.Values{"stale": {"true"}}
		for k, v := range req.Query {
			q[k] = v
		}
	}
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	hr, err := http.NewRequestWithContext(ctx, req.Method, u, rd)
	if err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	for k, v := range hdr {
		hr.Header[k] = v
	}
	if body != nil && hr.Header.Get("Content-Type") == "" {
		hr.Header.Set("Content-Type", "application/json")
	}
	if t.cfg.Token != "" {
		hr.Header.Set("Authorization", "Bearer "+t.cfg.Token)
	}
	if t.cfg.Actor != "" && hr.Header.Get(HeaderActor) == "" {
		hr.Header.Set(HeaderActor, t.cfg.Actor)
	}
	if t.cfg.Header != nil {
		for k, v := range t.cfg.Header(ctx) {
			hr.Header[k] = v
		}
	}
	return hr, nil
}

// sendFailed words a try that got no answer (the URL once, then what
// went wrong) and says whether another address may succeed.
func (t *transport) sendFailed(ctx context.Context, req Request, hdr http.Header, u string, err error) (retry bool, _ error) {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err // its text repeats the method and URL
	}
	if ctx.Err() != nil || tlsFailure(err) {
		return false, fmt.Errorf("client: %s %s: %w", req.Method, u, err)
	}
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Op == "dial" {
		what := "cannot connect: " + dialCause(oe)
		if oe.Timeout() {
			what = "no connection within " + t.dialTimeout().String()
		}
		return true, notSentError{err: &model.Error{Code: model.CodeUnavailable, Message: fmt.Sprintf("%s %s: %s", req.Method, u, what)}, causes: []error{oe}}
	}
	var ne net.Error
	unreachable := errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
	me := &model.Error{Code: model.CodeUnavailable, Message: fmt.Sprintf("%s %s: %v", req.Method, u, err)}
	// A write whose connection broke may have committed; the
	// Idempotency-Key makes the retry safe.
	return unreachable || req.Method == http.MethodGet || req.Idempotent || hdr.Get(HeaderIdempotencyKey) != "", me
}

// dialCause is what a failed dial met, without the address its text
// repeats ("connection refused", "no such host").
func dialCause(oe *net.OpError) string {
	var se *os.SyscallError
	if errors.As(oe.Err, &se) {
		return se.Err.Error()
	}
	return oe.Err.Error()
}

// dialTimeout is the transport's bound on making a connection.
func (t *transport) dialTimeout() time.Duration {
	if t.cfg.DialTimeout > 0 {
		return t.cfg.DialTimeout
	}
	return 30 * time.Second
}

// answerError is the error of a non-2xx answer: the API's error object,
// or one made of the status and body.
func answerError(method, u string, status int, data []byte) *model.Error {
	var eb model.ErrorBody
	if json.Unmarshal(data, &eb) != nil || eb.Error == nil {
		eb.Error = &model.Error{Code: codeForStatus(status), Message: fmt.Sprintf("%s %s: HTTP %d: %s", method, u, status, strings.TrimSpace(string(data)))}
	}
	return eb.Error
}

// ErrNotSent matches (errors.Is) a failure to reach a server at all: no
// connection could be made, so the request never arrived and retrying it
// cannot apply it twice. Such errors are also *model.Error values with
// code unavailable.
var ErrNotSent = errors.New("client: request not sent")

// notSentError is a failure to connect; causes are the dial errors
// (*net.OpError, naming the address) behind it.
type notSentError struct {
	err    *model.Error
	causes []error
}

func (e notSentError) Error() string { return e.err.Error() }
func (e notSentError) Unwrap() []error {
	return append([]error{e.err, ErrNotSent}, e.causes...)
}

func codeForStatus(s int) string {
	switch s {
	case 400:
		return model.CodeInvalid
	case 401:
		return model.CodeUnauthorized
	case 403:
		return model.CodeForbidden
	case 404:
		return model.CodeNotFound
	case 409:
		return model.CodeConflict
	case 413:
		return model.CodeTooLarge
	case 429:
		return model.CodeTooMany
	case 503:
		return model.CodeUnavailable
	default:
		return model.CodeInternal
	}
}
