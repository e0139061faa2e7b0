package api

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/ax-scheduler/ax/model"
)

// Access levels of routes beyond the roles of model: open routes need no
// credentials, member routes only a cluster node's, authenticated routes
// any valid principal's (every role, executor tokens included).
const (
	AccessOpen          = "open"
	AccessMember        = "member"
	AccessAuthenticated = "authenticated"
)

// Identity is who a request comes from, once its credentials are verified.
type Identity struct {
	// Principal is who the request acts as: the token's holder, or, on a
	// request a cluster node forwarded, the principal that node verified.
	Principal *model.Principal
	// Member is set when the request comes from a cluster node (its TLS
	// certificate, or the member key on clusters without TLS).
	Member bool
}

// Authenticator verifies a request's credentials. It returns an error (a
// *model.Error with code unauthorized) for missing, wrong or expired
// credentials; an Identity without a Principal is never returned.
type Authenticator interface {
	Authenticate(r *http.Request) (Identity, error)
}

// openAuth admits everyone as an admin: the API handler's default when no
// Authenticator is configured (tests, and agents with auth off).
type openAuth struct{}

func (openAuth) Authenticate(*http.Request) (Identity, error) {
	return Identity{Principal: &model.Principal{Name: "anonymous", Role: model.RoleAdmin}, Member: true}, nil
}

type identityKey struct{}

// PrincipalFrom returns the principal of the request behind ctx, nil when
// the route is open.
func PrincipalFrom(ctx context.Context) *model.Principal {
	id, _ := ctx.Value(identityKey{}).(Identity)
	return id.Principal
}

// WithPrincipal returns ctx carrying p as the request's principal (for
// callers that run backend methods outside an HTTP request).
func WithPrincipal(ctx context.Context, p *model.Principal) context.Context {
	return context.WithValue(ctx, identityKey{}, Identity{Principal: p})
}

// Route is one endpoint and the access it needs: a role of model
// (RoleReader...), AccessOpen, AccessMember or AccessAuthenticated.
type Route struct {
	Pattern string // "METHOD /path", as http.ServeMux takes it
	Access  string
}

// guard wraps h with the authentication (by auth) and authorization of
// access. A refused request is answered before its body is read, and its
// connection is closed rather than drained.
func guard(auth Authenticator, access string, h http.HandlerFunc) http.HandlerFunc {
	if access == AccessOpen {
		return h
	}
	return func(w http.ResponseWriter, r *http.Request) {
		id, err := auth.Authenticate(r)
		if err == nil && id.Principal == nil {
			err = &model.Error{Code: model.CodeUnauthorized, Message: "no principal"}
		}
		if err == nil {
			err = allowed(id, access, r)
		}
		if err != nil {
			refuse(w, err)
			return
		}
		h(w, r.WithContext(context.WithValue(r.Context(), identityKey{}, id)))
	}
}

// membersOnly ends the message of a members-only route's refusal.
const membersOnly = " is for cluster members only"

// IsMembersOnly reports whether err is a node's refusal of a request to a
// members-only route from a caller it does not take for a member.
func IsMembersOnly(err error) bool {
	var me *model.Error
	return errors.As(err, &me) && me.Code == model.CodeForbidden && strings.HasSuffix(me.Message, membersOnly)
}

func allowed(id Identity, access string, r *http.Request) error {
	switch {
	case access == AccessAuthenticated:
		return nil
	case access == AccessMember:
		if !id.Member {
			return &model.Error{Code: model.CodeForbidden, Message: r.URL.Path + membersOnly}
		}
	case !id.Principal.Can(access):
		return &model.Error{Code: model.CodeForbidden, Message: "token " + id.Principal.Name + " (role " + id.Principal.Role + ") may not " +
			r.Method + " " + r.URL.Path + ": it needs role " + access}
	}
	return nil
}

// refuse answers an authentication or authorization failure without
// reading the request body: a stalled or huge body must not hold the
// server, so the connection is closed after the answer instead of drained.
func refuse(w http.ResponseWriter, err error) {
	w.Header().Set("Connection", "close")
	_ = http.NewResponseController(w).SetReadDeadline(time.Now())
	writeError(w, err)
}

// actorOf is the audit actor of a write: the verified principal's name,
// with the caller's X-AX-Actor kept only as whom it acts on behalf of.
func actorOf(p *model.Principal, onBehalf string) string {
	name := "anonymous"
	if p != nil {
		name = p.Name
	}
	if onBehalf == "" || onBehalf == name {
		return name
	}
	return name + " (for " + onBehalf + ")"
}
