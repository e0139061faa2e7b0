package api_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/ax-scheduler/ax/api"
	"github.com/ax-scheduler/ax/api/pages"
	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/model/approval"
	"github.com/ax-scheduler/ax/model/channel"
	"github.com/ax-scheduler/ax/model/live"
	"github.com/ax-scheduler/ax/model/member"
)

// loadOpenAPI loads and validates the embedded document.
func loadOpenAPI(t *testing.T) *openapi3.T {
	t.Helper()
	doc, err := openapi3.NewLoader().LoadFromData(api.OpenAPI())
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("validate: %v", err)
	}
	if !doc.IsOpenAPI31OrLater() {
		t.Fatalf("openapi %q, want 3.1", doc.OpenAPI)
	}
	return doc
}

// TestOpenAPI_Routes checks that the document and the route table describe
// the same endpoints: every public route documented with its method and
// path, no operation without a route, and each operation's x-ax-role is the
// route's access.
func TestOpenAPI_Routes(t *testing.T) {
	doc := loadOpenAPI(t)
	documented := map[string]string{} // pattern -> x-ax-role
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			role, _ := op.Extensions["x-ax-role"].(string)
			documented[method+" "+path] = role
		}
	}
	access := map[string]string{api.AccessOpen: "none", api.AccessAuthenticated: "authenticated"}
	routes := map[string]bool{}
	for _, r := range api.New(api.Config{Metrics: http.NotFoundHandler()}).Routes() {
		if _, path, _ := strings.Cut(r.Pattern, " "); strings.HasPrefix(path, api.InternalPrefix) {
			t.Errorf("%s: a node-to-node route in the public router", r.Pattern)
		}
		routes[r.Pattern] = true
		role, ok := documented[r.Pattern]
		want := r.Access
		if a, ok := access[want]; ok {
			want = a
		}
		switch {
		case !ok:
			t.Errorf("%s: route not in api/openapi.json", r.Pattern)
		case role != want:
			t.Errorf("%s: x-ax-role %q, want %q", r.Pattern, role, want)
		}
	}
	for p := range documented {
		if !routes[p] {
			t.Errorf("%s: documented, but no such route", p)
		}
	}
	if len(routes) < 50 {
		t.Errorf("got %d public routes, want every one", len(routes))
	}
}

// TestOpenAPI_Served checks GET /v1/openapi.json answers the embedded
// document without a token when ACLs are on.
func TestOpenAPI_Served(t *testing.T) {
	srv := httptest.NewServer(api.New(withFakes(&fakeBackend{}, api.Config{Auth: roleTokens})))
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/v1/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("got %d %q, want 200 application/json", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	if string(body) != string(api.OpenAPI()) {
		t.Error("served document differs from the embedded one")
	}
}

// requestSchema is the JSON request body schema of an operation.
func requestSchema(t *testing.T, doc *openapi3.T, pattern string) *openapi3.Schema {
	t.Helper()
	method, path, _ := strings.Cut(pattern, " ")
	op := doc.Paths.Find(path).GetOperation(method)
	if op == nil || op.RequestBody == nil {
		t.Fatalf("%s: no request body documented", pattern)
	}
	return op.RequestBody.Value.Content.Get("application/json").Schema.Value
}

func visit(s *openapi3.Schema, body string) error {
	var v any
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		return err
	}
	return s.VisitJSON(v, openapi3.EnableJSONSchema2020())
}

