package api_test

import (
	"bufio"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/api"
	"github.com/ax-scheduler/ax/api/visible"
	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/model/member"
)

// tokenAuth is a fake Authenticator: bearer tokens map to principals;
// the token "member" is a cluster node.
type tokenAuth map[string]*model.Principal

func (ta tokenAuth) Authenticate(r *http.Request) (api.Identity, error) {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		return api.Identity{}, &model.Error{Code: model.CodeUnauthorized, Message: "missing token"}
	}
	if tok == "member" {
		return api.Identity{Principal: &model.Principal{Name: "node:n2", Role: model.RoleAdmin}, Member: true}, nil
	}
	p, ok := ta[tok]
	if !ok {
		return api.Identity{}, &model.Error{Code: model.CodeUnauthorized, Message: "unknown token"}
	}
	return api.Identity{Principal: p}, nil
}

// roleTokens has one token per role; the executor token is bound to
// executor "w1" with label pool=gpu.
var roleTokens = tokenAuth{
	"reader":   {Name: "r", Role: model.RoleReader},
	"operator": {Name: "o", Role: model.RoleOperator},
	"writer":   {Name: "w", Role: model.RoleWriter},
	"admin":    {Name: "a", Role: model.RoleAdmin},
	"executor": {Name: "e", Role: model.RoleExecutor, Executor: "w1", Labels: map[string]string{"pool": "gpu"}},
}

// sampleRequest is a valid request for a route pattern.
func sampleRequest(pattern string) request {
	method, path, _ := strings.Cut(pattern, " ")
	path = strings.NewReplacer("{name}", "daily", "{id}", "0000000000100000", "{node}", "n2").Replace(path)
	bodies := map[string]string{
		"PUT /v1/tasks/{name}":             taskBody("", "", "", ""),
		"POST /v1/tasks/{name}/submit":     `{"delay":"1m"}`,
		"POST /v1/tasks/{name}/backfill":   `{"from":"2026-01-01T00:00:00Z","to":"2026-01-02T00:00:00Z"}`,
		"POST /v1/tasks/{name}/rerun":      `{"from":"2026-01-01T00:00:00Z","to":"2026-01-02T00:00:00Z"}`,
		"POST /v1/instances/{id}/approval": `{"attempt":1,"summary":"ok?"}`,
		"POST /v1/executors/poll":          `{"executor":"w1","labels":{"pool":"gpu"},"free":1,"waitMs":1}`,
		"POST /v1/executors/heartbeat":     `{"executor":"w1","running":[]}`,
		"POST /v1/attempts/{id}/complete":  `{"executor":"w1","success":true}`,
		"POST /v1/attempts/complete":       `[{"executionId":"0000000000100000-1","report":{"executor":"w1","success":true}}]`,
		"POST /v1/cluster/join":            `{"id":"n2","raftAddr":"h:1","httpAddr":"h:2"}`,
		"POST /v1/acl/tokens":              `{"name":"ci","role":"operator"}`,
		"PUT /v1/secrets/{name}":           `{"value":"hunter2"}`,
		"POST /v1/silences":                `{"task":"daily","for":"2h"}`,
		"PUT /v1/channels/{name}":          `{"type":"webhook","url":"https://hooks.example/ax","secret":"k"}`,
		"PUT /v1/calendars/{name}":         `{"exclude":["2026-12-25"]}`,
		"PUT /v1/windows/{name}":           `{"ranges":["2026-12-25"]}`,
		"PUT /v1/pools/{name}":             `{"slots":2}`,
		"POST /v1/internal/apply":          "x",
	}
	if pattern == "GET /v1/instances/{id}/approval" {
		path += "?attempt=1"
	}
	if strings.HasPrefix(path, "/v1/attempts/0") {
		path = strings.Replace(path, "0000000000100000", "0000000000100000-1", 1)
	}
	if path == "/v1/internal/applied" {
		path += "?index=1"
	}
	return request{method: method, path: path, body: bodies[pattern]}
}

