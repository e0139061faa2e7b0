package api_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/api"
	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/model/approval"
)

// fixedNow is the node clock injected through api.Config.Now.
var fixedNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func fixedClock() time.Time { return fixedNow }

// timeAt returns a *model.Time for t, as decoding an "at" field gives.
func timeAt(t time.Time) *model.Time { return &model.Time{Time: t.UTC()} }

// submitReq returns a POST to the submit endpoint of task daily.
func submitReq(body string) request {
	return request{method: http.MethodPost, path: "/v1/tasks/daily/submit", body: body}
}

// triggerReq returns a POST to the trigger endpoint of task daily.
func triggerReq(body string) request {
	return request{method: http.MethodPost, path: "/v1/tasks/daily/trigger", body: body}
}

// getReq returns a GET of path.
func getReq(path string) request { return request{method: http.MethodGet, path: path} }

// batch returns a JSON array of n copies of elem.
func batch(n int, elem string) string {
	return "[" + strings.TrimSuffix(strings.Repeat(elem+",", n), ",") + "]"
}

// compact returns raw without insignificant whitespace.
func compact(t *testing.T, raw json.RawMessage) json.RawMessage {
	t.Helper()
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		t.Fatalf("payload %q: %v", raw, err)
	}
	return b.Bytes()
}

// checkRejected asserts a 4xx error answer with the given code and field
// that reached no backend method.
func checkRejected(t *testing.T, fb *fakeBackend, rec *httptest.ResponseRecorder, wantStatus int, wantCode, wantField string) {
	t.Helper()
	if got := fb.Methods(); len(got) != 0 {
		t.Errorf("backend calls: got %v, want none", got)
	}
	if rec.Code != wantStatus {
		t.Errorf("status: got %d, want %d (body %s)", rec.Code, wantStatus, rec.Body)
	}
	e := errorOf(t, rec)
	if e.Code != wantCode {
		t.Errorf("code: got %q, want %q", e.Code, wantCode)
	}
	if e.Field != wantField {
		t.Errorf("field: got %q, want %q (message %q)", e.Field, wantField, e.Message)
	}
}

func TestServer_Submit(t *testing.T) {
	anon := api.Caller{Actor: "anonymous"}
	tests := []struct {
		name       string
		cfg        api.Config
		req        request
		wantCaller api.Caller
		wantReqs   []model.SubmitRequest
	}{
		{
			name: "single object with payload, delay and key",
			req:  submitReq(`{"payload": {"a": [1, 2], "b": "x"}, "delay": "90s", "idempotencyKey": "k1"}`),
			wantReqs: []model.SubmitRequest{
				{Payload: json.RawMessage(`{"a": [1, 2], "b": "x"}`), Delay: model.Duration(90 * time.Second), IdempotencyKey: "k1"},
			},
		},
		{
			name:     "single object with at",
			req:      submitReq(`{"payload":"s","at":"2026-03-01T13:00:00+01:00"}`),
			wantReqs: []model.SubmitRequest{{Payload: json.RawMessage(`"s"`), At: timeAt(fixedNow)}},
		},
		{
			name:     "at equal to now",
			req:      submitReq(`{"at":"2026-03-01T12:00:00Z"}`),
			wantReqs: []model.SubmitRequest{{At: timeAt(fixedNow)}},
		},
		{
			name:     "empty object",
			req:      submitReq(`{}`),
			wantReqs: []model.SubmitRequest{{}},
		},
		{
			name: "array keeps order and raw payloads",
			req: submitReq("\n\t [" +
				`{"payload":[1,  2],"delay":"5m"},` +
				`{"payload":{"k" : true},"at":"2030-01-02T03:04:05.678Z","idempotencyKey":"b"},` +
				`{"payload":12.50}]`),
			wantReqs: []model.SubmitRequest{
				{Payload: json.RawMessage(`[1,  2]`), Delay: model.Duration(5 * time.Minute)},
				{Payload: json.RawMessage(`{"k" : true}`), At: timeAt(time.Date(2030, 1, 2, 3, 4, 5, 678e6, time.UTC)), IdempotencyKey: "b"},
				{Payload: json.RawMessage(`12.50`)},
			},
		},
		{
			name:     "array of one",
			req:      submitReq(`[{"delay":"1s"}]`),
			wantReqs: []model.SubmitRequest{{Delay: model.Duration(time.Second)}},
		},
		{
			name:     "payload at the configured limit",
			cfg:      api.Config{MaxPayload: 8},
			req:      submitReq(`{"payload":"abcdef"}`),
			wantReqs: []model.SubmitRequest{{Payload: json.RawMessage(`"abcdef"`)}},
		},
		{
			name:     "idempotency key of 256 bytes",
			req:      submitReq(`{"idempotencyKey":"` + strings.Repeat("k", 256) + `"}`),
			wantReqs: []model.SubmitRequest{{IdempotencyKey: strings.Repeat("k", 256)}},
		},
		{
			name:     "largest batch",
			req:      submitReq(batch(model.MaxSubmitBatch, `{}`)),
			wantReqs: make([]model.SubmitRequest, model.MaxSubmitBatch),
		},
		{
			name:       "caller from headers",
			req:        request{method: http.MethodPost, path: "/v1/tasks/daily/submit", body: `{}`, header: map[string]string{"X-AX-Actor": "ci", "Idempotency-Key": "r1"}},
			wantCaller: api.Caller{Actor: "anonymous (for ci)", RequestID: "r1"},
			wantReqs:   []model.SubmitRequest{{}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := &model.SubmitResult{Instances: []model.Submitted{{ID: "00000000000000aa", State: model.StateScheduled, ScheduledAt: model.UnixMilli(1_800_000_000_000)}}}
			fb := &fakeBackend{Submitted: res}
			cfg := tt.cfg
			cfg.Now = fixedClock
			rec := serve(t, cfg, fb, tt.req)
			if rec.Code != http.StatusOK {
				t.Fatalf("status: got %d, want 200 (body %s)", rec.Code, rec.Body)
			}
			wantCaller := tt.wantCaller
			if wantCaller == (api.Caller{}) {
				wantCaller = anon
			}
			want := []call{{Method: "Submit", Caller: wantCaller, Name: "daily", Submit: tt.wantReqs}}
			if got := fb.Calls(); !reflect.DeepEqual(got, want) {
				t.Errorf("backend calls:\ngot  %+v\nwant %+v", got, want)
			}
			var got model.SubmitResult
			decodeBody(t, rec, &got)
			if !reflect.DeepEqual(&got, res) {
				t.Errorf("body: got %+v, want %+v", got, *res)
			}
		})
	}
}

