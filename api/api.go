package api

import (
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ax-scheduler/ax/api/pages"
	"github.com/ax-scheduler/ax/internal/strictjson"
	"github.com/ax-scheduler/ax/model"
)

// DefaultMaxBody is the largest request body accepted (1 MiB).
const DefaultMaxBody = 1 << 20

// Header names shared with the client package.
const (
	headerIdempotencyKey = "Idempotency-Key"
	headerActor          = "X-AX-Actor"
)

// Config configures the public API's handler.
type Config struct {
	// The backend by role: each handler file calls only the role it
	// serves (tasks.go the tasks, exec.go the executors, ...), and the
	// read routes call Barrier first. Every role is required.
	Barrier   BarrierBackend
	Tasks     TaskBackend
	Instances InstanceBackend
	Executors ExecutorBackend
	Cluster   ClusterBackend
	ACL       ACLBackend
	Secrets   SecretBackend
	Channels  ChannelBackend
	Shared    SharedBackend
	Live      LiveBackend
	Console   ConsoleBackend
	Alerts    AlertsBackend
	Pages     pages.Backend // optional: without it the audit answers 503
	// NodeID is this node's id (GET /v1/acl/whoami).
	NodeID string
	// Stopping is closed when the node shuts down: event streams and
	// followed logs end.
	Stopping <-chan struct{}
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
	// CheckAction vets the action of a task being applied (PUT
	// /v1/tasks/{name}) once model validation has passed, before the
	// backend sees the task; its error is answered like the backend's
	// (an invalid_argument *model.Error is a 400 naming its field). The
	// assembler sets action.Check here, so that a template that parses but
	// cannot expand is refused at apply time: api itself depends on model
	// only. Default: no check beyond model.Task.Validate.
	CheckAction func(a *model.Action) error
}

// Server is the public HTTP API: every route but the node-to-node ones
// (see Internal).
type Server struct {
	cfg   Config
	b     backends
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

// The route handlers by role: each type has the handlers of one role's
// routes (tasks.go, instances.go, ...), over the Server.
type (
	taskRoutes     struct{ *Server }
	instanceRoutes struct{ *Server }
	execRoutes     struct{ *Server }
	clusterRoutes  struct{ *Server }
	aclRoutes      struct{ *Server }
	alertRoutes    struct{ *Server }
	consoleRoutes  struct{ *Server }
)

// backends are Config's roles.
type backends struct {
	barrier   BarrierBackend
	tasks     TaskBackend
	instances InstanceBackend
	executors ExecutorBackend
	cluster   ClusterBackend
	acl       ACLBackend
	secrets   SecretBackend
	channels  ChannelBackend
	shared    SharedBackend
	live      LiveBackend
	console   ConsoleBackend
	alerts    AlertsBackend
	pages     pages.Backend
}

func byRole(c *Config) backends {
	return backends{barrier: c.Barrier, tasks: c.Tasks, instances: c.Instances, executors: c.Executors, cluster: c.Cluster,
		acl: c.ACL, secrets: c.Secrets, channels: c.Channels, shared: c.Shared, live: c.Live, console: c.Console, alerts: c.Alerts,
		pages: c.Pages}
}

// New returns the public API's handler.
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
	if cfg.CheckAction == nil {
		cfg.CheckAction = func(*model.Action) error { return nil }
	}
	if cfg.Auth == nil {
		cfg.Auth = openAuth{}
	}
	s := &Server{cfg: cfg, b: byRole(&cfg), auth: cfg.Auth, mux: http.NewServeMux(), log: cfg.Logger.Named("api"),
		keepalive: defaultKeepalive, logPoll: defaultLogPoll, liveFlush: defaultLiveFlush}
	s.table = s.routes()
	for _, r := range s.table {
		s.mux.HandleFunc(r.pattern, guard(s.auth, r.access, r.h))
	}
	s.mux.HandleFunc("/", noRoute(s.mux))
	return s
}

