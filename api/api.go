package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ax-scheduler/ax/model"
)

// DefaultMaxBody is the largest request body accepted (1 MiB).
const DefaultMaxBody = 1 << 20

// Header names shared with the client package.
const (
	headerIdempotencyKey = "Idempotency-Key"
	headerActor          = "X-AX-Actor"
)

// Config configures the HTTP handler.
type Config struct {
	Backend Backend
	// Auth verifies credentials; every route but /healthz and /livez needs
	// a principal with the route's role (see Routes). Default: everyone is
	// an admin (no authentication).
	Auth Authenticator
	// MaxBody bounds request bodies; default DefaultMaxBody.
	MaxBody int64
	// Metrics serves GET /metrics when set.
	Metrics http.Handler
	Logger  hclog.Logger
	// MaxPayload bounds a submission's payload; default
	// model.DefaultMaxPayload (64 KiB).
	MaxPayload int
	// Now is the node's clock, used to refuse an "at" in the past;
	// default time.Now.
	Now func() time.Time
	// WallClock is the node's own clock, uncorrected, which GET
	// /v1/internal/time answers so that other members can measure its
	// offset from theirs; default Now.
	WallClock func() time.Time
	// CheckAction vets the action of a task being applied (PUT
	// /v1/tasks/{name}) once model validation has passed, before the
	// backend sees the task; its error is answered like the backend's
	// (an invalid_argument *model.Error is a 400 naming its field). The
	// assembler sets action.Check here, so that a template that parses but
	// cannot expand is refused at apply time: api itself depends on model
	// only. Default: no check beyond model.Task.Validate.
	CheckAction func(a *model.Action) error
}

// Server is the HTTP API.
type Server struct {
	cfg   Config
	b     Backend
	mux   *http.ServeMux
	log   hclog.Logger
	auth  Authenticator
	table []route
	polls pollCounter

	// keepalive is the interval of an event stream's keepalive comment,
	// logPoll how often a followed log is asked for new output, liveFlush
	// how long an event stream gathers events before a write.
	keepalive, logPoll, liveFlush time.Duration
}