func TestServer_SubmitBadInput(t *testing.T) {
	past := `"2026-03-01T11:59:59.999Z"`
	bigPayload := `"` + strings.Repeat("p", model.DefaultMaxPayload) + `"`
	tests := []struct {
		name       string
		cfg        api.Config
		req        request
		wantStatus int
		wantCode   string
		wantField  string
	}{
		{"negative delay", api.Config{}, submitReq(`{"delay":"-1s"}`), 400, model.CodeInvalid, "delay"},
		{"negative delay in element 2", api.Config{}, submitReq(`[{},{"delay":"1s"},{"delay":"-5m"}]`), 400, model.CodeInvalid, "[2].delay"},
		{"delay and at", api.Config{}, submitReq(`{"delay":"5m","at":"2030-01-01T00:00:00Z"}`), 400, model.CodeInvalid, "delay"},
		{"delay and at in element 1", api.Config{}, submitReq(`[{},{"delay":"5m","at":"2030-01-01T00:00:00Z"}]`), 400, model.CodeInvalid, "[1].delay"},
		{"at in the past", api.Config{}, submitReq(`{"at":` + past + `}`), 400, model.CodeInvalid, "at"},
		{"at in the past in element 1", api.Config{}, submitReq(`[{"at":"2030-01-01T00:00:00Z"},{"at":` + past + `}]`), 400, model.CodeInvalid, "[1].at"},
		{"at not RFC 3339", api.Config{}, submitReq(`{"at":"tomorrow"}`), 400, model.CodeInvalid, "at"},
		{"at not RFC 3339 in element 0", api.Config{}, submitReq(`[{"at":"tomorrow"}]`), 400, model.CodeInvalid, "[0].at"},
		{"numeric delay", api.Config{}, submitReq(`{"delay":5}`), 400, model.CodeInvalid, "delay"},
		{"numeric delay in element 1", api.Config{}, submitReq(`[{},{"delay":5}]`), 400, model.CodeInvalid, "[1].delay"},
		{"payload over the default limit", api.Config{}, submitReq(`{"payload":` + bigPayload + `}`), 413, model.CodeTooLarge, "payload"},
		{"payload over a configured limit", api.Config{MaxPayload: 8}, submitReq(`{"payload":"abcdefg"}`), 413, model.CodeTooLarge, "payload"},
		{"payload over a configured limit in element 1", api.Config{MaxPayload: 8}, submitReq(`[{"payload":1},{"payload":[1,2,3,4,5]}]`), 413, model.CodeTooLarge, "[1].payload"},
		{"idempotency key over 256", api.Config{}, submitReq(`{"idempotencyKey":"` + strings.Repeat("k", 257) + `"}`), 400, model.CodeInvalid, "idempotencyKey"},
		{"idempotency key over 256 in element 0", api.Config{}, submitReq(`[{"idempotencyKey":"` + strings.Repeat("k", 257) + `"}]`), 400, model.CodeInvalid, "[0].idempotencyKey"},
		{"unknown field", api.Config{}, submitReq(`{"payload":1,"bogus":1}`), 400, model.CodeInvalid, "bogus"},
		{"unknown field in element 0", api.Config{}, submitReq(`[{"bogus":1}]`), 400, model.CodeInvalid, "[0].bogus"},
		{"unknown field in element 1", api.Config{}, submitReq(`[{"payload":{"bogus":1}},{"payload":1,"bogus":1}]`), 400, model.CodeInvalid, "[1].bogus"},
		{"element not an object", api.Config{}, submitReq(`[{},1]`), 400, model.CodeInvalid, "[1]"},
		{"empty array", api.Config{}, submitReq(`[]`), 400, model.CodeInvalid, ""},
		{"array over the batch limit", api.Config{}, submitReq(batch(model.MaxSubmitBatch+1, `{}`)), 413, model.CodeTooLarge, ""},
		{"malformed JSON", api.Config{}, submitReq(`{"delay":`), 400, model.CodeInvalid, ""},
		{"malformed array", api.Config{}, submitReq(`[{},`), 400, model.CodeInvalid, ""},
		{"syntax error", api.Config{}, submitReq(`{"delay": nope}`), 400, model.CodeInvalid, ""},
		{"two JSON values", api.Config{}, submitReq(`{} {}`), 400, model.CodeInvalid, ""},
		{"array then trailing data", api.Config{}, submitReq(`[{}] x`), 400, model.CodeInvalid, ""},
		{"empty body", api.Config{}, submitReq(""), 400, model.CodeInvalid, ""},
		{"body over MaxBody", api.Config{MaxBody: 16}, submitReq(`{"payload":"` + strings.Repeat("a", 32) + `"}`), 413, model.CodeTooLarge, ""},
		{"uppercase task name", api.Config{}, request{method: http.MethodPost, path: "/v1/tasks/Daily/submit", body: `{}`}, 400, model.CodeInvalid, "name"},
		{"task name starting with dash", api.Config{}, request{method: http.MethodPost, path: "/v1/tasks/-d/submit", body: `{}`}, 400, model.CodeInvalid, "name"},
		{"Idempotency-Key header over 128", api.Config{}, request{method: http.MethodPost, path: "/v1/tasks/daily/submit", body: `{}`,
			header: map[string]string{"Idempotency-Key": strings.Repeat("k", 129)}}, 400, model.CodeInvalid, "Idempotency-Key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fb := &fakeBackend{}
			cfg := tt.cfg
			cfg.Now = fixedClock
			rec := serve(t, cfg, fb, tt.req)
			checkRejected(t, fb, rec, tt.wantStatus, tt.wantCode, tt.wantField)
		})
	}
}