// TestServer_RoleMatrix sends every route a valid request as every role:
// 401 without a token, 403 below the route's role, served at or above it.
func TestServer_RoleMatrix(t *testing.T) {
	metrics := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})
	routes := api.New(withFakes(&fakeBackend{}, api.Config{Metrics: metrics})).Routes()
	rank := map[string]int{model.RoleReader: 1, model.RoleOperator: 2, model.RoleWriter: 3, model.RoleAdmin: 4}
	allowed := func(role, access string) bool {
		switch {
		case access == api.AccessOpen, access == api.AccessAuthenticated:
			return true
		case role == "member":
			return true // a node without a forwarded principal acts as admin
		case access == api.AccessMember:
			return false
		case role == model.RoleAdmin || role == access:
			return true
		}
		return rank[role] > 0 && rank[access] > 0 && rank[role] >= rank[access]
	}
	if len(routes) < 30 {
		t.Fatalf("got %d routes, want every /v1 route", len(routes))
	}
	for _, rt := range routes {
		for _, role := range []string{"", "reader", "operator", "writer", "admin", "executor", "member"} {
			name := rt.Pattern + " as " + role
			if role == "" {
				name = rt.Pattern + " without token"
			}
			t.Run(name, func(t *testing.T) {
				req := sampleRequest(rt.Pattern)
				if role != "" {
					req.header = map[string]string{"Authorization": "Bearer " + role}
				}
				// An attempt of the instance runs on w1, the executor token's.
				in := &model.Instance{ID: "0000000000100000", State: model.StateWaitingApproval, Attempts: 1, Executor: "w1"}
				fb := &fakeBackend{Task: &model.Task{Name: "daily"}, Instance: in,
					Instances: &model.InstanceList{}, HealthV: &member.Health{}, Status: &model.ClusterStatus{},
					Applied: []byte(`{}`), Events: &model.TaskEvents{}, List: &model.TaskList{}, History: &model.TaskHistory{}}
				rec := serve(t, api.Config{Auth: roleTokens, Metrics: metrics}, fb, req)
				switch {
				case role == "" && rt.Access != api.AccessOpen:
					if rec.Code != http.StatusUnauthorized {
						t.Fatalf("status: got %d, want 401 (body %s)", rec.Code, rec.Body)
					}
				case !allowed(role, rt.Access):
					if rec.Code != http.StatusForbidden {
						t.Fatalf("status: got %d, want 403 (body %s)", rec.Code, rec.Body)
					}
				default:
					if rec.Code/100 != 2 {
						t.Fatalf("status: got %d, want 2xx (body %s)", rec.Code, rec.Body)
					}
				}
				if rec.Code/100 != 2 && len(fb.Calls()) > 0 {
					t.Errorf("a refused request reached the backend: %v", fb.Methods())
				}
			})
		}
	}
}

