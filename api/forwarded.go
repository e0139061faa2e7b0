package api

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/ax-scheduler/ax/model"
)

// Headers between cluster nodes. A node forwarding a request on behalf of
// a client names the principal it verified in HeaderPrincipal; the
// receiver honours it only from a member. Without TLS, members prove
// membership with the cluster's member key in HeaderMember.
const (
	HeaderPrincipal = "X-AX-Principal"
	HeaderMember    = "X-AX-Member"
)

// HeaderForwarded marks a request one node forwarded to another; the
// receiver must answer it itself rather than forward it again.
const HeaderForwarded = "X-AX-Forwarded"

type forwardedKey struct{}

// IsForwarded reports whether the request behind ctx was forwarded by
// another node.
func IsForwarded(ctx context.Context) bool {
	v, _ := ctx.Value(forwardedKey{}).(bool)
	return v
}

func markForwarded(r *http.Request) *http.Request {
	if r.Header.Get(HeaderForwarded) == "" {
		return r
	}
	return r.WithContext(context.WithValue(r.Context(), forwardedKey{}, true))
}

// EncodePrincipal is p as HeaderPrincipal carries it: its JSON, base64url.
func EncodePrincipal(p *model.Principal) (string, error) {
	b, err := json.Marshal(p)
	if err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// DecodePrincipal reads a HeaderPrincipal value; a principal without a
// name or a known role is an error.
func DecodePrincipal(s string) (*model.Principal, error) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return nil, err
	}
	var p model.Principal
	if err := json.Unmarshal(b, &p); err != nil {
		return nil, err
	}
	if p.Name == "" || !model.ValidRole(p.Role) {
		return nil, errors.New("no name or role")
	}
	return &p, nil
}

// MemberKeyHeader is the HeaderMember value of a member key.
func MemberKeyHeader(key []byte) string { return base64.RawURLEncoding.EncodeToString(key) }