func TestServer_Trigger(t *testing.T) {
	long := strings.Repeat("v", 4096)
	tests := []struct {
		name        string
		req         request
		wantCaller  api.Caller
		wantTrigger model.TriggerRequest
	}{
		{"no body", triggerReq(""), api.Caller{Actor: "anonymous"}, model.TriggerRequest{}},
		{"empty object", triggerReq(`{}`), api.Caller{Actor: "anonymous"}, model.TriggerRequest{}},
		{"params and key", triggerReq(`{"params":{"date":"2026-03-01","_x1":"","Region":"eu"},"idempotencyKey":"run-1"}`), api.Caller{Actor: "anonymous"},
			model.TriggerRequest{Params: map[string]string{"date": "2026-03-01", "_x1": "", "Region": "eu"}, IdempotencyKey: "run-1"}},
		{"value of 4096 bytes and key of 256", triggerReq(`{"params":{"v":"` + long + `"},"idempotencyKey":"` + strings.Repeat("k", 256) + `"}`), api.Caller{Actor: "anonymous"},
			model.TriggerRequest{Params: map[string]string{"v": long}, IdempotencyKey: strings.Repeat("k", 256)}},
		{"name of 64 characters", triggerReq(`{"params":{"` + strings.Repeat("p", 64) + `":"x"}}`), api.Caller{Actor: "anonymous"},
			model.TriggerRequest{Params: map[string]string{strings.Repeat("p", 64): "x"}}},
		{"caller from headers", request{method: http.MethodPost, path: "/v1/tasks/daily/trigger", header: map[string]string{"X-AX-Actor": "alice", "Idempotency-Key": "r9"}},
			api.Caller{Actor: "anonymous (for alice)", RequestID: "r9"}, model.TriggerRequest{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := &model.Submitted{ID: "00000000000000ab", State: model.StateReady, ScheduledAt: model.UnixMilli(1_772_366_400_000)}
			fb := &fakeBackend{Triggered: res}
			rec := serve(t, api.Config{}, fb, tt.req)
			if rec.Code != http.StatusOK {
				t.Fatalf("status: got %d, want 200 (body %s)", rec.Code, rec.Body)
			}
			want := []call{{Method: "Trigger", Caller: tt.wantCaller, Name: "daily", Trigger: tt.wantTrigger}}
			if got := fb.Calls(); !reflect.DeepEqual(got, want) {
				t.Errorf("backend calls:\ngot  %+v\nwant %+v", got, want)
			}
			var got model.Submitted
			decodeBody(t, rec, &got)
			if got != *res {
				t.Errorf("body: got %+v, want %+v", got, *res)
			}
		})
	}
}