// TestServer_ExecutorBinding: an executor token acts only as its executor
// and claims only its labels.
func TestServer_ExecutorBinding(t *testing.T) {
	tests := []struct {
		name       string
		req        request
		wantStatus int
		wantField  string
	}{
		{"poll as itself", request{method: "POST", path: "/v1/executors/poll", body: `{"executor":"w1","labels":{"pool":"gpu"},"free":1,"waitMs":1}`}, 200, ""},
		{"poll with fewer labels", request{method: "POST", path: "/v1/executors/poll", body: `{"executor":"w1","free":1,"waitMs":1}`}, 200, ""},
		{"poll as another executor", request{method: "POST", path: "/v1/executors/poll", body: `{"executor":"w2","free":1}`}, 403, "executor"},
		{"poll claiming another label value", request{method: "POST", path: "/v1/executors/poll", body: `{"executor":"w1","labels":{"pool":"gpu-secure"},"free":1}`}, 403, "labels.pool"},
		{"poll claiming an extra label", request{method: "POST", path: "/v1/executors/poll", body: `{"executor":"w1","labels":{"pool":"gpu","zone":"a"},"free":1}`}, 403, "labels.zone"},
		{"heartbeat as another executor", request{method: "POST", path: "/v1/executors/heartbeat", body: `{"executor":"w2","running":[]}`}, 403, "executor"},
		{"complete as another executor", request{method: "POST", path: "/v1/attempts/0000000000100000-1/complete", body: `{"executor":"w2","success":true}`}, 403, "executor"},
		{"batch complete as another executor", request{method: "POST", path: "/v1/attempts/complete",
			body: `[{"executionId":"0000000000100000-1","report":{"executor":"w2","success":true}}]`}, 403, "executor"},
		{"too many labels", request{method: "POST", path: "/v1/executors/poll", body: `{"executor":"w1","labels":{` + manyLabels(33) + `},"free":1}`}, 400, "labels"},
		{"poll with capabilities", request{method: "POST", path: "/v1/executors/poll",
			body: `{"executor":"w1","free":1,"waitMs":1,"capabilities":{"shell":false,"http":true,"handlers":["charge","greet"]}}`}, 200, ""},
		{"bad handler name", request{method: "POST", path: "/v1/executors/poll",
			body: `{"executor":"w1","free":1,"capabilities":{"handlers":["ok","no spaces"]}}`}, 400, "capabilities.handlers[1]"},
		{"too many handlers", request{method: "POST", path: "/v1/executors/poll",
			body: `{"executor":"w1","free":1,"capabilities":{"handlers":[` + strings.Repeat(`"h",`, 256) + `"h"]}}`}, 400, "capabilities.handlers"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fb := &fakeBackend{}
			tt.req.header = map[string]string{"Authorization": "Bearer executor"}
			rec := serve(t, api.Config{Auth: roleTokens}, fb, tt.req)
			if rec.Code != tt.wantStatus {
				t.Fatalf("status: got %d, want %d (body %s)", rec.Code, tt.wantStatus, rec.Body)
			}
			if tt.wantStatus != 200 {
				if e := errorOf(t, rec); e.Field != tt.wantField {
					t.Errorf("field: got %q, want %q (%s)", e.Field, tt.wantField, e.Message)
				}
				if len(fb.Calls()) > 0 {
					t.Errorf("a refused request reached the backend: %v", fb.Methods())
				}
			}
		})
	}
}

func manyLabels(n int) string {
	var parts []string
	for i := range n {
		parts = append(parts, `"k`+string(rune('a'+i%26))+strings.Repeat("x", i/26)+`":"v"`)
	}
	return strings.Join(parts, ",")
}

// TestServer_ActorIsTheToken: the audit actor is the verified token's
// name; X-AX-Actor only says on whose behalf.
func TestServer_ActorIsTheToken(t *testing.T) {
	tests := []struct {
		name   string
		header map[string]string
		want   string
	}{
		{"token only", map[string]string{"Authorization": "Bearer operator"}, "o"},
		{"claims to be someone", map[string]string{"Authorization": "Bearer operator", "X-AX-Actor": "admin"}, "o (for admin)"},
		{"claims to be itself", map[string]string{"Authorization": "Bearer operator", "X-AX-Actor": "o"}, "o"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fb := &fakeBackend{}
			rec := serve(t, api.Config{Auth: roleTokens}, fb, request{method: "POST", path: "/v1/tasks/daily/pause", header: tt.header})
			if rec.Code != 200 {
				t.Fatalf("status: got %d (body %s)", rec.Code, rec.Body)
			}
			if got := fb.Calls()[0].Caller.Actor; got != tt.want {
				t.Errorf("actor: got %q, want %q", got, tt.want)
			}
		})
	}
}

// TestServer_RefusedBodyNotRead: a request refused for its credentials is
// answered at once, without waiting for a body that never comes, and its
// connection is closed.
func TestServer_RefusedBodyNotRead(t *testing.T) {
	srv := httptest.NewServer(api.New(withFakes(&fakeBackend{}, api.Config{Auth: roleTokens})))
	defer srv.Close()
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// Headers promising a body that is never sent.
	if _, err := conn.Write([]byte("PUT /v1/tasks/daily HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n{")); err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer while the body stalls: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || !resp.Close {
		t.Errorf("got status %d, close %v; want 401 and the connection closed", resp.StatusCode, resp.Close)
	}
}