// TestOpenAPI_RequestBodies validates request bodies the server accepts
// (the role matrix's sample of every route, and a few more) against the
// documented schemas, and bodies it refuses as invalid.
func TestOpenAPI_RequestBodies(t *testing.T) {
	doc := loadOpenAPI(t)
	var patterns []string
	for _, r := range api.New(api.Config{}).Routes() {
		if sampleRequest(r.Pattern).body != "" {
			patterns = append(patterns, r.Pattern)
		}
	}
	sort.Strings(patterns)
	if len(patterns) < 12 {
		t.Fatalf("got %d sample bodies, want the role matrix's", len(patterns))
	}
	for _, p := range patterns {
		t.Run("sample "+p, func(t *testing.T) {
			if err := visit(requestSchema(t, doc, p), sampleRequest(p).body); err != nil {
				t.Errorf("body %s: %v", sampleRequest(p).body, err)
			}
		})
	}
	tests := []struct {
		name, pattern, body string
		valid               bool
	}{
		{"full task", "PUT /v1/tasks/{name}", `{"name":"daily","labels":{"team":"data"},
			"trigger":{"type":"interval","every":"10m","startAt":"2026-01-01T00:00:00Z"},
			"action":{"type":"http","method":"POST","url":"https://x.example/hook","headers":{"Authorization":{"fromSecret":"tok"},"X":"y"},"timeout":"30s"},
			"policy":{"maxRetries":3,"retryInterval":"1m","backoff":"exponential","timeout":"none","onSuccess":[{"task":"next","params":{"a":"b"}}],"notify":["ops"]}}`, true},
		{"task with a window, maxRuns and jitter", "PUT /v1/tasks/{name}", `{"trigger":{"type":"cron","expression":"0 9 * * *","timezone":"Europe/Berlin",
			"startAt":"2026-01-01T00:00:00Z","endAt":"2026-12-31T00:00:00+01:00","maxRuns":30,"jitter":"10m"},"action":{"type":"shell","command":"x"}}`, true},
		{"task with a numeric jitter", "PUT /v1/tasks/{name}", `{"trigger":{"type":"cron","expression":"* * * * *","jitter":30},"action":{"type":"shell","command":"x"}}`, false},
		{"task with an unknown field", "PUT /v1/tasks/{name}", `{"trigger":{"type":"cron","expression":"* * * * *","bogus":1},"action":{"type":"shell","command":"x"}}`, false},
		{"task with a numeric timeout", "PUT /v1/tasks/{name}", `{"trigger":{"type":"cron","expression":"* * * * *"},"action":{"type":"shell","command":"x","timeout":30}}`, false},
		{"env value of two kinds", "PUT /v1/tasks/{name}", `{"trigger":{"type":"once"},"action":{"type":"shell","command":"x","env":{"A":{"fromSecret":"s","text":"t"}}}}`, false},
		{"one submission", "POST /v1/tasks/{name}/submit", `{"payload":{"n":1},"at":"2030-01-01T00:00:00Z","idempotencyKey":"k1"}`, true},
		{"a batch of submissions", "POST /v1/tasks/{name}/submit", `[{"delay":"1m"},{"payload":[1,2]}]`, true},
		{"submission with a numeric delay", "POST /v1/tasks/{name}/submit", `{"delay":60}`, false},
		{"trigger with params", "POST /v1/tasks/{name}/trigger", `{"params":{"date":"2026-01-01"},"idempotencyKey":"k"}`, true},
		{"re-run of failed and terminated", "POST /v1/tasks/{name}/rerun", `{"from":"2026-01-01T00:00:00Z","to":"2026-01-02T00:00:00Z","states":["FAILED","TERMINATED"]}`, true},
		{"re-run of a running state", "POST /v1/tasks/{name}/rerun", `{"from":"2026-01-01T00:00:00Z","to":"2026-01-02T00:00:00Z","states":["RUNNING"]}`, false},
		{"email channel", "PUT /v1/channels/{name}", `{"type":"email","email":{"smtp":"smtp.example:587","from":"ax@example","to":["ops@example"]}}`, true},
		{"channel with an unknown field", "PUT /v1/channels/{name}", `{"type":"webhook","url":"https://h.example","bogus":true}`, false},
		{"dingtalk channel", "PUT /v1/channels/{name}", `{"type":"dingtalk","url":"https://oapi.dingtalk.com/robot/send?access_token=t","secret":"SECx"}`, true},
		{"feishu channel", "PUT /v1/channels/{name}", `{"type":"feishu","url":"https://open.feishu.cn/open-apis/bot/v2/hook/h"}`, true},
		{"channel of an unknown type", "PUT /v1/channels/{name}", `{"type":"teams","url":"https://h.example"}`, false},
		{"task with a rollout", "PUT /v1/tasks/{name}", `{"trigger":{"type":"interval","every":"1m"},"action":{"type":"shell","command":"x"},
			"rollout":{"percent":10,"promoteAfter":3,"testLabels":{"env":"test"},"abortOnFailure":false}}`, true},
		{"rollout without promoteAfter", "PUT /v1/tasks/{name}", `{"trigger":{"type":"once"},"action":{"type":"shell","command":"x"},"rollout":{"percent":10}}`, false},
		{"silence until", "POST /v1/silences", `{"rule":"failed","until":"2030-01-01T00:00:00Z","comment":"maintenance"}`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := visit(requestSchema(t, doc, tt.pattern), tt.body)
			if got := err == nil; got != tt.valid {
				t.Errorf("valid = %v (%v), want %v", got, err, tt.valid)
			}
		})
	}
}