func TestServer_TriggerBadInput(t *testing.T) {
	tests := []struct {
		name      string
		req       request
		wantField string
	}{
		{"param name starting with a digit", triggerReq(`{"params":{"1x":"v"}}`), "params.1x"},
		{"param name with a dash", triggerReq(`{"params":{"a-b":"v"}}`), "params.a-b"},
		{"param name with a dot", triggerReq(`{"params":{"a.b":"v"}}`), "params.a.b"},
		{"empty param name", triggerReq(`{"params":{"":"v"}}`), "params."},
		{"param name over 64", triggerReq(`{"params":{"` + strings.Repeat("p", 65) + `":"v"}}`), "params." + strings.Repeat("p", 65)},
		{"param value over 4096", triggerReq(`{"params":{"v":"` + strings.Repeat("v", 4097) + `"}}`), "params.v"},
		{"first of several bad params", triggerReq(`{"params":{"ok":"1","z-z":"v","a-a":"v","m-m":"v"}}`), "params.a-a"},
		{"param value not a string", triggerReq(`{"params":{"a":1}}`), "params"},
		{"unknown field", triggerReq(`{"params":{},"bogus":1}`), "bogus"},
		{"unknown field by case", triggerReq(`{"param":{"a":"b"}}`), "param"},
		{"idempotency key over 256", triggerReq(`{"idempotencyKey":"` + strings.Repeat("k", 257) + `"}`), "idempotencyKey"},
		{"array body", triggerReq(`[]`), ""},
		{"malformed JSON", triggerReq(`{"params":`), ""},
		{"two JSON values", triggerReq(`{} {}`), ""},
		{"uppercase task name", request{method: http.MethodPost, path: "/v1/tasks/Daily/trigger"}, "name"},
		{"X-AX-Actor over 128", request{method: http.MethodPost, path: "/v1/tasks/daily/trigger", header: map[string]string{"X-AX-Actor": strings.Repeat("a", 129)}}, "X-AX-Actor"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Repeated: a field chosen by map order would show up as flakiness.
			for range 5 {
				fb := &fakeBackend{}
				rec := serve(t, api.Config{}, fb, tt.req)
				checkRejected(t, fb, rec, http.StatusBadRequest, model.CodeInvalid, tt.wantField)
			}
		})
	}
}

