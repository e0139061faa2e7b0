package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/ax-scheduler/ax/api"
	"github.com/ax-scheduler/ax/api/pages"
	"github.com/ax-scheduler/ax/model"
)

// The fakes of the optional backends: the audit (GET /v1/audit) and the
// test send (POST /v1/channels/{name}/test).

// fakePages is the console pages' backend (pages.Backend).
type fakePages struct{ *fakeBackend }

func (f fakePages) AttemptLog(ctx context.Context, id string, attempt int, offset int64) (*model.InstanceLog, error) {
	f.record(ctx, call{Method: "AttemptLog", Name: id, N: attempt, Offset: offset})
	if f.Err != nil {
		return nil, f.Err
	}
	return &model.InstanceLog{InstanceID: id, Attempt: attempt}, nil
}

func (f fakePages) Audit(ctx context.Context, af pages.AuditFilter) (*pages.AuditPage, error) {
	f.record(ctx, call{Method: "Audit", Name: af.Task, Cmd: af.Actor + "|" + af.Cursor, N: af.Limit})
	if f.Err != nil {
		return nil, f.Err
	}
	def := &model.Task{Name: "daily", Action: model.Action{Type: model.ActionShell, Command: "x",
		Env: map[string]model.Value{"TOKEN": model.TextValue("plain-credential")}}}
	return &pages.AuditPage{Entries: []pages.AuditEntry{{Task: "daily", Version: 2, Op: "update", Actor: "alice", Definition: def, Previous: def}}}, nil
}

func (f fakeChannels) TestChannel(ctx context.Context, c api.Caller, name string) (*pages.ChannelTest, error) {
	f.record(ctx, call{Method: "TestChannel", Caller: c, Name: name})
	if f.Err != nil {
		return nil, f.Err
	}
	return &pages.ChannelTest{Channel: name, Type: "webhook", Delivered: true, Node: "n1"}, nil
}

// TestServer_Audit: GET /v1/audit passes its filters and page to the
// backend, refuses a bad limit or task naming the field before reading,
// and shows a reader the definitions with literal env values redacted,
// as GET /v1/tasks/{name}/history does (a writer sees them).
func TestServer_Audit(t *testing.T) {
	auth := tokenAuth(roleTokens)
	for _, tc := range []struct {
		token  string
		redact bool
	}{{"reader", true}, {"operator", true}, {"writer", false}} {
		fb := &fakeBackend{}
		rec := serve(t, api.Config{Auth: auth}, fb, request{method: http.MethodGet, path: "/v1/audit?task=daily&actor=alice&limit=5&cursor=c1",
			header: map[string]string{"Authorization": "Bearer " + tc.token}})
		if rec.Code != 200 {
			t.Fatalf("%s: %d %s", tc.token, rec.Code, rec.Body)
		}
		var p pages.AuditPage
		if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil {
			t.Fatal(err)
		}
		body := rec.Body.String()
		if got := strings.Contains(body, "plain-credential"); got == tc.redact || len(p.Entries) != 1 || p.Entries[0].Previous == nil {
			t.Errorf("%s sees %s", tc.token, body)
		}
		if c := fb.calls; len(c) != 1 || c[0].Name != "daily" || c[0].Cmd != "alice|c1" || c[0].N != 5 {
			t.Errorf("%s: calls %+v", tc.token, c)
		}
	}
	for _, q := range []struct{ query, field string }{{"limit=0", "limit"}, {"limit=x", "limit"}, {"task=Bad/Name", "task"}} {
		fb := &fakeBackend{}
		rec := serve(t, api.Config{}, fb, request{method: http.MethodGet, path: "/v1/audit?" + q.query})
		if e := errorOf(t, rec); rec.Code != 400 || e.Field != q.field || len(fb.calls) != 0 {
			t.Errorf("%s: %d %+v after calls %+v, want a 400 naming %s and no read", q.query, rec.Code, e, fb.calls, q.field)
		}
	}
}

// TestServer_ChannelTest: a test send is an operator's (a reader gets a
// 403 and sends nothing), names the caller to the backend, and answers
// the backend's outcome.
func TestServer_ChannelTest(t *testing.T) {
	auth := tokenAuth(roleTokens)
	fb := &fakeBackend{}
	rec := serve(t, api.Config{Auth: auth}, fb, request{method: http.MethodPost, path: "/v1/channels/ops/test",
		header: map[string]string{"Authorization": "Bearer reader"}})
	if rec.Code != 403 || len(fb.calls) != 0 {
		t.Errorf("a reader's test send: %d, calls %+v", rec.Code, fb.calls)
	}
	rec = serve(t, api.Config{Auth: auth}, fb, request{method: http.MethodPost, path: "/v1/channels/ops/test",
		header: map[string]string{"Authorization": "Bearer operator"}})
	var got pages.ChannelTest
	if err := json.Unmarshal(rec.Body.Bytes(), &got); rec.Code != 200 || err != nil || !got.Delivered || got.Channel != "ops" {
		t.Errorf("an operator's test send: %d %s", rec.Code, rec.Body)
	}
	if c := fb.calls; len(c) != 1 || c[0].Name != "ops" || c[0].Caller.Actor != "o" {
		t.Errorf("calls %+v", c)
	}
	rec = serve(t, api.Config{}, &fakeBackend{}, request{method: http.MethodPost, path: "/v1/channels/Bad%20Name/test"})
	if e := errorOf(t, rec); rec.Code != 400 || e.Field != "name" {
		t.Errorf("a bad name: %d %+v", rec.Code, e)
	}
}