// routes lists every endpoint with the access it needs. Roles include the
// ones below them (see model.Principal.Can); executor routes take an
// executor token (or an admin's).
func (s *Server) routes() []route {
	taskR, instanceR, execR, clusterR := taskRoutes{s}, instanceRoutes{s}, execRoutes{s}, clusterRoutes{s}
	aclR, alertR, consoleR := aclRoutes{s}, alertRoutes{s}, consoleRoutes{s}
	calR, winR, poolR := calendarRoutes(s), windowRoutes(s), poolRoutes(s)
	reader, operator, writer, admin, executor := model.RoleReader, model.RoleOperator, model.RoleWriter, model.RoleAdmin, model.RoleExecutor
	rs := []route{
		{"GET /healthz", AccessOpen, clusterR.health},
		{"GET /livez", AccessOpen, s.live},
		{"GET /v1/openapi.json", AccessOpen, s.openAPI},
		{"PUT /v1/tasks/{name}", writer, taskR.putTask},
		{"GET /v1/tasks", reader, taskR.listTasks},
		{"GET /v1/tasks/{name}", reader, taskR.getTask},
		{"DELETE /v1/tasks/{name}", writer, taskR.deleteTask},
		{"POST /v1/tasks/{name}/pause", operator, taskR.pauseTask},
		{"POST /v1/tasks/{name}/resume", operator, taskR.resumeTask},
		{"GET /v1/tasks/{name}/history", reader, taskR.taskHistory},
		{"GET /v1/audit", reader, taskR.audit},
		{"GET /v1/tasks/{name}/events", reader, taskR.taskEvents},
		{"GET /v1/tasks/{name}/rollout", reader, taskR.rollout},
		{"POST /v1/tasks/{name}/promote", operator, taskR.promote},
		{"POST /v1/tasks/{name}/abort", operator, taskR.abort},
		{"GET /v1/tasks/{name}/calendar", reader, consoleR.taskCalendar},
		{"GET /v1/tasks/{name}/fires", reader, consoleR.taskFires},
		{"GET /v1/tasks/{name}/graph", reader, consoleR.taskGraph},
		{"GET /v1/tasks/{name}/counts", reader, consoleR.taskCounts},
		{"POST /v1/tasks/{name}/trigger", operator, instanceR.trigger},
		{"POST /v1/tasks/{name}/submit", operator, instanceR.submit},
		{"POST /v1/tasks/{name}/backfill", operator, instanceR.backfill},
		{"POST /v1/tasks/{name}/rerun", operator, instanceR.rerunTask},
		{"GET /v1/instances", reader, instanceR.listInstances},
		{"GET /v1/instances/{id}", reader, instanceR.getInstance},
		{"GET /v1/instances/{id}/log", reader, instanceR.instanceLog},
		{"GET /v1/instances/{id}/shards", reader, instanceR.shards},
		{"GET /v1/instances/{id}/result", reader, instanceR.instanceResult},
		{"POST /v1/instances/{id}/approve", operator, instanceR.decide("approve")},
		{"POST /v1/instances/{id}/reject", operator, instanceR.decide("reject")},
		{"POST /v1/instances/{id}/cancel", operator, instanceR.decide("cancel")},
		{"POST /v1/instances/{id}/terminate", operator, instanceR.decide("terminate")},
		{"POST /v1/instances/{id}/rerun", operator, instanceR.rerun},
		{"POST /v1/instances/{id}/approval", executor, instanceR.requestApproval},
		{"GET /v1/instances/{id}/approval", executor, instanceR.approvalStatus},
		{"POST /v1/executors/poll", executor, execR.poll},
		{"POST /v1/executors/heartbeat", executor, execR.heartbeat},
		{"POST /v1/attempts/{id}/complete", executor, execR.complete},
		{"POST /v1/attempts/complete", executor, execR.completeBatch},
		{"GET /v1/executors", reader, execR.executors},
		{"GET /v1/events", reader, consoleR.events},
		{"GET /v1/upcoming", reader, consoleR.upcoming},
		{"GET /v1/overview", reader, consoleR.overview},
		{"GET /v1/alerts", reader, alertR.listAlerts},
		{"GET /v1/silences", reader, alertR.listSilences},
		{"POST /v1/silences", operator, alertR.putSilence},
		{"DELETE /v1/silences/{id}", operator, alertR.deleteSilence},

		{"POST /v1/cluster/join", admin, clusterR.join},
		{"POST /v1/cluster/member-key", admin, clusterR.memberKey},
		{"GET /v1/cluster", reader, clusterR.cluster},
		{"DELETE /v1/cluster/{node}", admin, clusterR.removeNode},
		{"POST /v1/cluster/transfer", admin, clusterR.transfer},
		{"GET /v1/snapshot", admin, clusterR.snapshot},
		{"POST /v1/snapshot", admin, clusterR.restore},

		{"GET /v1/acl/whoami", AccessAuthenticated, consoleR.whoami},
		{"POST /v1/acl/bootstrap", admin, aclR.aclBootstrap},
		{"GET /v1/acl/tokens", admin, aclR.listTokens},
		{"POST /v1/acl/tokens", admin, aclR.createToken},
		{"DELETE /v1/acl/tokens/{name}", admin, aclR.revokeToken},
		{"PUT /v1/secrets/{name}", writer, aclR.putSecret},
		{"GET /v1/secrets", reader, aclR.listSecrets},
		{"DELETE /v1/secrets/{name}", writer, aclR.deleteSecret},
		{"PUT /v1/channels/{name}", writer, alertR.putChannel},
		{"GET /v1/channels", reader, alertR.listChannels},
		{"GET /v1/channels/{name}", reader, alertR.getChannel},
		{"DELETE /v1/channels/{name}", writer, alertR.deleteChannel},
		{"POST /v1/channels/{name}/test", operator, alertR.testChannel},
		{"PUT /v1/calendars/{name}", writer, calR.putDef},
		{"GET /v1/calendars", reader, calR.listDefs},
		{"GET /v1/calendars/{name}", reader, calR.getDef},
		{"DELETE /v1/calendars/{name}", writer, calR.deleteDef},
		{"PUT /v1/windows/{name}", writer, winR.putDef},
		{"GET /v1/windows", reader, winR.listDefs},
		{"GET /v1/windows/{name}", reader, winR.getDef},
		{"DELETE /v1/windows/{name}", writer, winR.deleteDef},
		{"PUT /v1/pools/{name}", writer, poolR.putDef},
		{"GET /v1/pools", reader, poolR.listDefs},
		{"GET /v1/pools/{name}", reader, poolR.getDef},
		{"DELETE /v1/pools/{name}", writer, poolR.deleteDef},
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

// Routes lists every endpoint of the public API with the access it needs.
func (s *Server) Routes() []Route { return routeList(s.table) }

func routeList(table []route) []Route {
	out := make([]Route, len(table))
	for i, r := range table {
		out[i] = Route{Pattern: r.pattern, Access: r.access}
	}
	return out
}

func (s *Server) live(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// codeMethodNotAllowed is the error code of a 405 answer.
const codeMethodNotAllowed = "method_not_allowed"

// noRoute answers a request no route of mux matches: 405 with an Allow
// header when the path exists for other methods, else 404. The catch-all
// "/" pattern would otherwise hide the mux's own 405.
func noRoute(mux *http.ServeMux) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var allow []string
		for _, m := range []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodOptions} {
			if m == r.Method {
				continue
			}
			probe := r.WithContext(r.Context())
			probe.Method = m
			if _, p := mux.Handler(probe); p != "" && p != "/" {
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
	if !IsRestore(r) {
		r.Body = http.MaxBytesReader(w, r.Body, s.cfg.MaxBody)
	}
	s.mux.ServeHTTP(w, markForwarded(r))
}

// boolParam reads an optional boolean query parameter (false when absent).
func boolParam(r *http.Request, name string) (bool, error) {
	c := r.URL.Query().Get(name)
	if c == "" {
		return false, nil
	}
	on, err := strconv.ParseBool(c)
	if err != nil {
		return false, model.FieldErrorf(name, "must be true or false, got %q", c)
	}
	return on, nil
}

// barrier makes a read linearizable, the default: it waits for a read
// barrier (ReadBarrier), so the answer reflects every write acknowledged
// before the request, whichever node serves it. ?stale=true skips it and
// answers from this node's state as it is, even without a leader;
// ?consistent=true (the default) is accepted, and both together are a
// 400. Handlers call it after validating the rest of the request, so bad
// input reaches no backend. It reports false after writing an error.
func (s *Server) barrier(w http.ResponseWriter, r *http.Request) bool {
	stale, err := staleRead(r)
	if err == nil && !stale {
		err = s.b.barrier.ReadBarrier(r.Context())
	}
	if err != nil {
		writeError(w, err)
		return false
	}
	return true
}

// staleRead reports whether a read asks for ?stale=true, refusing it with
// ?consistent=true.
func staleRead(r *http.Request) (bool, error) {
	stale, err := boolParam(r, "stale")
	if err != nil {
		return false, err
	}
	consistent, err := boolParam(r, "consistent")
	if err != nil {
		return false, err
	}
	if stale && consistent {
		return false, model.FieldErrorf("stale", "stale=true and consistent=true contradict each other: a read is linearizable by default, or stale when asked")
	}
	return stale, nil
}

func caller(r *http.Request) (Caller, error) {
	c := Caller{RequestID: r.Header.Get(headerIdempotencyKey), Traceparent: r.Header.Get("Traceparent")}
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

// decode reads one JSON value into v, rejecting unknown fields
// (strictjson: an error names the field by its full path).
func decode(r *http.Request, v any) error {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return strictjson.Error(err)
	}
	return strictjson.Decode(body, v)
}

func pathName(r *http.Request, key string) (string, error) {
	n := r.PathValue(key)
	if err := model.ValidateName(key, n); err != nil {
		return "", err
	}
	return n, nil
}

// list ends a list handler: the page limit from the query into *limit,
// the read barrier (unless ?stale=true), then the answer of fetch.
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