func TestServer_ListInstances(t *testing.T) {
	list := &model.InstanceList{
		Instances:  []model.Instance{{ID: "00000000000000ff", Task: "daily", TaskVersion: 2, Source: model.SourceAPI, State: model.StateRunning, Attempts: 1}},
		NextCursor: "00000000000000fe",
	}
	tests := []struct {
		name       string
		path       string
		wantCalls  []call
		wantStatus int
	}{
		{"no filter", "/v1/instances", []call{{Method: "ListInstances"}}, 200},
		{"every filter", "/v1/instances?task=daily&state=RUNNING&since=2026-01-02T03:04:05Z&cursor=00000000000000ff&limit=1000",
			[]call{{Method: "ListInstances", Instances: model.InstanceFilter{
				Task: "daily", State: model.StateRunning, Since: *timeAt(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)), Cursor: "00000000000000ff", Limit: 1000,
			}}}, 200},
		{"since with offset and fraction", "/v1/instances?since=2026-01-02T11:04:05.250%2B08:00&limit=1",
			[]call{{Method: "ListInstances", Instances: model.InstanceFilter{Since: *timeAt(time.Date(2026, 1, 2, 3, 4, 5, 250e6, time.UTC)), Limit: 1}}}, 200},
		{"every state name", "/v1/instances?state=WAITING_APPROVAL",
			[]call{{Method: "ListInstances", Instances: model.InstanceFilter{State: model.StateWaitingApproval}}}, 200},
		{"consistent", "/v1/instances?consistent=true&task=daily",
			[]call{{Method: "ListInstances", Instances: model.InstanceFilter{Task: "daily"}}}, 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fb := &fakeBackend{Instances: list}
			rec := serve(t, api.Config{}, fb, getReq(tt.path))
			if rec.Code != tt.wantStatus {
				t.Fatalf("status: got %d, want %d (body %s)", rec.Code, tt.wantStatus, rec.Body)
			}
			if got := fb.Calls(); !reflect.DeepEqual(got, tt.wantCalls) {
				t.Errorf("backend calls:\ngot  %+v\nwant %+v", got, tt.wantCalls)
			}
			var got model.InstanceList
			decodeBody(t, rec, &got)
			if !reflect.DeepEqual(&got, list) {
				t.Errorf("body:\ngot  %+v\nwant %+v", got, *list)
			}
		})
	}
}

func TestServer_GetInstance(t *testing.T) {
	in := &model.Instance{ID: "00000000000000ff", Task: "daily", State: model.StateSuccess, Params: map[string]string{"a": "b"},
		Payload: json.RawMessage(`{"x":1}`), Events: []model.Event{{Type: "created", Time: model.UnixMilli(1_772_366_400_000)}}}
	tests := []struct {
		name       string
		path       string
		err        error
		wantCalls  []string
		wantStatus int
		wantID     string
	}{
		{"found", "/v1/instances/00000000000000ff", nil, []string{"GetInstance"}, 200, "00000000000000ff"},
		{"largest id", "/v1/instances/ffffffffffffffff", nil, []string{"GetInstance"}, 200, "ffffffffffffffff"},
		{"consistent", "/v1/instances/00000000000000ff?consistent=true", nil, []string{"GetInstance"}, 200, "00000000000000ff"},
		{"not found", "/v1/instances/00000000000000ff", model.Errorf(model.CodeNotFound, "no instance 00000000000000ff"), []string{"GetInstance"}, 404, "00000000000000ff"},
		{"not found sentinel wrapped", "/v1/instances/00000000000000ff?consistent=true", fmt.Errorf("get: %w", model.ErrNotFound), []string{"GetInstance"}, 404, "00000000000000ff"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fb := &fakeBackend{Instance: in, Err: tt.err}
			rec := serve(t, api.Config{}, fb, getReq(tt.path))
			if got := fb.Methods(); !reflect.DeepEqual(got, tt.wantCalls) {
				t.Errorf("backend calls: got %v, want %v", got, tt.wantCalls)
			}
			if calls := fb.Calls(); len(calls) > 0 {
				if got := calls[len(calls)-1].Name; got != tt.wantID {
					t.Errorf("id: got %q, want %q", got, tt.wantID)
				}
			}
			if rec.Code != tt.wantStatus {
				t.Fatalf("status: got %d, want %d (body %s)", rec.Code, tt.wantStatus, rec.Body)
			}
			if tt.wantStatus != http.StatusOK {
				if e := errorOf(t, rec); e.Code != model.CodeNotFound {
					t.Errorf("code: got %q, want %q", e.Code, model.CodeNotFound)
				}
				return
			}
			var got model.Instance
			decodeBody(t, rec, &got)
			// The response is indented, payload included: same JSON value,
			// other bytes.
			got.Payload = compact(t, got.Payload)
			if !reflect.DeepEqual(&got, in) {
				t.Errorf("body:\ngot  %+v\nwant %+v", got, *in)
			}
		})
	}
}

// TestServer_InstanceResult: GET /v1/instances/{id}/result answers the
// backend's result, its not found as a 404, and reads after a barrier
// with consistent=true.
func TestServer_InstanceResult(t *testing.T) {
	fb := &fakeBackend{}
	rec := serve(t, api.Config{}, fb, getReq("/v1/instances/00000000000000ff/result?consistent=true"))
	var got model.InstanceResult
	decodeBody(t, rec, &got)
	if rec.Code != 200 || got.InstanceID != "00000000000000ff" || string(compact(t, got.Result)) != `{"rows":1}` {
		t.Fatalf("got %d %+v", rec.Code, got)
	}
	if calls := fb.Methods(); !reflect.DeepEqual(calls, []string{"InstanceResult"}) {
		t.Errorf("backend calls %v", calls)
	}
	fb = &fakeBackend{Err: model.Errorf(model.CodeNotFound, "instance 00000000000000ff has no result: it is FAILED")}
	rec = serve(t, api.Config{}, fb, getReq("/v1/instances/00000000000000ff/result"))
	if e := errorOf(t, rec); rec.Code != 404 || !strings.Contains(e.Message, "has no result") {
		t.Errorf("no result: got %d %+v, want 404 saying why", rec.Code, e)
	}
}