// TestServer_RedactsLiteralValuesBelowWriter: env and header values of a
// task are literal credentials as often as not; readers and operators see
// them redacted, writers as written, and secret references stay visible.
func TestServer_RedactsLiteralValuesBelowWriter(t *testing.T) {
	task := &model.Task{Name: "daily", Action: model.Action{Type: model.ActionHTTP, URL: "https://x/",
		Headers: map[string]model.Value{"Authorization": model.TextValue("Bearer abc"), "X-Key": model.SecretValue("api_key")}}}
	for _, tt := range []struct {
		token, wantAuth string
	}{
		{"reader", visible.Redacted}, {"operator", visible.Redacted}, {"writer", "Bearer abc"}, {"admin", "Bearer abc"},
	} {
		for _, path := range []string{"/v1/tasks/daily", "/v1/tasks", "/v1/tasks/daily/history"} {
			t.Run(tt.token+" "+path, func(t *testing.T) {
				fb := &fakeBackend{Task: task, List: &model.TaskList{Tasks: []model.Task{*task}},
					History: &model.TaskHistory{Name: "daily", Versions: []model.TaskVersion{{Version: 1, Task: task}}}}
				rec := serve(t, api.Config{Auth: roleTokens}, fb, request{method: "GET", path: path, header: map[string]string{"Authorization": "Bearer " + tt.token}})
				if rec.Code != 200 {
					t.Fatalf("status %d: %s", rec.Code, rec.Body)
				}
				body := rec.Body.String()
				if !strings.Contains(body, `"Authorization":"`+tt.wantAuth+`"`) || !strings.Contains(body, `{"fromSecret":"api_key"}`) {
					t.Errorf("body %s: want Authorization %q and the secret reference", body, tt.wantAuth)
				}
			})
		}
	}
	if got := task.Action.Headers["Authorization"].Text; got != "Bearer abc" {
		t.Errorf("the backend's task was changed: %q", got)
	}
}

