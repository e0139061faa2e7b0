package agent

import (
	"context"
	"encoding/base64"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/api"
	"github.com/ax-scheduler/ax/internal/testkit"
	"github.com/ax-scheduler/ax/model"
)

// TestAgent_ForwardedPrincipalRechecked: a request a member forwards acts
// for the principal the member verified, but only while that principal's
// ACL token exists on the receiving node: after a revoke, a forwarded
// write of the token (authenticated by its node before the revoke, say)
// is refused.
func TestAgent_ForwardedPrincipalRechecked(t *testing.T) {
	a := startAgent(t)
	ctx := context.Background()
	admin := api.Caller{Actor: "tester"}
	if _, err := a.ACLBootstrap(ctx, admin); err != nil {
		t.Fatal(err)
	}
	w, err := a.CreateToken(ctx, admin, model.ACLTokenRequest{Name: "deployer", Role: model.RoleWriter})
	if err != nil {
		t.Fatal(err)
	}
	var key []byte
	testkit.Until(t, 10*time.Second, "a member key", func() bool { key = a.fsm.MemberKey(); return key != nil })
	forwarded := func() (api.Identity, error) {
		enc, err := encodePrincipal(&model.Principal{Name: "deployer", Role: model.RoleWriter, TokenHash: TokenHash(w.Secret)})
		if err != nil {
			t.Fatal(err)
		}
		r, _ := http.NewRequest(http.MethodPost, "/v1/internal/apply", nil)
		r.Header.Set(HeaderMember, base64.RawURLEncoding.EncodeToString(key))
		r.Header.Set(HeaderPrincipal, enc)
		return a.Authenticate(r)
	}
	if id, err := forwarded(); err != nil || !id.Member || id.Principal.Name != "deployer" {
		t.Fatalf("forwarded for a live token: %+v, %v", id, err)
	}
	if _, err := a.RevokeToken(ctx, admin, "deployer"); err != nil {
		t.Fatal(err)
	}
	if id, err := forwarded(); !errors.Is(err, model.ErrUnauthorized) {
		t.Fatalf("forwarded for a revoked token: %+v, %v; want unauthorized", id.Principal, err)
	}
}