// TestOpenAPI_Responses validates what the model types encode to, zero
// values included (their nulls), against the documented schemas.
func TestOpenAPI_Responses(t *testing.T) {
	doc := loadOpenAPI(t)
	now := model.Time{Time: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	tests := []struct {
		schema string
		v      any
	}{
		{"Task", model.Task{Name: "daily", Trigger: model.Trigger{Type: "cron", Expression: "0 2 * * *"},
			Action: model.Action{Type: "shell", Command: "x", Env: map[string]model.Value{"A": model.SecretValue("s"), "B": model.TextValue("b")}},
			Policy: model.Policy{Timeout: model.NoTimeout}, Version: 3, CreatedAt: now, NextFireTimes: []model.Time{now}}},
		{"Task", model.Task{}},
		{"Task", model.Task{Name: "done", Trigger: model.Trigger{Type: "interval", Every: model.Duration(time.Minute), StartAt: &now, EndAt: &now,
			MaxRuns: 3, Jitter: model.Duration(time.Second)}, Runs: 3, Completed: "maxRuns 3 reached (3 runs)"}},
		{"Task", model.Task{Name: "export", Trigger: model.Trigger{Type: "event"},
			Params: map[string]model.ParamSpec{"limit": {Type: model.ParamInteger, Required: true}, "region": {Enum: []string{"eu"}, Default: new("eu"), Pattern: "e.", Description: "d"}},
			Policy: model.Policy{Overlap: model.OverlapReplace, KeepSuccessful: 3, KeepFailed: 2, Deadline: &model.Deadline{Within: model.Duration(time.Hour), By: "06:00"}}}},
		{"TaskFires", live.TaskFires{Timezone: "UTC", Fires: []live.FirePreview{}, Completed: "endAt 2026-01-02T03:04:05.000Z passed"}},
		{"TaskList", model.TaskList{}},
		{"TaskHistory", model.TaskHistory{}},
		{"WriteResult", model.WriteResult{}},
		{"WriteResult", model.WriteResult{Name: "daily", Version: 1, Changed: true, Created: true}},
		{"TaskPlan", model.TaskPlan{Name: "daily", Op: model.PlanUpdate, Version: 3, Task: &model.Task{Name: "daily"}, Current: &model.Task{Name: "daily", Version: 3, CreatedAt: now}}},
		{"TaskPlan", model.TaskPlan{Name: "daily", Op: model.PlanCreate, Task: &model.Task{Name: "daily"}}},
		{"Instance", model.Instance{}},
		{"Instance", model.Instance{ID: "0000000000100000", TaskVersion: 4, Canary: true}},
		{"Rollout", model.Rollout{}},
		{"Rollout", model.Rollout{Task: "daily", Phase: model.RolloutRolledBack, Stable: 2, Canary: 3, Percent: 50, PromoteAfter: 3,
			TestLabels: map[string]string{"env": "test"}, Fires: 2, Failures: 1, StartedAt: now, EndedAt: &now, Reason: "canary instance x failed"}},
		{"InstanceList", model.InstanceList{}},
		{"ApprovalStatus", approval.Status{}},
		{"ApprovalStatus", approval.Status{ID: "0000000000100000", Attempt: 1, Decision: approval.Rejected, State: "CANCELED", CurrentAttempt: 1, By: "alice", Comment: "no"}},
		{"SubmitResult", model.SubmitResult{Instances: []model.Submitted{{ID: "0000000000100000", ScheduledAt: now, State: "SCHEDULED"}}}},
		{"BackfillResult", model.BackfillResult{}},
		{"RerunResult", model.RerunResult{}},
		{"RerunResult", model.RerunResult{Rerun: 1, Instances: []model.Submitted{{ID: "0000000000100000", ScheduledAt: now, State: "BLOCKED"}}}},
		{"Health", member.Health{}},
		{"ClusterStatus", model.ClusterStatus{}},
		{"ExecutorList", model.ExecutorList{}},
		{"Overview", live.Overview{}},
		{"Upcoming", live.Upcoming{}},
		{"AlertList", model.AlertList{}},
		{"Silence", model.Silence{}},
		{"ACLToken", model.ACLToken{}},
		{"ACLTokenList", model.ACLTokenList{}},
		{"SecretList", model.SecretList{}},
		{"Channel", channel.Channel{Type: "webhook", URL: "https://h.example"}},
		{"Channel", channel.Channel{Type: channel.TypeWeCom, URL: "https://qyapi.weixin.qq.com/(redacted)"}},
		{"ChannelList", channel.List{}},
		{"ChannelTest", pages.ChannelTest{Channel: "ops", Type: "webhook", Error: "answered 404 Not Found: no", Permanent: true, TookMs: 3, Node: "n1"}},
		{"AuditPage", pages.AuditPage{}},
		{"AuditPage", pages.AuditPage{Entries: []pages.AuditEntry{{Task: "daily", Version: 2, Op: "update", Actor: "alice", Time: now,
			Definition: &model.Task{Name: "daily", Version: 2}, Previous: &model.Task{Name: "daily", Version: 1}}}, NextCursor: "1.2.daily"}},
		{"ErrorBody", model.ErrorBody{Error: &model.Error{Code: model.CodeInvalid, Message: "bad", Field: "trigger.expression"}}},
	}
	for _, tt := range tests {
		t.Run(tt.schema, func(t *testing.T) {
			ref := doc.Components.Schemas[tt.schema]
			if ref == nil {
				t.Fatalf("no schema %s", tt.schema)
			}
			b, err := json.Marshal(tt.v)
			if err != nil {
				t.Fatal(err)
			}
			if err := visit(ref.Value, string(b)); err != nil {
				t.Errorf("%s: %v", b, err)
			}
		})
	}
}
