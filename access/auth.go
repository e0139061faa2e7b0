package access

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"net/http"
	"strings"
	"time"

	"github.com/ax-scheduler/ax/api"
	"github.com/ax-scheduler/ax/client"
	"github.com/ax-scheduler/ax/model"
)

// tokenPrefix starts every token ax makes, so that a leaked one is easy to
// find with secret scanners.
const tokenPrefix = "axt_"

// NewToken returns a fresh random token: tokenPrefix and 32 random bytes,
// base64url.
func NewToken() string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	return tokenPrefix + base64.RawURLEncoding.EncodeToString(b[:])
}

// TokenHash is the SHA-256 of a token in hex, as the state machine keeps
// it.
func TokenHash(token string) string {
	h := sha256.Sum256([]byte(token))
	return hex.EncodeToString(h[:])
}

func errUnauthorized(msg string) error {
	return &model.Error{Code: model.CodeUnauthorized, Message: msg}
}

// Authenticate implements api.Authenticator. In order:
//   - a cluster node (its verified TLS certificate; without TLS the member
//     key) is a member, acting for the principal it forwards, or as admin;
//   - the bearer token: the management token (-token), the legacy executor
//     token (-executor-token), the embedded executor's own token, or an ACL
//     token (looked up by its SHA-256);
//   - no token, or any token: allowed as admin only while the cluster has
//     no auth at all (no -token and no ACL bootstrap) — and then, on a TLS
//     node, only with a client certificate of the cluster CA. A follower
//     given a token first catches up with the leader, so a bootstrap
//     committed a moment ago counts (before, a token made right after it
//     acted as the anonymous admin there).
//
// ACL tokens count once ACLs are bootstrapped, and on a node with -token
// from the moment they exist.
//
// When this node cannot read its auth state (a state machine whose
// restore failed), it admits nobody: 503, no identity.
func (a *Access) Authenticate(r *http.Request) (api.Identity, error) {
	boot, key, err := a.state.AuthState()
	if err != nil {
		return api.Identity{}, authUnavailable(err)
	}
	if node, ok := a.member(r, boot, key); ok {
		p := &model.Principal{Name: "node:" + node, Role: model.RoleAdmin}
		if node == "" {
			p.Name = "anonymous" // no auth at all: not a node, whoever it is
		}
		if h := r.Header.Get(api.HeaderPrincipal); h != "" {
			fp, err := api.DecodePrincipal(h)
			if err != nil {
				return api.Identity{}, errUnauthorized("bad " + api.HeaderPrincipal + " header: " + err.Error())
			}
			if err := a.recheckForwarded(r, fp); err != nil {
				return api.Identity{}, err
			}
			p = fp
		}
		return api.Identity{Principal: p, Member: true}, nil
	}
	tok, hasTok := bearer(r)
	switch {
	case !hasTok:
		if a.cfg.Token == "" && !boot {
			return a.openIdentity(r)
		}
		return api.Identity{}, errUnauthorized("missing token: send Authorization: Bearer <token>")
	case a.cfg.Token != "" && equal(tok, a.cfg.Token):
		return api.Identity{Principal: &model.Principal{Name: "management", Role: model.RoleAdmin}}, nil
	case a.cfg.ExecutorToken != "" && equal(tok, a.cfg.ExecutorToken):
		return api.Identity{Principal: &model.Principal{Name: "executor-token", Role: model.RoleExecutor, Unbound: true}}, nil
	case equal(tok, a.cfg.LocalExecToken):
		return api.Identity{Principal: &model.Principal{Name: "node:" + a.cfg.NodeID + ":executor", Role: model.RoleExecutor,
			Executor: a.cfg.NodeID, Labels: a.cfg.ExecutorLabels}}, nil
	}
	if !boot && a.cfg.Token == "" && !a.rep.IsLeader() {
		// A token says its client expects ACLs: a bootstrap committed a
		// moment ago may not have reached this node yet.
		a.catchUp(r.Context())
		if boot, _, err = a.state.AuthState(); err != nil {
			return api.Identity{}, authUnavailable(err)
		}
	}
	if !boot && a.cfg.Token == "" {
		return a.openIdentity(r)
	}
	// An ACL token (with -token they work before the bootstrap too, as
	// Consul's initial management token bootstraps ACLs): this node's
	// state must not predate a revoke.
	caughtUp, err := a.ensureACLFresh(r.Context())
	if err != nil {
		return api.Identity{}, err
	}
	hash := TokenHash(tok)
	a.usesToken(r, hash) // before the lookup: a revoke applied after it ends the request
	t, ok, err := a.state.TokenByHash(hash)
	if err == nil && !ok && !caughtUp && !a.rep.IsLeader() {
		// A token created a moment ago may not have reached this node yet.
		a.catchUp(r.Context())
		t, ok, err = a.state.TokenByHash(hash)
	}
	if err != nil {
		return api.Identity{}, authUnavailable(err)
	}
	if !ok {
		return api.Identity{}, errUnauthorized("unknown or revoked token")
	}
	if t.Expired(a.cfg.Now().UnixMilli()) {
		return api.Identity{}, errUnauthorized("token " + t.Name + " expired at " + model.UnixMilli(t.ExpiresAt).Format(model.TimeLayout))
	}
	return api.Identity{Principal: &model.Principal{Name: t.Name, Role: t.Role, Executor: t.Executor, Labels: t.Labels, TokenHash: hash}}, nil
}

