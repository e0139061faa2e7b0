package agent

import (
	"context"
	"encoding/base64"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/access"
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
	if _, err := a.acc.ACLBootstrap(ctx, admin); err != nil {
		t.Fatal(err)
	}
	w, err := a.acc.CreateToken(ctx, admin, model.ACLTokenRequest{Name: "deployer", Role: model.RoleWriter})
	if err != nil {
		t.Fatal(err)
	}
	var key []byte
	testkit.Until(t, 10*time.Second, "a member key", func() bool { key = a.fsm.MemberKey(); return key != nil })
	forwarded := func() (api.Identity, error) {
		enc, err := api.EncodePrincipal(&model.Principal{Name: "deployer", Role: model.RoleWriter, TokenHash: access.TokenHash(w.Secret)})
		if err != nil {
			t.Fatal(err)
		}
		r, _ := http.NewRequest(http.MethodPost, "/v1/internal/apply", nil)
		r.Header.Set(api.HeaderMember, base64.RawURLEncoding.EncodeToString(key))
		r.Header.Set(api.HeaderPrincipal, enc)
		return a.acc.Authenticate(r)
	}
	if id, err := forwarded(); err != nil || !id.Member || id.Principal.Name != "deployer" {
		t.Fatalf("forwarded for a live token: %+v, %v", id, err)
	}
	if _, err := a.acc.RevokeToken(ctx, admin, "deployer"); err != nil {
		t.Fatal(err)
	}
	if id, err := forwarded(); !errors.Is(err, model.ErrUnauthorized) {
		t.Fatalf("forwarded for a revoked token: %+v, %v; want unauthorized", id.Principal, err)
	}
}

// TestAgent_TokensBeforeBootstrap: on a node with -token an ACL token works
// from the moment it is created (it used to stay dormant, "wrong token",
// until ax acl bootstrap); on a node without auth, creating one is refused
// with the next step instead of making a token that opens nothing more.
func TestAgent_TokensBeforeBootstrap(t *testing.T) {
	ctx := context.Background()
	admin := api.Caller{Actor: "tester"}
	t.Run("with -token", func(t *testing.T) {
		a := startAgent(t, func(c *Config) { c.Token = "a-management-token-of-32-bytes!!" })
		tok, err := a.acc.CreateToken(ctx, admin, model.ACLTokenRequest{Name: "viewer", Role: model.RoleReader})
		if err != nil {
			t.Fatal(err)
		}
		r, _ := http.NewRequest(http.MethodGet, "/v1/tasks", nil)
		r.Header.Set("Authorization", "Bearer "+tok.Secret)
		id, err := a.acc.Authenticate(r)
		if err != nil || id.Principal.Name != "viewer" || id.Principal.Role != model.RoleReader {
			t.Fatalf("a token made before the bootstrap: %+v, %v; want reader viewer", id.Principal, err)
		}
		r.Header.Set("Authorization", "Bearer axt_not-a-token")
		if _, err := a.acc.Authenticate(r); !errors.Is(err, model.ErrUnauthorized) {
			t.Fatalf("an unknown token: %v, want unauthorized", err)
		}
	})
	t.Run("without auth", func(t *testing.T) {
		a := startAgent(t)
		_, err := a.acc.CreateToken(ctx, admin, model.ACLTokenRequest{Name: "viewer", Role: model.RoleReader})
		if !errors.Is(err, model.ErrPrecondition) || !strings.Contains(err.Error(), "ax acl bootstrap") {
			t.Fatalf("a token before the bootstrap on an open cluster: %v, want failed precondition naming ax acl bootstrap", err)
		}
		if _, err := a.acc.ACLBootstrap(ctx, admin); err != nil {
			t.Fatal(err)
		}
		if _, err := a.acc.CreateToken(ctx, admin, model.ACLTokenRequest{Name: "viewer", Role: model.RoleReader}); err != nil {
			t.Fatalf("after the bootstrap: %v", err)
		}
	})
}

// TestAgent_RevokeEndsRunningStreams: an event stream opened with a token
// ends when the token is revoked (it went on streaming), while a stream of
// another token goes on.
func TestAgent_RevokeEndsRunningStreams(t *testing.T) {
	a := startAgent(t)
	ctx := context.Background()
	admin := api.Caller{Actor: "tester"}
	if _, err := a.acc.ACLBootstrap(ctx, admin); err != nil {
		t.Fatal(err)
	}
	open := func(name string) <-chan error {
		t.Helper()
		tok, err := a.acc.CreateToken(ctx, admin, model.ACLTokenRequest{Name: name, Role: model.RoleReader})
		if err != nil {
			t.Fatal(err)
		}
		req, _ := http.NewRequest(http.MethodGet, "http://"+a.HTTPAddr()+"/v1/events", nil)
		req.Header.Set("Authorization", "Bearer "+tok.Secret)
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("open the stream of %s: %v %v", name, resp, err)
		}
		ended := make(chan error, 1)
		go func() {
			_, err := io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			ended <- err
		}()
		return ended
	}
	revoked, kept := open("viewer"), open("other")
	if _, err := a.acc.RevokeToken(ctx, admin, "viewer"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-revoked:
	case <-time.After(5 * time.Second):
		t.Fatal("the stream of the revoked token still runs 5 s after the revoke")
	}
	select {
	case err := <-kept:
		t.Fatalf("the stream of another token ended: %v", err)
	case <-time.After(200 * time.Millisecond):
	}
}

// TestAgent_TokenRightAfterBootstrap: a token used on a follower right
// after ACLs were bootstrapped elsewhere is taken for what it is once the
// follower has caught up, not as the anonymous admin of a cluster without
// auth (before, a reader token made a moment after the bootstrap acted as
// admin on a follower that had not applied it yet, and a TLS follower
// refused the bootstrap token itself, asking for a client certificate).
func TestAgent_TokenRightAfterBootstrap(t *testing.T) {
	tc := startCluster(t, 3, nil)
	tc.waitMemberKey(t)
	ctx := context.Background()
	l := tc.leader()
	f := tc.follower(l)
	admin := api.Caller{Actor: "tester"}
	if _, err := l.acc.ACLBootstrap(ctx, admin); err != nil {
		t.Fatal(err)
	}
	tok, err := l.acc.CreateToken(ctx, admin, model.ACLTokenRequest{Name: "viewer", Role: model.RoleReader})
	if err != nil {
		t.Fatal(err)
	}
	r, _ := http.NewRequest(http.MethodGet, "/v1/tasks", nil)
	r.Header.Set("Authorization", "Bearer "+tok.Secret)
	id, err := f.acc.Authenticate(r)
	if err != nil || id.Principal.Name != "viewer" || id.Principal.Role != model.RoleReader {
		t.Fatalf("a reader token on %s right after the bootstrap: %+v, %v; want reader viewer", f.cfg.NodeID, id.Principal, err)
	}
}