// New returns the API handler.
func New(cfg Config) *Server {
	if cfg.MaxBody == 0 {
		cfg.MaxBody = DefaultMaxBody
	}
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	if cfg.MaxPayload == 0 {
		cfg.MaxPayload = model.DefaultMaxPayload
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.WallClock == nil {
		cfg.WallClock = cfg.Now
	}
	if cfg.CheckAction == nil {
		cfg.CheckAction = func(*model.Action) error { return nil }
	}
	if cfg.Auth == nil {
		cfg.Auth = openAuth{}
	}
	s := &Server{cfg: cfg, b: cfg.Backend, auth: cfg.Auth, mux: http.NewServeMux(), log: cfg.Logger.Named("api"),
		keepalive: defaultKeepalive, logPoll: defaultLogPoll, liveFlush: defaultLiveFlush}
	s.table = s.routes()
	for _, r := range s.table {
		s.mux.HandleFunc(r.pattern, s.guard(r.access, r.h))
	}
	s.mux.HandleFunc("/", s.noRoute)
	return s
}

// routes lists every endpoint with the access it needs. Roles include the
// ones below them (see model.Principal.Can); executor routes take an
// executor token (or an admin's).
func (s *Server) routes() []route {
	reader, operator, writer, admin, executor := model.RoleReader, model.RoleOperator, model.RoleWriter, model.RoleAdmin, model.RoleExecutor
	rs := []route{
		{"GET /healthz", AccessOpen, s.health},
		{"GET /livez", AccessOpen, s.live},
		{"GET /v1/openapi.json", AccessOpen, s.openAPI},
		{"PUT /v1/tasks/{name}", writer, s.putTask},
		{"GET /v1/tasks", reader, s.listTasks},
		{"GET /v1/tasks/{name}", reader, s.readTask(func(ctx contextT, n string) (any, error) { return s.b.GetTask(ctx, n) })},
		{"DELETE /v1/tasks/{name}", writer, s.taskWrite(func(ctx contextT, c Caller, n string) (*model.WriteResult, error) { return s.b.DeleteTask(ctx, c, n) })},
		{"POST /v1/tasks/{name}/pause", operator, s.taskWrite(func(ctx contextT, c Caller, n string) (*model.WriteResult, error) { return s.b.PauseTask(ctx, c, n) })},
		{"POST /v1/tasks/{name}/resume", operator, s.taskWrite(func(ctx contextT, c Caller, n string) (*model.WriteResult, error) { return s.b.ResumeTask(ctx, c, n) })},
		{"GET /v1/tasks/{name}/history", reader, s.readTask(func(ctx contextT, n string) (any, error) { return s.b.TaskHistory(ctx, n) })},
		{"GET /v1/tasks/{name}/events", reader, s.readTask(func(ctx contextT, n string) (any, error) { return s.b.TaskEvents(ctx, n) })},
		{"GET /v1/tasks/{name}/calendar", reader, s.taskIntRead("days", defaultCalendarDays, maxCalendarDays,
			func(ctx contextT, n string, days int) (any, error) { return s.b.TaskCalendar(ctx, n, days) })},
		{"GET /v1/tasks/{name}/fires", reader, s.taskIntRead("n", defaultFires, maxFires,
			func(ctx contextT, name string, n int) (any, error) { return s.b.TaskFires(ctx, name, n) })},
		{"GET /v1/tasks/{name}/counts", reader, s.taskCounts},
		{"POST /v1/tasks/{name}/trigger", operator, s.trigger},
		{"POST /v1/tasks/{name}/submit", operator, s.submit},
		{"POST /v1/tasks/{name}/backfill", operator, s.backfill},
		{"GET /v1/instances", reader, s.listInstances},
		{"GET /v1/instances/{id}", reader, s.getInstance},
		{"GET /v1/instances/{id}/log", reader, s.instanceLog},
		{"POST /v1/instances/{id}/approve", operator, s.decide("approve")},
		{"POST /v1/instances/{id}/reject", operator, s.decide("reject")},
		{"POST /v1/instances/{id}/cancel", operator, s.decide("cancel")},
		{"POST /v1/instances/{id}/terminate", operator, s.decide("terminate")},
		{"POST /v1/instances/{id}/approval", executor, s.requestApproval},
		{"POST /v1/executors/poll", executor, s.poll},
		{"POST /v1/executors/heartbeat", executor, s.heartbeat},
		{"POST /v1/attempts/{id}/complete", executor, s.complete},
		{"POST /v1/attempts/complete", executor, s.completeBatch},
		{"GET /v1/executors", reader, s.executors},
		{"GET /v1/events", reader, s.events},
		{"GET /v1/upcoming", reader, s.upcoming},
		{"GET /v1/overview", reader, s.overview},
		{"GET /v1/alerts", reader, s.listAlerts},
		{"GET /v1/silences", reader, s.listSilences},
		{"POST /v1/silences", operator, s.putSilence},
		{"DELETE /v1/silences/{id}", operator, s.deleteSilence},

		{"POST /v1/cluster/join", admin, s.join},
		{"GET /v1/cluster", reader, s.cluster},
		{"DELETE /v1/cluster/{node}", admin, s.removeNode},
		{"POST /v1/cluster/transfer", admin, s.transfer},

		{"GET /v1/acl/whoami", AccessAuthenticated, s.whoami},
		{"POST /v1/acl/bootstrap", admin, s.aclBootstrap},
		{"GET /v1/acl/tokens", admin, s.listTokens},
		{"POST /v1/acl/tokens", admin, s.createToken},
		{"DELETE /v1/acl/tokens/{name}", admin, s.revokeToken},
		{"PUT /v1/secrets/{name}", writer, s.putSecret},
		{"GET /v1/secrets", reader, s.listSecrets},
		{"DELETE /v1/secrets/{name}", writer, s.deleteSecret},
		{"PUT /v1/channels/{name}", writer, s.putChannel},
		{"GET /v1/channels", reader, s.listChannels},
		{"GET /v1/channels/{name}", reader, s.getChannel},
		{"DELETE /v1/channels/{name}", writer, s.deleteChannel},

		{"POST /v1/internal/apply", AccessMember, s.applyForwarded},
		{"GET /v1/internal/readindex", AccessMember, s.readIndex},
		{"GET /v1/internal/time", AccessMember, s.clockTime},
	}
	if s.cfg.Metrics != nil {
		rs = append(rs, route{"GET /metrics", reader, s.cfg.Metrics.ServeHTTP})
	}
	return rs
}

type route struct {
	pattern string
	access  string
	h       http.HandlerFunc
}

// Routes lists every endpoint of the API with the access it needs.
func (s *Server) Routes() []Route {
	out := make([]Route, len(s.table))
	for i, r := range s.table {
		out[i] = Route{Pattern: r.pattern, Access: r.access}
	}
	return out
}

func (s *Server) live(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// codeMethodNotAllowed is the error code of a 405 answer.
const codeMethodNotAllowed = "method_not_allowed"

// noRoute answers a request no route matches: 405 with an Allow header when
// the path exists for other methods, else 404. The catch-all "/" pattern
// would otherwise hide the mux's own 405.
func (s *Server) noRoute(w http.ResponseWriter, r *http.Request) {
	var allow []string
	for _, m := range []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodOptions} {
		if m == r.Method {
			continue
		}
		probe := r.WithContext(r.Context())
		probe.Method = m
		if _, p := s.mux.Handler(probe); p != "" && p != "/" {
			allow = append(allow, m)
		}
	}
	if len(allow) == 0 {
		if d, ok := unknownDecision(r); ok {
			writeError(w, model.FieldErrorf("action", "%q is not a decision on an instance: want approve, reject, cancel or terminate", d))
			return
		}
		writeError(w, &model.Error{Code: model.CodeNotFound, Message: "no such endpoint: " + r.Method + " " + r.URL.Path})
		return
	}
	w.Header().Set("Allow", strings.Join(allow, ", "))
	writeJSON(w, http.StatusMethodNotAllowed, model.ErrorBody{Error: &model.Error{
		Code:    codeMethodNotAllowed,
		Message: r.Method + " is not allowed on " + r.URL.Path + "; use " + strings.Join(allow, ", "),
	}})
}

// unknownDecision returns the last element of POST
// /v1/instances/{id}/{decision} when no route takes it: a decision the
// API does not know, refused as a bad field rather than a missing page.
func unknownDecision(r *http.Request) (string, bool) {
	rest, ok := strings.CutPrefix(r.URL.Path, "/v1/instances/")
	if !ok || r.Method != http.MethodPost {
		return "", false
	}
	id, d, ok := strings.Cut(rest, "/")
	if !ok || id == "" || d == "" || strings.Contains(d, "/") {
		return "", false
	}
	return d, true
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, s.cfg.MaxBody)
	s.mux.ServeHTTP(w, markForwarded(r))
}

