package client

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/ax-scheduler/ax/model"
)

// Headers used by the API.
const (
	HeaderIdempotencyKey = "Idempotency-Key"
	HeaderActor          = "X-AX-Actor"
	HeaderForwarded      = "X-AX-Forwarded"
)

// Config configures a Client.
type Config struct {
	// Addrs are server HTTP addresses, "host:port" or full URLs.
	Addrs []string
	// TLS, when set, is the default HTTP client's TLS configuration (see
	// tlsutil.NewClientConfig), and "host:port" addresses mean https.
	TLS *tls.Config
	// Token is sent as a bearer token when set.
	Token string
	// Actor names who makes changes (recorded in task history).
	Actor string
	// HTTPClient defaults to a client with sensible pooling and no overall
	// timeout (deadlines come from contexts).
	HTTPClient *http.Client
	// RetryFor bounds how long a call retries unreachable or leaderless
	// servers when its context has no deadline. Default 15s.
	RetryFor time.Duration
	// Header, when set, adds headers to every request made with ctx (the
	// agent uses it to authenticate to its peers).
	Header func(ctx context.Context) http.Header
	// Once sends every request once, to the first address: the caller
	// retries itself (the agent, which resolves the leader again before
	// each try).
	Once bool
	// DialTimeout bounds making a connection (default 30s, Go's); a
	// server that cannot be reached within it is given up (ErrNotSent).
	DialTimeout time.Duration
	// StaleReads makes every read (GET /v1/...) of this client a stale
	// read (?stale=true): served from the state of the node it reaches,
	// without asking the leader, so it may miss recent writes but is
	// answered even when the cluster has no leader. By default reads are
	// linearizable: a read reflects every write acknowledged before it
	// started, through whichever node. A call's Consistent or Stale
	// option overrides it.
	StaleReads bool
	// FailFast tries each address at most once per call, for a caller
	// with a person waiting (the CLI): an address that cannot be reached,
	// or that answers 503 after its own wait for a leader, is left for
	// the next one, and the call fails once every address has been tried,
	// naming each. By default a call retries them until RetryFor.
	FailFast bool
}

// Client talks to an ax cluster.
type Client struct {
	cfg   Config
	bases []string
	hc    *http.Client
	next  atomic.Uint32
}

// New returns a Client for cfg.
func New(cfg Config) *Client {
	if len(cfg.Addrs) == 0 {
		cfg.Addrs = []string{"127.0.0.1:7070"}
	}
	if cfg.RetryFor == 0 {
		cfg.RetryFor = 15 * time.Second
	}
	hc := cfg.HTTPClient
	if hc == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConnsPerHost = 256
		tr.MaxIdleConns = 1024
		tr.TLSClientConfig = cfg.TLS
		if cfg.DialTimeout > 0 {
			tr.DialContext = (&net.Dialer{Timeout: cfg.DialTimeout, KeepAlive: 30 * time.Second}).DialContext
		}
		hc = &http.Client{Transport: tr}
	}
	c := &Client{cfg: cfg, hc: hc}
	for _, a := range cfg.Addrs {
		for _, p := range strings.Split(a, ",") {
			if p = strings.TrimSpace(p); p != "" {
				c.bases = append(c.bases, baseURL(p, cfg.TLS != nil))
			}
		}
	}
	return c
}

// BaseURL turns "host:port" into "http://host:port"; URLs pass through.
func BaseURL(addr string) string {
	if strings.HasPrefix(addr, "http://") || strings.HasPrefix(addr, "https://") {
		return strings.TrimRight(addr, "/")
	}
	return "http://" + addr
}