func TestServer_TaskEvents(t *testing.T) {
	ev := &model.TaskEvents{Task: "daily", Events: []model.Event{{Type: "misfire", Time: model.UnixMilli(1_772_366_400_000), Message: "skipped 2"}}}
	tests := []struct {
		name       string
		path       string
		err        error
		wantCalls  []call
		wantStatus int
	}{
		{"events", "/v1/tasks/daily/events", nil, []call{{Method: "TaskEvents", Name: "daily"}}, 200},
		{"dotted name", "/v1/tasks/hook.v2/events", nil, []call{{Method: "TaskEvents", Name: "hook.v2"}}, 200},
		{"consistent", "/v1/tasks/daily/events?consistent=true", nil, []call{{Method: "TaskEvents", Name: "daily"}}, 200},
		{"not found", "/v1/tasks/daily/events", fmt.Errorf("events: %w", model.ErrNotFound), []call{{Method: "TaskEvents", Name: "daily"}}, 404},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fb := &fakeBackend{Events: ev, Err: tt.err}
			rec := serve(t, api.Config{}, fb, getReq(tt.path))
			if got := fb.Calls(); !reflect.DeepEqual(got, tt.wantCalls) {
				t.Errorf("backend calls:\ngot  %+v\nwant %+v", got, tt.wantCalls)
			}
			if rec.Code != tt.wantStatus {
				t.Fatalf("status: got %d, want %d (body %s)", rec.Code, tt.wantStatus, rec.Body)
			}
			if tt.wantStatus != http.StatusOK {
				if e := errorOf(t, rec); e.Code != model.CodeNotFound {
					t.Errorf("code: got %q, want %q", e.Code, model.CodeNotFound)
				}
				return
			}
			var got model.TaskEvents
			decodeBody(t, rec, &got)
			if !reflect.DeepEqual(&got, ev) {
				t.Errorf("body:\ngot  %+v\nwant %+v", got, *ev)
			}
		})
	}
}

// TestServer_InstanceReadsBadInput covers the read endpoints: bad input is
// refused before any backend call, ReadBarrier included.
func TestServer_InstanceReadsBadInput(t *testing.T) {
	tests := []struct {
		name      string
		path      string
		wantField string
	}{
		{"list lowercase state", "/v1/instances?state=running", "state"},
		{"list unknown state", "/v1/instances?state=DONE", "state"},
		{"list bad task", "/v1/instances?task=Daily", "task"},
		{"list bad cursor", "/v1/instances?cursor=xyz", "cursor"},
		{"list cursor of 15 hex digits", "/v1/instances?cursor=00000000000000f", "cursor"},
		{"list bad since", "/v1/instances?since=yesterday", "since"},
		{"list since without time", "/v1/instances?since=2026-01-02", "since"},
		{"list limit=0", "/v1/instances?limit=0", "limit"},
		{"list limit=1001", "/v1/instances?limit=1001", "limit"},
		{"list limit=abc", "/v1/instances?limit=abc", "limit"},
		{"list consistent=maybe", "/v1/instances?consistent=maybe", "consistent"},
		{"list bad state with consistent=true", "/v1/instances?consistent=true&state=running", "state"},
		{"get id xyz", "/v1/instances/xyz", "id"},
		{"get id of 15 hex digits", "/v1/instances/00000000000000f", "id"},
		{"get id of 17 hex digits", "/v1/instances/000000000000000ff", "id"},
		{"get id of 16 non-hex", "/v1/instances/zzzzzzzzzzzzzzzz", "id"},
		{"get id with a sign", "/v1/instances/+00000000000000f", "id"},
		{"get bad id with consistent=true", "/v1/instances/xyz?consistent=true", "id"},
		{"get consistent=maybe", "/v1/instances/00000000000000ff?consistent=maybe", "consistent"},
		{"events bad name", "/v1/tasks/Daily/events", "name"},
		{"events name starting with dot", "/v1/tasks/.d/events", "name"},
		{"events bad name with consistent=true", "/v1/tasks/-d/events?consistent=true", "name"},
		{"events consistent=maybe", "/v1/tasks/daily/events?consistent=maybe", "consistent"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fb := &fakeBackend{}
			rec := serve(t, api.Config{}, fb, getReq(tt.path))
			checkRejected(t, fb, rec, http.StatusBadRequest, model.CodeInvalid, tt.wantField)
		})
	}
}