// consistent reports whether a read asks for ?consistent=true.
func consistent(r *http.Request) (bool, error) {
	c := r.URL.Query().Get("consistent")
	if c == "" {
		return false, nil
	}
	on, err := strconv.ParseBool(c)
	if err != nil {
		return false, model.FieldErrorf("consistent", "must be true or false, got %q", c)
	}
	return on, nil
}

// barrier honours ?consistent=true by waiting for a read barrier. Handlers
// call it after validating the rest of the request, so bad input reaches
// no backend. It reports false after writing an error.
func (s *Server) barrier(w http.ResponseWriter, r *http.Request) bool {
	on, err := consistent(r)
	if err == nil && on {
		err = s.b.ReadBarrier(r.Context())
	}
	if err != nil {
		writeError(w, err)
		return false
	}
	return true
}

func caller(r *http.Request) (Caller, error) {
	c := Caller{RequestID: r.Header.Get(headerIdempotencyKey)}
	if len(c.RequestID) > 128 {
		return c, model.FieldErrorf(headerIdempotencyKey, "longer than 128 bytes")
	}
	onBehalf := r.Header.Get(headerActor)
	if len(onBehalf) > 128 {
		return c, model.FieldErrorf(headerActor, "longer than 128 bytes")
	}
	c.Actor = actorOf(PrincipalFrom(r.Context()), onBehalf)
	return c, nil
}

var errTrailing = errors.New("trailing data")

// decode reads one JSON value into v, rejecting unknown fields. An unknown
// field is reported with its full path ("trigger.bogus"), which
// encoding/json leaves out of its error.
func decode(r *http.Request, v any) error {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return decodeError(err)
	}
	return decodeBytes(body, v)
}

// decodeBytes is decode for a body already read.
func decodeBytes(body []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		me := decodeError(err)
		if isUnknownField(err) {
			if p := unknownFieldPath(body, reflect.TypeOf(v)); p != "" {
				me.Field = p
				me.Message = "unknown field " + strconv.Quote(p)
			}
		}
		return me
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		if err != nil {
			return decodeError(err)
		}
		return decodeError(errTrailing)
	}
	return nil
}

func pathName(r *http.Request, key string) (string, error) {
	n := r.PathValue(key)
	if err := model.ValidateName(key, n); err != nil {
		return "", err
	}
	return n, nil
}

func (s *Server) putTask(w http.ResponseWriter, r *http.Request) {
	name, c, ok := writeTarget(w, r, "name")
	if !ok {
		return
	}
	var t model.Task
	if err := decode(r, &t); err != nil {
		writeError(w, err)
		return
	}
	if t.Name == "" {
		t.Name = name
	}
	if t.Name != name {
		writeError(w, model.FieldErrorf("name", "body name %q does not match the URL's %q", t.Name, name))
		return
	}
	err := t.Validate()
	if err == nil {
		err = s.cfg.CheckAction(&t.Action)
	}
	if err != nil {
		writeError(w, err)
		return
	}
	reply(w)(s.b.PutTask(r.Context(), c, &t))
}