// TestServer_RouteRoles pins the role of every route to DESIGN.md §8, so
// that a change to the route table is a change to this list too.
func TestServer_RouteRoles(t *testing.T) {
	want := map[string]string{
		"GET /healthz": api.AccessOpen, "GET /livez": api.AccessOpen, "GET /v1/openapi.json": api.AccessOpen,
		"GET /metrics": "reader", "GET /v1/tasks": "reader", "GET /v1/tasks/{name}": "reader",
		"GET /v1/tasks/{name}/history": "reader", "GET /v1/tasks/{name}/events": "reader",
		"GET /v1/tasks/{name}/calendar": "reader", "GET /v1/tasks/{name}/fires": "reader", "GET /v1/tasks/{name}/graph": "reader",
		"GET /v1/tasks/{name}/counts": "reader", "GET /v1/overview": "reader", "GET /v1/tasks/{name}/rollout": "reader",
		"GET /v1/instances": "reader", "GET /v1/instances/{id}": "reader", "GET /v1/instances/{id}/log": "reader", "GET /v1/instances/{id}/shards": "reader",
		"GET /v1/instances/{id}/result": "reader",
		"GET /v1/executors":             "reader", "GET /v1/cluster": "reader", "GET /v1/secrets": "reader",
		"GET /v1/events": "reader", "GET /v1/upcoming": "reader", "GET /v1/acl/whoami": api.AccessAuthenticated,
		"GET /v1/alerts": "reader", "GET /v1/silences": "reader",
		"POST /v1/silences": "operator", "DELETE /v1/silences/{id}": "operator",
		"POST /v1/tasks/{name}/pause": "operator", "POST /v1/tasks/{name}/resume": "operator",
		"POST /v1/tasks/{name}/promote": "operator", "POST /v1/tasks/{name}/abort": "operator",
		"POST /v1/tasks/{name}/trigger": "operator", "POST /v1/tasks/{name}/submit": "operator",
		"POST /v1/tasks/{name}/backfill": "operator", "POST /v1/instances/{id}/approve": "operator",
		"POST /v1/instances/{id}/reject": "operator", "POST /v1/instances/{id}/cancel": "operator",
		"POST /v1/instances/{id}/terminate": "operator", "POST /v1/instances/{id}/rerun": "operator",
		"POST /v1/tasks/{name}/rerun": "operator",
		"PUT /v1/tasks/{name}":        "writer", "DELETE /v1/tasks/{name}": "writer",
		"PUT /v1/secrets/{name}": "writer", "DELETE /v1/secrets/{name}": "writer",
		"PUT /v1/channels/{name}": "writer", "DELETE /v1/channels/{name}": "writer",
		"PUT /v1/calendars/{name}": "writer", "DELETE /v1/calendars/{name}": "writer", "GET /v1/calendars": "reader", "GET /v1/calendars/{name}": "reader",
		"PUT /v1/windows/{name}": "writer", "DELETE /v1/windows/{name}": "writer", "GET /v1/windows": "reader", "GET /v1/windows/{name}": "reader",
		"PUT /v1/pools/{name}": "writer", "DELETE /v1/pools/{name}": "writer", "GET /v1/pools": "reader", "GET /v1/pools/{name}": "reader",
		"GET /v1/channels": "reader", "GET /v1/channels/{name}": "reader", "POST /v1/channels/{name}/test": "operator",
		"GET /v1/audit":         "reader",
		"POST /v1/cluster/join": "admin", "POST /v1/cluster/member-key": "admin", "DELETE /v1/cluster/{node}": "admin", "POST /v1/cluster/transfer": "admin", "GET /v1/snapshot": "admin", "POST /v1/snapshot": "admin",
		"POST /v1/acl/bootstrap": "admin", "GET /v1/acl/tokens": "admin", "POST /v1/acl/tokens": "admin",
		"DELETE /v1/acl/tokens/{name}": "admin",
		"POST /v1/executors/poll":      "executor", "POST /v1/executors/heartbeat": "executor",
		"POST /v1/attempts/{id}/complete": "executor", "POST /v1/attempts/complete": "executor",
		"POST /v1/instances/{id}/approval": "executor", "GET /v1/instances/{id}/approval": "executor",
		// The node-to-node routes, on their own handler.
		"POST /v1/internal/apply": api.AccessMember, "GET /v1/internal/readindex": api.AccessMember,
		"GET /v1/internal/time":    api.AccessMember,
		"GET /v1/internal/applied": api.AccessMember,
	}
	got := map[string]string{}
	for _, r := range api.New(api.Config{Metrics: http.NotFoundHandler()}).Routes() {
		got[r.Pattern] = r.Access
	}
	for _, r := range api.NewInternal(api.InternalConfig{}).Routes() {
		if _, dup := got[r.Pattern]; dup {
			t.Errorf("%s: on both the public and the internal handler", r.Pattern)
		}
		got[r.Pattern] = r.Access
	}
	for p, role := range want {
		if got[p] != role {
			t.Errorf("%s: needs %q, want %q", p, got[p], role)
		}
	}
	for p := range got {
		if _, ok := want[p]; !ok {
			t.Errorf("%s: a route this test does not know; add it with its role", p)
		}
	}
}

// TestServer_DryRunRole pins the role of a task write's dry run (PUT
// /v1/tasks/{name}?dryRun=true) to the write's own, writer: it shows the
// stored definition (literal env and header values included) and what the
// caller could write, so a reader or an operator may not ask for it.
func TestServer_DryRunRole(t *testing.T) {
	for _, tt := range []struct {
		role       string
		wantStatus int
	}{
		{"reader", http.StatusForbidden},
		{"operator", http.StatusForbidden},
		{"writer", http.StatusOK},
		{"admin", http.StatusOK},
	} {
		t.Run(tt.role, func(t *testing.T) {
			fb := &fakeBackend{}
			req := request{method: http.MethodPut, path: "/v1/tasks/daily?dryRun=true", body: taskBody("", "", "", ""),
				header: map[string]string{"Authorization": "Bearer " + tt.role}}
			rec := serve(t, api.Config{Auth: roleTokens}, fb, req)
			if rec.Code != tt.wantStatus {
				t.Fatalf("status: got %d, want %d (body %s)", rec.Code, tt.wantStatus, rec.Body)
			}
			want := []string(nil)
			if tt.wantStatus == http.StatusOK {
				want = []string{"PlanTask"}
			}
			if got := fb.Methods(); !reflect.DeepEqual(got, want) {
				t.Errorf("backend calls: got %v, want %v", got, want)
			}
		})
	}
}
