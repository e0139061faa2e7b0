package api

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/ax-scheduler/ax/internal/strictjson"
	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/model/member"
)

// InternalPrefix is the path prefix of the node-to-node endpoints. Only
// cluster members may call them; they are not part of the public API (nor
// of its OpenAPI document).
const InternalPrefix = "/v1/internal/"

// InternalBackend is what the node-to-node endpoints need from an agent:
// the leader's side of forwarding.
type InternalBackend interface {
	// ApplyForwarded applies an encoded command a follower forwarded to
	// this node, which must be the leader; the answer is the encoded result.
	ApplyForwarded(ctx context.Context, cmd []byte) ([]byte, error)
	// ReadIndex confirms leadership and returns the commit index a
	// follower must apply before serving a linearizable read; known is
	// the commit index the follower knows (0: unknown), from which the
	// leader judges whether to send it the commit index at once.
	ReadIndex(ctx context.Context, known uint64) (uint64, error)
	// WaitApplied returns once this node has applied index (a member that
	// revoked a token waits so for every member), or an error if it has
	// not within ctx or the backend's own bound.
	WaitApplied(ctx context.Context, index uint64) error
}

// InternalConfig configures the node-to-node handler.
type InternalConfig struct {
	Backend InternalBackend
	// Auth verifies credentials: only an Identity with Member set (a
	// cluster node) is let through, to any path under InternalPrefix.
	// Default: everyone is a member (no authentication).
	Auth Authenticator
	// MaxBody bounds request bodies; default DefaultMaxBody.
	MaxBody int64
	// WallClock is the node's own clock, uncorrected, which GET
	// /v1/internal/time answers so that other members can measure its
	// offset from theirs; default time.Now.
	WallClock func() time.Time
	// ClockJump, when set, is the node's latest clock step while it
	// reports one (nil: none), which GET /v1/internal/time adds so that
	// the leader's watchdog sees every member's steps.
	ClockJump func() *member.ClockJump
}

// Internal serves the node-to-node endpoints under InternalPrefix: its own
// route table and mux behind one member check. Mount puts it in front of
// the public API.
type Internal struct {
	cfg   InternalConfig
	b     InternalBackend
	table []route
	h     http.HandlerFunc
}

// NewInternal returns the node-to-node handler.
func NewInternal(cfg InternalConfig) *Internal {
	if cfg.MaxBody == 0 {
		cfg.MaxBody = DefaultMaxBody
	}
	if cfg.Auth == nil {
		cfg.Auth = openAuth{}
	}
	if cfg.WallClock == nil {
		cfg.WallClock = time.Now
	}
	in := &Internal{cfg: cfg, b: cfg.Backend}
	in.table = []route{
		{"POST " + InternalPrefix + "apply", AccessMember, in.applyForwarded},
		{"GET " + InternalPrefix + "readindex", AccessMember, in.readIndex},
		{"GET " + InternalPrefix + "time", AccessMember, in.clockTime},
		{"GET " + InternalPrefix + "applied", AccessMember, in.applied},
	}
	mux := http.NewServeMux()
	for _, r := range in.table {
		mux.HandleFunc(r.pattern, r.h)
	}
	mux.HandleFunc("/", noRoute(mux))
	// One check for the whole prefix: a non-member learns nothing, not
	// even which paths exist.
	in.h = guard(cfg.Auth, AccessMember, mux.ServeHTTP)
	return in
}

// Routes lists the node-to-node endpoints (every one AccessMember).
func (in *Internal) Routes() []Route { return routeList(in.table) }

// ServeHTTP implements http.Handler for paths under InternalPrefix.
func (in *Internal) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, in.cfg.MaxBody)
	in.h(w, markForwarded(r))
}

// Mount returns the node's whole HTTP handler: paths under InternalPrefix
// go to in, every other to public.
func (in *Internal) Mount(public http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, InternalPrefix) {
			in.ServeHTTP(w, r)
			return
		}
		public.ServeHTTP(w, r)
	})
}

func (in *Internal) applyForwarded(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		writeError(w, strictjson.Error(err))
		return
	}
	out, err := in.b.ApplyForwarded(r.Context(), body)
	if err != nil {
		writeError(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(out)
}

func (in *Internal) readIndex(w http.ResponseWriter, r *http.Request) {
	var known uint64
	if v := r.URL.Query().Get("commit"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			writeError(w, model.FieldErrorf("commit", "must be a log index, got %q", v))
			return
		}
		known = n
	}
	idx, err := in.b.ReadIndex(r.Context(), known)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]uint64{"index": idx})
}

// applied answers once this node has applied ?index=N.
func (in *Internal) applied(w http.ResponseWriter, r *http.Request) {
	idx, err := strconv.ParseUint(r.URL.Query().Get("index"), 10, 64)
	if err != nil {
		writeError(w, model.FieldErrorf("index", "want an applied index"))
		return
	}
	if err := in.b.WaitApplied(r.Context(), idx); err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]uint64{"index": idx})
}

// clockTime answers a member's reading of this node's wall clock: the
// cluster's members compare clocks with it (NTP style, from the round
// trip), with its latest clock step while it reports one.
func (in *Internal) clockTime(w http.ResponseWriter, r *http.Request) {
	out := member.ClockReading{UnixMs: in.cfg.WallClock().UnixMilli()}
	if in.cfg.ClockJump != nil {
		out.Jump = in.cfg.ClockJump()
	}
	writeJSON(w, http.StatusOK, out)
}