func (s *Server) taskWrite(fn func(ctx contextT, c Caller, name string) (*model.WriteResult, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		name, c, ok := writeTarget(w, r, "name")
		if !ok {
			return
		}
		reply(w)(fn(r.Context(), c, name))
	}
}

// readTask serves a read of one task: a valid name, the read barrier when
// ?consistent=true, then fn's answer.
func (s *Server) readTask(fn func(ctx contextT, name string) (any, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		name, err := pathName(r, "name")
		if err != nil {
			writeError(w, err)
			return
		}
		if !s.barrier(w, r) {
			return
		}
		v, err := fn(r.Context(), name)
		reply(w)(redactFor(PrincipalFrom(r.Context()), v), err)
	}
}

func (s *Server) listTasks(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := model.TaskFilter{Cursor: q.Get("cursor")}
	for _, l := range q["label"] {
		k, v, ok := strings.Cut(l, "=")
		if !ok || k == "" {
			writeError(w, model.FieldErrorf("label", "want key=value, got %q", l))
			return
		}
		if f.Labels == nil {
			f.Labels = map[string]string{}
		}
		f.Labels[k] = v
	}
	if p := q.Get("paused"); p != "" {
		b, err := strconv.ParseBool(p)
		if err != nil {
			writeError(w, model.FieldErrorf("paused", "must be true or false, got %q", p))
			return
		}
		f.Paused = &b
	}
	summary, runs, err := summaryParams(q)
	if err != nil {
		writeError(w, err)
		return
	}
	s.list(w, r, &f.Limit, func() (any, error) {
		var l any
		var err error
		if summary {
			l, err = s.b.TaskSummaries(r.Context(), f, runs)
		} else {
			l, err = s.b.ListTasks(r.Context(), f)
		}
		return redactFor(PrincipalFrom(r.Context()), l), err
	})
}

// list ends a list handler: the page limit from the query into *limit, a
// consistent read if asked, then the answer of fetch.
func (s *Server) list(w http.ResponseWriter, r *http.Request, limit *int, fetch func() (any, error)) {
	var err error
	if *limit, err = parseLimit(r.URL.Query()); err != nil {
		writeError(w, err)
		return
	}
	if !s.barrier(w, r) {
		return
	}
	reply(w)(fetch())
}

// health answers the node's health: 200, or 503 with the same JSON when
// the node is not healthy (its Problem says why).
func (s *Server) health(w http.ResponseWriter, r *http.Request) {
	h := s.b.Health(r.Context())
	code := http.StatusOK
	if h.Problem != "" {
		code = http.StatusServiceUnavailable
	}
	writeJSON(w, code, h)
}

func (s *Server) join(w http.ResponseWriter, r *http.Request) {
	var req model.JoinRequest
	if err := decode(r, &req); err != nil {
		writeError(w, err)
		return
	}
	if err := model.ValidateName("id", req.ID); err != nil {
		writeError(w, err)
		return
	}
	for field, addr := range map[string]string{"raftAddr": req.RaftAddr, "httpAddr": req.HTTPAddr} {
		if err := validHostPort(field, addr); err != nil {
			writeError(w, err)
			return
		}
	}
	if err := s.b.Join(r.Context(), req); err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, struct{}{})
}

func (s *Server) cluster(w http.ResponseWriter, r *http.Request) {
	reply(w)(s.b.Cluster(r.Context()))
}

func (s *Server) removeNode(w http.ResponseWriter, r *http.Request) {
	id, err := pathName(r, "node")
	if err != nil {
		writeError(w, err)
		return
	}
	if err := s.b.RemoveNode(r.Context(), id); err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, struct{}{})
}

func (s *Server) transfer(w http.ResponseWriter, r *http.Request) {
	var req model.TransferRequest
	if r.ContentLength != 0 {
		if err := decode(r, &req); err != nil {
			writeError(w, err)
			return
		}
	}
	if req.ID != "" {
		if err := model.ValidateName("id", req.ID); err != nil {
			writeError(w, err)
			return
		}
	}
	if err := s.b.Transfer(r.Context(), req.ID); err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, struct{}{})
}

func (s *Server) applyForwarded(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		writeError(w, decodeError(err))
		return
	}
	out, err := s.b.ApplyForwarded(r.Context(), body)
	if err != nil {
		writeError(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(out)
}

func (s *Server) readIndex(w http.ResponseWriter, r *http.Request) {
	idx, err := s.b.ReadIndex(r.Context())
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]uint64{"index": idx})
}

// clockTime answers a member's reading of this node's wall clock: the
// cluster's members compare clocks with it (NTP style, from the round
// trip).
func (s *Server) clockTime(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, model.ClockReading{UnixMs: s.cfg.WallClock().UnixMilli()})
}
