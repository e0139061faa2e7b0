package security

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/api"
	"github.com/ax-scheduler/ax/client"
	"github.com/ax-scheduler/ax/model"
)

// TestACL_RouteMatrix sends every route of the API (api.Server.Routes and
// the node-to-node api.Internal.Routes) to a real agent with ACLs
// bootstrapped, with no token and with a real token of every role: without
// a token it is 401 (but /healthz and /livez), below the route's role 403
// (a node-to-node route refuses every token), and at or above it never 401
// or 403.
func TestACL_RouteMatrix(t *testing.T) {
	c := startCluster(t, 1)
	ctx := ctxT(t, 120*time.Second)
	boot, err := tokenClient(c, "").ACLBootstrap(ctx)
	if err != nil {
		t.Fatal(err)
	}
	adm := tokenClient(c, boot.Secret)
	if _, err := adm.PutTask(ctx, eventTask("daily")); err != nil {
		t.Fatal(err)
	}
	tokens := map[string]string{model.RoleAdmin: boot.Secret}
	for _, role := range []string{model.RoleReader, model.RoleOperator, model.RoleWriter, model.RoleExecutor} {
		req := model.ACLTokenRequest{Name: "as-" + role, Role: role}
		if role == model.RoleExecutor {
			req.Executor = "w1"
		}
		tokens[role] = createToken(t, ctx, adm, req)
	}
	rank := map[string]int{model.RoleReader: 1, model.RoleOperator: 2, model.RoleWriter: 3, model.RoleAdmin: 4}
	allowed := func(role, access string) bool {
		switch {
		case access == api.AccessOpen, access == api.AccessAuthenticated:
			return true
		case access == api.AccessMember:
			return false
		case role == model.RoleAdmin || role == access:
			return true
		}
		return rank[role] > 0 && rank[access] > 0 && rank[role] >= rank[access]
	}
	bodies := map[string]string{
		"PUT /v1/tasks/{name}":            `{"trigger":{"type":"event"},"action":{"type":"shell","command":"true"}}`,
		"POST /v1/tasks/{name}/submit":    `{"delay":"1h"}`,
		"POST /v1/executors/poll":         `{"executor":"w1","free":1,"waitMs":1}`,
		"POST /v1/executors/heartbeat":    `{"executor":"w1","running":[]}`,
		"POST /v1/attempts/{id}/complete": `{"executor":"w1","success":true}`,
		"POST /v1/acl/tokens":             `{"name":"made-by-matrix","role":"reader"}`,
		"PUT /v1/secrets/{name}":          `{"value":"v"}`,
	}
	routes := append(api.New(api.Config{Metrics: http.NotFoundHandler()}).Routes(), api.NewInternal(api.InternalConfig{}).Routes()...)
	for _, rt := range routes {
		method, path, _ := strings.Cut(rt.Pattern, " ")
		path = strings.NewReplacer("{name}", "daily", "{node}", "n9", "{id}", "0000000000100000").Replace(path)
		if strings.HasPrefix(path, "/v1/attempts/0") {
			path = strings.Replace(path, "0000000000100000", "0000000000100000-1", 1)
		}
		for _, role := range []string{"", model.RoleReader, model.RoleOperator, model.RoleWriter, model.RoleAdmin, model.RoleExecutor} {
			var body any
			if b, ok := bodies[rt.Pattern]; ok {
				body = []byte(b)
			}
			if rt.Pattern == "DELETE /v1/acl/tokens/{name}" || rt.Pattern == "DELETE /v1/cluster/{node}" || rt.Pattern == "POST /v1/cluster/transfer" {
				// Revoking, removing or moving for real would change what
				// the next cases meet; a name that does not exist gets as
				// far as authorization does.
				path = strings.Replace(path, "/daily", "/nobody", 1)
			}
			rctx, cancel := ctx, context.CancelFunc(func() {})
			if rt.Pattern == "GET /v1/events" {
				// An event stream does not end: a refusal comes at
				// once, a stream let through is cut by the deadline.
				rctx, cancel = context.WithTimeout(ctx, 2*time.Second)
			}
			err := client.New(client.Config{Addrs: c.Addrs(), Token: tokens[role], RetryFor: 5 * time.Second}).
				Do(rctx, client.Request{Method: method, Path: path, Body: body, NoRetry: true}, nil)
			cancel()
			code := ""
			if me, ok := err.(*model.Error); ok {
				code = me.Code
			}
			switch {
			case role == "" && rt.Access != api.AccessOpen:
				if code != model.CodeUnauthorized {
					t.Errorf("%s without a token: got %v, want unauthorized", rt.Pattern, err)
				}
			case role != "" && !allowed(role, rt.Access):
				if code != model.CodeForbidden {
					t.Errorf("%s as %s: got %v, want forbidden", rt.Pattern, role, err)
				}
			default:
				if code == model.CodeUnauthorized || code == model.CodeForbidden {
					t.Errorf("%s as %q: got %v, want it let through", rt.Pattern, role, err)
				}
			}
		}
	}
}
