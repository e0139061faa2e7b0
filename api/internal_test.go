package api_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/api"
	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/model/member"
)

// serveInternal sends req to a node-to-node handler built from cfg with fb
// as its backend.
func serveInternal(t *testing.T, cfg api.InternalConfig, fb *fakeBackend, req request) *httptest.ResponseRecorder {
	t.Helper()
	cfg.Backend = fakeInternal{fb}
	var body io.Reader
	if req.body != "" {
		body = strings.NewReader(req.body)
	}
	r := httptest.NewRequest(req.method, req.path, body)
	for k, v := range req.header {
		r.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	api.NewInternal(cfg).ServeHTTP(rec, r)
	return rec
}

// TestInternal_Endpoints: each node-to-node endpoint calls its backend
// method (a forwarded request marked as such) and answers its result.
func TestInternal_Endpoints(t *testing.T) {
	clock := time.UnixMilli(1_700_000_000_123)
	tests := []struct {
		name      string
		backend   *fakeBackend
		req       request
		wantCalls []call
		wantBody  any
	}{
		{"forwarded apply", &fakeBackend{Applied: []byte(`{"ok":true}`)},
			request{method: http.MethodPost, path: "/v1/internal/apply", body: "\x01cmd", header: map[string]string{api.HeaderForwarded: "n2"}},
			[]call{{Method: "ApplyForwarded", Cmd: "\x01cmd", Forwarded: true}}, &map[string]bool{"ok": true}},
		{"read index", &fakeBackend{ReadIdx: 42}, request{method: http.MethodGet, path: "/v1/internal/readindex"},
			[]call{{Method: "ReadIndex"}}, &map[string]uint64{"index": 42}},
		{"wall clock", &fakeBackend{}, request{method: http.MethodGet, path: "/v1/internal/time"},
			nil, &member.ClockReading{UnixMs: clock.UnixMilli()}},
		{"applied", &fakeBackend{}, request{method: http.MethodGet, path: "/v1/internal/applied?index=7"},
			[]call{{Method: "WaitApplied"}}, &map[string]uint64{"index": 7}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := serveInternal(t, api.InternalConfig{WallClock: func() time.Time { return clock }}, tt.backend, tt.req)
			if rec.Code != http.StatusOK {
				t.Fatalf("status: got %d, want 200 (body %s)", rec.Code, rec.Body)
			}
			if got := tt.backend.Calls(); !reflect.DeepEqual(got, tt.wantCalls) {
				t.Errorf("backend calls:\ngot  %+v\nwant %+v", got, tt.wantCalls)
			}
			if got, want := rec.Header().Get("Content-Type"), "application/json"; got != want {
				t.Errorf("Content-Type: got %q, want %q", got, want)
			}
			got := reflect.New(reflect.TypeOf(tt.wantBody).Elem()).Interface()
			decodeBody(t, rec, got)
			if !reflect.DeepEqual(got, tt.wantBody) {
				t.Errorf("body:\ngot  %+v\nwant %+v", got, tt.wantBody)
			}
		})
	}
}

// TestInternal_MembersOnly: every node-to-node route, and any other path
// under the prefix, refuses a request without credentials (401) and one
// with a token of any role, admin included (403), before the backend hears
// of it; a member is served, and told 404 on a path that does not exist.
func TestInternal_MembersOnly(t *testing.T) {
	routes := api.NewInternal(api.InternalConfig{}).Routes()
	if len(routes) != 4 {
		t.Fatalf("got %d internal routes %v, want apply, readindex, time and applied", len(routes), routes)
	}
	reqs := []request{{method: http.MethodGet, path: "/v1/internal/nothing"}}
	for _, rt := range routes {
		if rt.Access != api.AccessMember {
			t.Errorf("%s: access %q, want %q", rt.Pattern, rt.Access, api.AccessMember)
		}
		reqs = append(reqs, sampleRequest(rt.Pattern))
	}
	for _, req := range reqs {
		for _, role := range []string{"", "reader", "operator", "writer", "admin", "executor", "member"} {
			t.Run(req.method+" "+req.path+" as "+role, func(t *testing.T) {
				if role != "" {
					req.header = map[string]string{"Authorization": "Bearer " + role}
				}
				fb := &fakeBackend{Applied: []byte(`{}`)}
				rec := serveInternal(t, api.InternalConfig{Auth: roleTokens}, fb, req)
				want := http.StatusForbidden
				switch {
				case role == "":
					want = http.StatusUnauthorized
				case role == "member" && strings.HasSuffix(req.path, "/nothing"):
					want = http.StatusNotFound
				case role == "member":
					want = http.StatusOK
				}
				if rec.Code != want {
					t.Fatalf("status: got %d, want %d (body %s)", rec.Code, want, rec.Body)
				}
				if want != http.StatusOK {
					errorOf(t, rec)
					if len(fb.Calls()) > 0 {
						t.Errorf("a refused request reached the backend: %v", fb.Methods())
					}
				}
			})
		}
	}
}

// TestInternal_ErrorMapping: a backend error is answered with its status.
func TestInternal_ErrorMapping(t *testing.T) {
	for _, req := range []request{
		{method: http.MethodPost, path: "/v1/internal/apply", body: "x"},
		{method: http.MethodGet, path: "/v1/internal/readindex"},
	} {
		t.Run(req.path, func(t *testing.T) {
			fb := &fakeBackend{Err: fmt.Errorf("wrapped: %w", model.ErrUnavailable)}
			rec := serveInternal(t, api.InternalConfig{}, fb, req)
			if rec.Code != http.StatusServiceUnavailable {
				t.Errorf("status: got %d, want 503 (body %s)", rec.Code, rec.Body)
			}
			if e := errorOf(t, rec); e.Code != model.CodeUnavailable {
				t.Errorf("code: got %q, want %q", e.Code, model.CodeUnavailable)
			}
			if got := len(fb.Calls()); got != 1 {
				t.Errorf("backend calls: got %d, want 1", got)
			}
		})
	}
}

// TestInternal_Mount: the mounted handler sends the prefix to the internal
// handler and every other path to the public API.
func TestInternal_Mount(t *testing.T) {
	fb := &fakeBackend{ReadIdx: 7, Task: &model.Task{Name: "daily"}}
	h := api.NewInternal(api.InternalConfig{Backend: fakeInternal{fb}, Auth: roleTokens}).Mount(api.New(withFakes(fb, api.Config{Auth: roleTokens})))
	tests := []struct {
		name, token, method, path string
		wantStatus                int
		wantCalls                 []string
	}{
		{"member on the internal prefix", "member", http.MethodGet, "/v1/internal/readindex", 200, []string{"ReadIndex"}},
		{"admin on the internal prefix", "admin", http.MethodGet, "/v1/internal/readindex", 403, nil},
		{"reader on the public API", "reader", http.MethodGet, "/v1/tasks/daily", 200, []string{"GetTask"}},
		{"the prefix's parent is public", "reader", http.MethodGet, "/v1/internal", 404, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := len(fb.Calls())
			r := httptest.NewRequest(tt.method, tt.path, nil)
			r.Header.Set("Authorization", "Bearer "+tt.token)
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, r)
			if rec.Code != tt.wantStatus {
				t.Fatalf("status: got %d, want %d (body %s)", rec.Code, tt.wantStatus, rec.Body)
			}
			var got []string
			for _, c := range fb.Calls()[before:] {
				got = append(got, c.Method)
			}
			if !reflect.DeepEqual(got, tt.wantCalls) {
				t.Errorf("backend calls: got %v, want %v", got, tt.wantCalls)
			}
		})
	}
}