// TestServer_ApprovalStatus: GET /v1/instances/{id}/approval answers an
// executor token for an attempt leased to its executor (current or past)
// and refuses it any other, always after a read barrier; admins and
// unbound executor tokens read any.
func TestServer_ApprovalStatus(t *testing.T) {
	auth := tokenAuth{
		"executor": roleTokens["executor"], // bound to w1
		"admin":    roleTokens["admin"],
		"unbound":  {Name: "legacy", Role: model.RoleExecutor, Unbound: true},
		"reader":   roleTokens["reader"],
	}
	waiting := &model.Instance{ID: "0000000000100000", State: model.StateWaitingApproval, Attempts: 1, Executor: "w1"}
	elsewhere := &model.Instance{ID: "0000000000100000", State: model.StateWaitingApproval, Attempts: 1, Executor: "w2"}
	retried := &model.Instance{ID: "0000000000100000", State: model.StateRunning, Attempts: 2, Executor: "w2",
		AttemptList: []model.Attempt{{Number: 1, Executor: "w1", Outcome: model.OutcomeLost}}}
	rejected := &model.Instance{ID: "0000000000100000", State: model.StateCanceled, Attempts: 1, Executor: "w1",
		Events: []model.Event{{Type: "approval_requested", Message: "drop?"}, {Type: "rejected", Actor: "alice", Message: "not today"}}}
	approved := &model.Instance{ID: "0000000000100000", State: model.StateRunning, Attempts: 1, Executor: "w1",
		Events: []model.Event{{Type: "approval_requested"}, {Type: "approved", Actor: "bob"}}}
	tests := []struct {
		name, token, query string
		in                 *model.Instance
		status             int
		want               approval.Status // decision, by, comment
		field              string
	}{
		{"pending, own attempt", "executor", "?attempt=1", waiting, 200, approval.Status{Decision: approval.Pending}, ""},
		{"approved", "executor", "?attempt=1", approved, 200, approval.Status{Decision: approval.Approved, By: "bob"}, ""},
		{"rejected", "executor", "?attempt=1", rejected, 200, approval.Status{Decision: approval.Rejected, By: "alice", Comment: "not today"}, ""},
		{"own past attempt", "executor", "?attempt=1", retried, 200, approval.Status{Decision: approval.Over}, ""},
		{"another executor's attempt", "executor", "?attempt=1", elsewhere, 403, approval.Status{}, "id"},
		{"another executor's newer attempt", "executor", "?attempt=2", retried, 403, approval.Status{}, "id"},
		{"no such attempt", "executor", "?attempt=3", retried, 404, approval.Status{}, "attempt"},
		{"no attempt given", "executor", "", waiting, 400, approval.Status{}, "attempt"},
		{"bad attempt", "executor", "?attempt=0", waiting, 400, approval.Status{}, "attempt"},
		{"admin, any executor", "admin", "?attempt=1", elsewhere, 200, approval.Status{Decision: approval.Pending}, ""},
		{"unbound executor token", "unbound", "?attempt=1", elsewhere, 200, approval.Status{Decision: approval.Pending}, ""},
		{"reader", "reader", "?attempt=1", waiting, 403, approval.Status{}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fb := &fakeBackend{Instance: tt.in}
			rec := serve(t, api.Config{Auth: auth}, fb, request{method: "GET", path: "/v1/instances/0000000000100000/approval" + tt.query,
				header: map[string]string{"Authorization": "Bearer " + tt.token}})
			if rec.Code != tt.status {
				t.Fatalf("status %d, want %d (%s)", rec.Code, tt.status, rec.Body)
			}
			if tt.status != 200 {
				if e := errorOf(t, rec); e.Field != tt.field {
					t.Errorf("field %q, want %q (%s)", e.Field, tt.field, e.Message)
				}
				return
			}
			var got approval.Status
			if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
				t.Fatal(err)
			}
			if got.Decision != tt.want.Decision || got.By != tt.want.By || got.Comment != tt.want.Comment || got.Attempt != 1 ||
				got.ID != tt.in.ID || got.State != tt.in.State || got.CurrentAttempt != tt.in.Attempts {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
			if m := fb.Methods(); fb.Barriers() != 1 || len(m) != 1 || m[0] != "GetInstance" {
				t.Errorf("backend calls %v after %d barrier(s), want a read barrier then the instance", m, fb.Barriers())
			}
		})
	}
}

