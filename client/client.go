package client

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/model/member"
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

// Client talks to an ax cluster: each method is one API call, sent by
// its transport (Do and Stream).
type Client struct {
	transport
	alertCalls
	calendarCalls
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
	c := &Client{transport: transport{cfg: cfg, hc: hc}}
	c.alertCalls = alertCalls{&c.transport}
	c.calendarCalls = calendarCalls{&c.transport}
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

// PromoteRollout makes the canary of a task's rollout in progress the
// task.
func (c *Client) PromoteRollout(ctx context.Context, name string) (*model.WriteResult, error) {
	var r model.WriteResult
	return &r, c.Do(ctx, Request{Method: http.MethodPost, Path: taskPath(name, "/promote")}, &r)
}

// AbortRollout ends a task's rollout in progress, keeping its stable
// version.
func (c *Client) AbortRollout(ctx context.Context, name string) (*model.WriteResult, error) {
	var r model.WriteResult
	return &r, c.Do(ctx, Request{Method: http.MethodPost, Path: taskPath(name, "/abort")}, &r)
}

// Rollout returns a task's latest canary rollout.
func (c *Client) Rollout(ctx context.Context, name string, opts ...ReadOption) (*model.Rollout, error) {
	var r model.Rollout
	return &r, c.Do(ctx, Request{Method: http.MethodGet, Path: taskPath(name, "/rollout"), Query: query(opts)}, &r)
}

// TaskHistory returns every version of a task.
func (c *Client) TaskHistory(ctx context.Context, name string, opts ...ReadOption) (*model.TaskHistory, error) {
	var h model.TaskHistory
	return &h, c.Do(ctx, Request{Method: http.MethodGet, Path: taskPath(name, "/history"), Query: query(opts)}, &h)
}

// Join asks the cluster to add a node as a voter.
func (c *Client) Join(ctx context.Context, req member.JoinRequest) error {
	return c.Do(ctx, Request{Method: http.MethodPost, Path: "/v1/cluster/join", Body: req}, nil)
}

// MemberKey asks a member for the cluster's member key, with which a node
// without TLS authenticates its Raft connections (a node about to join
// asks for it; it needs the credentials of a join).
func (c *Client) MemberKey(ctx context.Context) (*member.MemberKey, error) {
	var k member.MemberKey
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
	return c.Do(ctx, Request{Method: http.MethodPost, Path: "/v1/cluster/transfer", Body: member.TransferRequest{ID: id}, Unrepeatable: true}, nil)
}

// Health returns the answering node's health. It does not fail over: it
// asks the first address only. A node that is not healthy answers 503
// with its health, whose Problem says why: Health then returns both the
// health and an unavailable error.
func (c *Client) Health(ctx context.Context) (*member.Health, error) {
	var h member.Health
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

// Shards returns a sharded instance's shards, in order (policy.shards,
// broadcast).
func (c *Client) Shards(ctx context.Context, id string, opts ...ReadOption) (*model.ShardList, error) {
	var r model.ShardList
	return &r, c.Do(ctx, Request{Method: http.MethodGet, Path: "/v1/instances/" + url.PathEscape(id) + "/shards", Query: query(opts)}, &r)
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

// InstanceResult returns the result the instance's successful attempt
// published; a *model.Error with code not_found when there is none.
func (c *Client) InstanceResult(ctx context.Context, id string, opts ...ReadOption) (*model.InstanceResult, error) {
	var r model.InstanceResult
	return &r, c.Do(ctx, Request{Method: http.MethodGet, Path: "/v1/instances/" + url.PathEscape(id) + "/result", Query: query(opts)}, &r)
}

// Backfill creates one instance per fire time of a task in [from, to]
// that has none yet.
func (c *Client) Backfill(ctx context.Context, task string, req model.BackfillRequest) (*model.BackfillResult, error) {
	var r model.BackfillResult
	return &r, c.Do(ctx, Request{Method: http.MethodPost, Path: taskPath(task, "/backfill"), Body: req}, &r)
}

// Rerun runs a finished instance again (the same instance, a new attempt
// chain) and answers its new state.
func (c *Client) Rerun(ctx context.Context, id string) (*model.Submitted, error) {
	var r model.Submitted
	return &r, c.Do(ctx, Request{Method: http.MethodPost, Path: "/v1/instances/" + url.PathEscape(id) + "/rerun"}, &r)
}

// RerunTask runs a task's finished instances of a fire-time range again,
// those in one of req.States (FAILED when empty).
func (c *Client) RerunTask(ctx context.Context, task string, req model.RerunRequest) (*model.RerunResult, error) {
	var r model.RerunResult
	return &r, c.Do(ctx, Request{Method: http.MethodPost, Path: taskPath(task, "/rerun"), Body: req}, &r)
}