// NewRequestID returns a unique id suitable as an Idempotency-Key: the
// current time in milliseconds then 64 random bits, so ids sort by time
// and the server's deduplication index grows at its end.
func NewRequestID() string {
	var b [14]byte
	ms := uint64(time.Now().UnixMilli())
	for i := 5; i >= 0; i-- {
		b[i] = byte(ms)
		ms >>= 8
	}
	_, _ = rand.Read(b[6:])
	return hex.EncodeToString(b[:])
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
func (c *Client) Do(ctx context.Context, req Request, out any) error {
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
		ctx, cancel = context.WithTimeout(ctx, c.cfg.RetryFor)
		defer cancel()
	}
	start := int(c.next.Load())
	var lastErr error
	var failed []error // FailFast: each address's failure
	for attempt := 0; ; attempt++ {
		base := c.bases[(start+attempt)%len(c.bases)]
		retry, err := c.try(ctx, base, req, body, hdr, out)
		if err == nil {
			if attempt > 0 {
				c.next.Store(uint32((start + attempt) % len(c.bases)))
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
		if !retry || req.NoRetry || c.cfg.Once || (req.Unrepeatable && !errors.Is(err, ErrNotSent)) {
			return err
		}
		if c.cfg.FailFast {
			failed = append(failed, err)
			if len(failed) == len(c.bases) {
				return everyAddressFailed(failed)
			}
			if ctx.Err() != nil {
				return err
			}
			continue
		}
		// Back off a little once every address has been tried.
		wait := time.Duration(0)
		if (attempt+1)%len(c.bases) == 0 {
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
func (c *Client) try(ctx context.Context, base string, req Request, body []byte, hdr http.Header, out any) (retry bool, err error) {
	if req.Watch > 0 {
		return c.watched(ctx, base, req, body, hdr, out)
	}
	if req.TryTimeout <= 0 {
		return c.once(ctx, base, req, body, hdr, out)
	}
	tctx, cancel := context.WithTimeout(ctx, req.TryTimeout)
	defer cancel()
	retry, err = c.once(tctx, base, req, body, hdr, out)
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
func (c *Client) watched(ctx context.Context, base string, req Request, body []byte, hdr http.Header, out any) (retry bool, err error) {
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
			if err := c.probe(wctx, base, 2*req.Watch); err != nil && wctx.Err() == nil && !answering.Load() {
				lost.Store(true)
				cancel()
				return
			}
		}
	}()
	retry, err = c.once(rctx, base, req, body, hdr, out)
	cancel()
	<-probed
	if err != nil && lost.Load() && ctx.Err() == nil {
		return true, &model.Error{Code: model.CodeUnavailable,
			Message: fmt.Sprintf("%s %s%s: the server stopped answering (GET /livez got no answer within %s)", req.Method, base, req.Path, 2*req.Watch)}
	}
	return retry, err
}

// probe asks base's /livez, bounded by within.
func (c *Client) probe(ctx context.Context, base string, within time.Duration) error {
	pctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	hr, err := http.NewRequestWithContext(pctx, http.MethodGet, base+"/livez", nil)
	if err != nil {
		return err
	}
	resp, err := c.hc.Do(hr)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
	resp.Body.Close()
	return nil
}

// once sends one try; retry says whether another address may succeed.
func (c *Client) once(ctx context.Context, base string, req Request, body []byte, hdr http.Header, out any) (retry bool, err error) {
	hr, err := c.newRequest(ctx, base, req, body, hdr)
	if err != nil {
		return false, err
	}
	u := hr.URL.String()
	resp, err := c.hc.Do(hr)
	if err != nil {
		return c.sendFailed(ctx, req, hdr, u, err)
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
func (c *Client) newRequest(ctx context.Context, base string, req Request, body []byte, hdr http.Header) (*http.Request, error) {
	u := base + req.Path
	q := req.Query
	if c.cfg.StaleReads && req.Method == http.MethodGet && strings.HasPrefix(req.Path, "/v1/") &&
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
	if c.cfg.Token != "" {
		hr.Header.Set("Authorization", "Bearer "+c.cfg.Token)
	}
	if c.cfg.Actor != "" && hr.Header.Get(HeaderActor) == "" {
		hr.Header.Set(HeaderActor, c.cfg.Actor)
	}
	if c.cfg.Header != nil {
		for k, v := range c.cfg.Header(ctx) {
			hr.Header[k] = v
		}
	}
	return hr, nil
}

// sendFailed words a try that got no answer (the URL once, then what
// went wrong) and says whether another address may succeed.
func (c *Client) sendFailed(ctx context.Context, req Request, hdr http.Header, u string, err error) (retry bool, _ error) {
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
			what = "no connection within " + c.dialTimeout().String()
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
func (c *Client) dialTimeout() time.Duration {
	if c.cfg.DialTimeout > 0 {
		return c.cfg.DialTimeout
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

func taskPath(name string, suffix string) string {
	return "/v1/tasks/" + url.PathEscape(name) + suffix
}

// PutTask creates or updates a task. Paused is operational state, as for
// ax task apply: Paused true pauses the task (or creates it paused), and
// false leaves it as it is (a new task starts active), so re-applying a
// definition never resumes a task an operator paused. ResumeTask resumes.
// (A node older than protocol 5 takes a missing paused as false.)
func (c *Client) PutTask(ctx context.Context, t *model.Task) (*model.WriteResult, error) {
	var r model.WriteResult
	return &r, c.Do(ctx, Request{Method: http.MethodPut, Path: taskPath(t.Name, ""), Body: newPutTaskBody(t)}, &r)
}

// putTaskBody is a task's definition with paused sent only when true. Its
// Paused hides model.Task's (encoding/json takes the shallower field).
type putTaskBody struct {
	*model.Task
	Paused *bool `json:"paused,omitempty"`
}

func newPutTaskBody(t *model.Task) putTaskBody {
	b := putTaskBody{Task: t}
	if t.Paused {
		b.Paused = &t.Paused
	}
	return b
}

// ReadOption changes how a read is served.
type ReadOption func(url.Values)

// Consistent asks for a linearizable read: it reflects every write
// acknowledged before it started, whichever node serves it. That is the
// default; the option overrides Config.StaleReads for one call.
func Consistent() ReadOption { return func(q url.Values) { q.Set("consistent", "true") } }

// Stale makes a read stale: the node that serves it answers from its own
// state without asking the leader (?stale=true). It may miss writes
// acknowledged just before, and it is answered even when the cluster has
// no leader (a linearizable read is then a 503).
func Stale() ReadOption { return func(q url.Values) { q.Set("stale", "true") } }

func query(opts []ReadOption) url.Values {
	q := url.Values{}
	for _, o := range opts {
		o(q)
	}
	return q
}

// GetTask returns a task with its next fire times.
func (c *Client) GetTask(ctx context.Context, name string, opts ...ReadOption) (*model.Task, error) {
	var t model.Task
	return &t, c.Do(ctx, Request{Method: http.MethodGet, Path: taskPath(name, ""), Query: query(opts)}, &t)
}

// ListTasks returns one page of tasks.
func (c *Client) ListTasks(ctx context.Context, f model.TaskFilter, opts ...ReadOption) (*model.TaskList, error) {
	q := query(opts)
	for k, v := range f.Labels {
		q.Add("label", k+"="+v)
	}
	if f.Paused != nil {
		q.Set("paused", strconv.FormatBool(*f.Paused))
	}
	if f.Cursor != "" {
		q.Set("cursor", f.Cursor)
	}
	if f.Limit > 0 {
		q.Set("limit", strconv.Itoa(f.Limit))
	}
	var l model.TaskList
	return &l, c.Do(ctx, Request{Method: http.MethodGet, Path: "/v1/tasks", Query: q}, &l)
}

// DeleteTask deletes a task.
func (c *Client) DeleteTask(ctx context.Context, name string) (*model.WriteResult, error) {
	var r model.WriteResult
	return &r, c.Do(ctx, Request{Method: http.MethodDelete, Path: taskPath(name, "")}, &r)
}

// PauseTask stops a task from firing.
func (c *Client) PauseTask(ctx context.Context, name string) (*model.WriteResult, error) {
	var r model.WriteResult
	return &r, c.Do(ctx, Request{Method: http.MethodPost, Path: taskPath(name, "/pause")}, &r)
}

// ResumeTask lets a paused task fire again.
func (c *Client) ResumeTask(ctx context.Context, name string) (*model.WriteResult, error) {
	var r model.WriteResult
	return &r, c.Do(ctx, Request{Method: http.MethodPost, Path: taskPath(name, "/resume")}, &r)
}

// TaskHistory returns every version of a task.
func (c *Client) TaskHistory(ctx context.Context, name string, opts ...ReadOption) (*model.TaskHistory, error) {
	var h model.TaskHistory
	return &h, c.Do(ctx, Request{Method: http.MethodGet, Path: taskPath(name, "/history"), Query: query(opts)}, &h)
}

// Join asks the cluster to add a node as a voter.
func (c *Client) Join(ctx context.Context, req model.JoinRequest) error {
	return c.Do(ctx, Request{Method: http.MethodPost, Path: "/v1/cluster/join", Body: req}, nil)
}

// MemberKey asks a member for the cluster's member key, with which a node
// without TLS authenticates its Raft connections (a node about to join
// asks for it; it needs the credentials of a join).
func (c *Client) MemberKey(ctx context.Context) (*model.MemberKey, error) {
	var k model.MemberKey
	return &k, c.Do(ctx, Request{Method: http.MethodPost, Path: "/v1/cluster/member-key"}, &k)
}

// Cluster returns the members and the leader.
func (c *Client) Cluster(ctx context.Context, opts ...ReadOption) (*model.ClusterStatus, error) {
	var s model.ClusterStatus
	return &s, c.Do(ctx, Request{Method: http.MethodGet, Path: "/v1/cluster", Query: query(opts)}, &s)
}

// RemoveNode removes a member from the cluster.
func (c *Client) RemoveNode(ctx context.Context, id string) error {
	return c.Do(ctx, Request{Method: http.MethodDelete, Path: "/v1/cluster/" + url.PathEscape(id), Unrepeatable: true}, nil)
}

// Transfer moves leadership to node id (any up-to-date follower if empty).
func (c *Client) Transfer(ctx context.Context, id string) error {
	// A transfer repeated after it took effect would move leadership
	// again (each new leader would pass it on).
	return c.Do(ctx, Request{Method: http.MethodPost, Path: "/v1/cluster/transfer", Body: model.TransferRequest{ID: id}, Unrepeatable: true}, nil)
}

// Health returns the answering node's health. It does not fail over: it
// asks the first address only. A node that is not healthy answers 503
// with its health, whose Problem says why: Health then returns both the
// health and an unavailable error.
func (c *Client) Health(ctx context.Context) (*model.Health, error) {
	var h model.Health
	err := c.Do(ctx, Request{Method: http.MethodGet, Path: "/healthz", NoRetry: true, Also503: true}, &h)
	if err != nil && h.Node != "" && h.Problem != "" {
		err = &model.Error{Code: model.CodeUnavailable, Message: "node " + h.Node + " is not healthy: " + h.Problem}
	}
	return &h, err
}

// Submit creates one delayed instance of a task.
func (c *Client) Submit(ctx context.Context, task string, req model.SubmitRequest) (*model.Submitted, error) {
	var r model.SubmitResult
	if err := c.Do(ctx, Request{Method: http.MethodPost, Path: taskPath(task, "/submit"), Body: req}, &r); err != nil {
		return nil, err
	}
	if len(r.Instances) != 1 {
		return nil, fmt.Errorf("client: submit answered %d instances, want 1", len(r.Instances))
	}
	return &r.Instances[0], nil
}

// SubmitBatch creates up to model.MaxSubmitBatch delayed instances in one
// request (one Raft entry).
func (c *Client) SubmitBatch(ctx context.Context, task string, reqs []model.SubmitRequest) (*model.SubmitResult, error) {
	var r model.SubmitResult
	return &r, c.Do(ctx, Request{Method: http.MethodPost, Path: taskPath(task, "/submit"), Body: reqs}, &r)
}

// Trigger runs a task now.
func (c *Client) Trigger(ctx context.Context, task string, req model.TriggerRequest) (*model.Submitted, error) {
	var r model.Submitted
	return &r, c.Do(ctx, Request{Method: http.MethodPost, Path: taskPath(task, "/trigger"), Body: req}, &r)
}

// TaskEvents returns a task's events (misfires...).
func (c *Client) TaskEvents(ctx context.Context, task string, opts ...ReadOption) (*model.TaskEvents, error) {
	var r model.TaskEvents
	return &r, c.Do(ctx, Request{Method: http.MethodGet, Path: taskPath(task, "/events"), Query: query(opts)}, &r)
}

// GetInstance returns an instance with its events.
func (c *Client) GetInstance(ctx context.Context, id string, opts ...ReadOption) (*model.Instance, error) {
	var r model.Instance
	return &r, c.Do(ctx, Request{Method: http.MethodGet, Path: "/v1/instances/" + url.PathEscape(id), Query: query(opts)}, &r)
}

// ListInstances returns one page of instances, newest first.
func (c *Client) ListInstances(ctx context.Context, f model.InstanceFilter, opts ...ReadOption) (*model.InstanceList, error) {
	q := query(opts)
	if f.Task != "" {
		q.Set("task", f.Task)
	}
	if f.State != "" {
		q.Set("state", f.State)
	}
	if !f.Since.IsZero() {
		q.Set("since", f.Since.UTC().Format(model.TimeLayout))
	}
	if f.Cursor != "" {
		q.Set("cursor", f.Cursor)
	}
	if f.Limit > 0 {
		q.Set("limit", strconv.Itoa(f.Limit))
	}
	var r model.InstanceList
	return &r, c.Do(ctx, Request{Method: http.MethodGet, Path: "/v1/instances", Query: q}, &r)
}

// Decide applies an operator's decision to instance id with comment
// (recorded in its events); it answers the instance's new state. A
// decision the server does not know is refused with a 400 naming the
// field "action".
func (c *Client) Decide(ctx context.Context, id string, d Decision, comment string) (string, error) {
	if !d.wellFormed() {
		return "", model.FieldErrorf("action", "%q is not a decision: want %s, %s, %s or %s", string(d), Approve, Reject, Cancel, Terminate)
	}
	var r struct {
		State string `json:"state"`
	}
	err := c.Do(ctx, Request{Method: http.MethodPost, Path: "/v1/instances/" + url.PathEscape(id) + "/" + string(d), Body: model.Decision{Comment: comment}}, &r)
	return r.State, err
}

// InstanceLog returns the latest attempt's output from offset on.
func (c *Client) InstanceLog(ctx context.Context, id string, offset int64, opts ...ReadOption) (*model.InstanceLog, error) {
	var r model.InstanceLog
	q := query(opts)
	if offset > 0 {
		q.Set("offset", strconv.FormatInt(offset, 10))
	}
	return &r, c.Do(ctx, Request{Method: http.MethodGet, Path: "/v1/instances/" + url.PathEscape(id) + "/log", Query: q}, &r)
}

// Backfill creates one instance per fire time of a task in [from, to]
// that has none yet.
func (c *Client) Backfill(ctx context.Context, task string, req model.BackfillRequest) (*model.BackfillResult, error) {
	var r model.BackfillResult
	return &r, c.Do(ctx, Request{Method: http.MethodPost, Path: taskPath(task, "/backfill"), Body: req}, &r)
}