// TestServer_Rerun: a re-run of an instance and a task's re-run reach
// the backend with their caller (the Idempotency-Key is the request id)
// and request, states defaulting to FAILED; the answers are the
// backend's.
func TestServer_Rerun(t *testing.T) {
	from, to := model.Time{Time: time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)}, model.Time{Time: time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)}
	caller := api.Caller{Actor: "anonymous", RequestID: "k1"}
	key := map[string]string{"Idempotency-Key": "k1"}
	tests := []struct {
		name string
		req  request
		want call
	}{
		{"instance", request{method: http.MethodPost, path: "/v1/instances/00000000000000ab/rerun", header: key},
			call{Method: "Rerun", Caller: caller, Name: "00000000000000ab"}},
		{"instance, empty object", request{method: http.MethodPost, path: "/v1/instances/00000000000000ab/rerun", body: `{}`, header: key},
			call{Method: "Rerun", Caller: caller, Name: "00000000000000ab"}},
		{"task, states by default", request{method: http.MethodPost, path: "/v1/tasks/daily/rerun", header: key,
			body: `{"from":"2026-11-01T00:00:00Z","to":"2026-11-30T00:00:00Z"}`},
			call{Method: "RerunTask", Caller: caller, Name: "daily", Rerun: model.RerunRequest{From: from, To: to, States: []string{model.StateFailed}}}},
		{"task, states given", request{method: http.MethodPost, path: "/v1/tasks/daily/rerun", header: key,
			body: `{"from":"2026-11-01T00:00:00Z","to":"2026-11-01T00:00:00Z","states":["TERMINATED","SKIPPED"]}`},
			call{Method: "RerunTask", Caller: caller, Name: "daily", Rerun: model.RerunRequest{From: from, To: from, States: []string{model.StateTerminated, model.StateSkipped}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fb := &fakeBackend{}
			rec := serve(t, api.Config{}, fb, tt.req)
			if rec.Code != http.StatusOK {
				t.Fatalf("status: got %d, want 200 (body %s)", rec.Code, rec.Body)
			}
			if got := fb.Calls(); !reflect.DeepEqual(got, []call{tt.want}) {
				t.Errorf("backend calls:\ngot  %+v\nwant %+v", got, []call{tt.want})
			}
			if tt.want.Method == "Rerun" {
				var got model.Submitted
				decodeBody(t, rec, &got)
				if got.ID != tt.want.Name || got.State != model.StateReady {
					t.Errorf("body %+v", got)
				}
			}
		})
	}
}

// TestServer_RerunBadInput: a bad id, range or state is a 400 naming the
// field, and nothing reaches the backend.
func TestServer_RerunBadInput(t *testing.T) {
	task := func(body string) request {
		return request{method: http.MethodPost, path: "/v1/tasks/daily/rerun", body: body}
	}
	tests := []struct {
		name      string
		req       request
		wantField string
	}{
		{"instance id", request{method: http.MethodPost, path: "/v1/instances/nope/rerun"}, "id"},
		{"instance body with a field", request{method: http.MethodPost, path: "/v1/instances/00000000000000ab/rerun", body: `{"comment":"x"}`}, "comment"},
		{"task name", request{method: http.MethodPost, path: "/v1/tasks/Daily/rerun", body: `{}`}, "name"},
		{"no from", task(`{"to":"2026-11-30T00:00:00Z"}`), "from"},
		{"no to", task(`{"from":"2026-11-30T00:00:00Z"}`), "to"},
		{"from after to", task(`{"from":"2026-11-30T00:00:01Z","to":"2026-11-30T00:00:00Z"}`), "to"},
		{"bad time", task(`{"from":"yesterday","to":"2026-11-30T00:00:00Z"}`), "from"},
		{"unfinished state", task(`{"from":"2026-11-01T00:00:00Z","to":"2026-11-30T00:00:00Z","states":["FAILED","RUNNING"]}`), "states[1]"},
		{"lowercase state", task(`{"from":"2026-11-01T00:00:00Z","to":"2026-11-30T00:00:00Z","states":["failed"]}`), "states[0]"},
		{"unknown field", task(`{"from":"2026-11-01T00:00:00Z","to":"2026-11-30T00:00:00Z","state":"FAILED"}`), "state"},
		{"empty body", task(""), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fb := &fakeBackend{}
			rec := serve(t, api.Config{}, fb, tt.req)
			checkRejected(t, fb, rec, http.StatusBadRequest, model.CodeInvalid, tt.wantField)
		})
	}
}