// authUnavailable is the answer to a request this node cannot
// authenticate because it cannot read its auth state: a 503 (the client
// tries another node), never a guess.
func authUnavailable(err error) error {
	return &model.Error{Code: model.CodeUnavailable, Message: "this node cannot read its auth state, so it admits nobody: " + err.Error()}
}

// openIdentity admits a request on a cluster without auth: as admin, but a
// TLS node requires a client certificate of its CA (with TLS on and no
// tokens, the CA is the credential).
func (a *Access) openIdentity(r *http.Request) (api.Identity, error) {
	if a.cfg.TLS {
		name, ok := clientCertName(r)
		if !ok {
			return api.Identity{}, errUnauthorized("this node has TLS and no tokens: " + model.NeedClientCert + " (-client-cert, -client-key)")
		}
		return api.Identity{Principal: &model.Principal{Name: "cert:" + name, Role: model.RoleAdmin}}, nil
	}
	return api.Identity{Principal: &model.Principal{Name: "anonymous", Role: model.RoleAdmin}}, nil
}

// member reports whether r comes from a cluster node, given the auth state
// (whether ACLs are bootstrapped, the member key). With TLS only a node
// certificate counts. Without TLS the member key counts; until a leader
// has set one (a cluster being upgraded), the management token does.
func (a *Access) member(r *http.Request, bootstrapped bool, key []byte) (string, bool) {
	if a.cfg.TLS {
		return peerNode(r)
	}
	if key != nil {
		got := r.Header.Get(api.HeaderMember)
		if got == "" || !equal(got, api.MemberKeyHeader(key)) {
			return "", false
		}
		return memberName(r), true
	}
	if tok, ok := bearer(r); ok && a.cfg.Token != "" && equal(tok, a.cfg.Token) {
		return memberName(r), true
	}
	if a.cfg.Token == "" && !bootstrapped {
		return "", true // no auth at all: anyone is a member, and named anonymous
	}
	return "", false
}

// memberName is the node a member request says it comes from (the
// X-AX-Actor "node:ID" every node sends); for logs and audit only.
func memberName(r *http.Request) string {
	if n, ok := strings.CutPrefix(r.Header.Get(client.HeaderActor), "node:"); ok && model.ValidName(n) {
		return n
	}
	return "peer"
}

func bearer(r *http.Request) (string, bool) {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return tok, ok && tok != ""
}

func equal(a, b string) bool {
	return b != "" && subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}

// catchUp waits, at most a second, until this node has applied what the
// leader had committed: one read barrier at a time, shared by every
// request that waits meanwhile, so unknown tokens cannot flood the leader.
// A barrier that succeeds renews the freshness of this node's ACL state
// (revoke.go).
func (a *Access) catchUp(ctx context.Context) {
	select {
	case <-a.startCatchUp():
	case <-ctx.Done():
	}
}

// startCatchUp starts the shared read barrier of catchUp unless one runs,
// and returns the channel closed when it ends.
func (a *Access) startCatchUp() <-chan struct{} {
	a.catchMu.Lock()
	defer a.catchMu.Unlock()
	if a.catchCh != nil {
		return a.catchCh
	}
	ch := make(chan struct{})
	a.catchCh = ch
	go func() {
		start := time.Now()
		bctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := a.rep.ReadBarrier(bctx)
		cancel()
		if err == nil {
			a.renewACLLease(start)
		}
		a.catchMu.Lock()
		a.catchCh = nil
		a.catchMu.Unlock()
		close(ch)
	}()
	return ch
}
