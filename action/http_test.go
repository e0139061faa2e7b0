package action

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/internal/testkit"
	"github.com/ax-scheduler/ax/model"
)

// request is what the test server saw.
type request struct {
	Method, Path, Query, RequestID, Attempt, ContentType, Custom, Body string
}

func newHTTPServer(t *testing.T) (*httptest.Server, <-chan request, <-chan struct{}) {
	t.Helper()
	seen := make(chan request, 10)
	slow := make(chan struct{}, 10)
	mux := http.NewServeMux()
	mux.HandleFunc("/ok", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "hello") })
	mux.HandleFunc("/fail", func(w http.ResponseWriter, r *http.Request) { http.Error(w, "down", http.StatusInternalServerError) })
	mux.HandleFunc("/unavailable", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusServiceUnavailable) })
	mux.HandleFunc("/missing", func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) })
	mux.HandleFunc("/busy", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusTooManyRequests) })
	mux.HandleFunc("/redirect", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/ok", http.StatusFound) })
	mux.HandleFunc("/choices", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusMultipleChoices) })
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, strings.Repeat("a", OutputLimit)+strings.Repeat("b", 1000))
	})
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		slow <- struct{}{}
		<-r.Context().Done()
	})
	mux.HandleFunc("/echo", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		seen <- request{r.Method, r.URL.Path, r.URL.RawQuery, r.Header.Get(RequestIDHeader),
			r.Header.Get(AttemptHeader), r.Header.Get("Content-Type"), r.Header.Get("X-Custom"), string(b)}
		w.WriteHeader(http.StatusCreated)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv, seen, slow
}

func httpJob(url string) Job {
	return Job{
		InstanceID:  "inst1",
		ExecutionID: "inst1-2",
		Task:        "t",
		Attempt:     2,
		ScheduledAt: time.Date(2026, 3, 1, 2, 30, 0, 0, time.UTC),
		Action:      model.Action{Type: model.ActionHTTP, URL: url},
	}
}

func TestRunner_Run_httpStatus(t *testing.T) {
	srv, _, _ := newHTTPServer(t)
	tests := []struct {
		path          string
		wantSuccess   bool
		wantRetryable bool
		wantStatus    int
		wantErr       string
		wantOutput    string
	}{
		{path: "/ok", wantSuccess: true, wantStatus: 200, wantOutput: "hello"},
		{path: "/redirect", wantSuccess: true, wantStatus: 200, wantOutput: "hello"},
		{path: "/fail", wantRetryable: true, wantStatus: 500, wantErr: "HTTP 500 Internal Server Error", wantOutput: "down\n"},
		{path: "/unavailable", wantRetryable: true, wantStatus: 503, wantErr: "HTTP 503 Service Unavailable"},
		{path: "/busy", wantRetryable: true, wantStatus: 429, wantErr: "HTTP 429 Too Many Requests"},
		{path: "/missing", wantStatus: 404, wantErr: "HTTP 404 Not Found", wantOutput: "404 page not found\n"},
		{path: "/choices", wantStatus: 300, wantErr: "HTTP 300 Multiple Choices"},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			got := (&Runner{}).Run(context.Background(), httpJob(srv.URL+tt.path), nil)
			if got.Success != tt.wantSuccess || got.Retryable != tt.wantRetryable || got.HTTPStatus != tt.wantStatus {
				t.Errorf("got Success=%v Retryable=%v HTTPStatus=%d, want %v %v %d",
					got.Success, got.Retryable, got.HTTPStatus, tt.wantSuccess, tt.wantRetryable, tt.wantStatus)
			}
			if got.Error != tt.wantErr {
				t.Errorf("Error = %q, want %q", got.Error, tt.wantErr)
			}
			if string(got.Output) != tt.wantOutput {
				t.Errorf("Output = %q, want %q", got.Output, tt.wantOutput)
			}
		})
	}
}

func TestRunner_Run_httpRequest(t *testing.T) {
	srv, seen, _ := newHTTPServer(t)
	job := httpJob(srv.URL + "/echo?date={{.Date}}&x={{urlquery .Params.x}}")
	job.Params = map[string]string{"x": "a b&c"}
	job.Payload = json.RawMessage(`{"id":7}`)
	job.Action.Method = "post"
	job.Action.Body = `{"task":"{{.Task}}","at":"{{.ScheduledAt}}","payload":{{.Payload}}}`
	job.Action.Headers = map[string]model.Value{"X-Custom": {Text: "1"}, RequestIDHeader: {Text: "spoofed"}, AttemptHeader: {Text: "9"}}
	got := (&Runner{}).Run(context.Background(), job, nil)
	if !got.Success || got.HTTPStatus != 201 {
		t.Fatalf("got %+v, want success with 201", got)
	}
	want := request{
		Method:      "POST",
		Path:        "/echo",
		Query:       "date=2026-03-01&x=a+b%26c",
		RequestID:   "inst1",
		Attempt:     "2",
		ContentType: "application/json",
		Custom:      "1",
		Body:        `{"task":"t","at":"2026-03-01T02:30:00.000Z","payload":{"id":7}}`,
	}
	if r := <-seen; r != want {
		t.Errorf("server saw\n%+v\nwant\n%+v", r, want)
	}

	job = httpJob(srv.URL + "/echo")
	(&Runner{}).Run(context.Background(), job, nil)
	if r := <-seen; r.Method != "GET" || r.RequestID != "inst1" || r.Attempt != "2" || r.Body != "" || r.ContentType != "" {
		t.Errorf("default request: server saw %+v, want a GET with the instance id, the attempt and no body", r)
	}
}

func TestRunner_Run_httpOutput(t *testing.T) {
	srv, _, _ := newHTTPServer(t)
	var live testkit.Buffer
	got := (&Runner{}).Run(context.Background(), httpJob(srv.URL+"/big"), &live)
	want := strings.Repeat("a", OutputLimit)
	if !got.Success || string(got.Output) != want || live.String() != want {
		t.Errorf("got success=%v, %d bytes of output, %d live; want the first %d bytes",
			got.Success, len(got.Output), live.Len(), OutputLimit)
	}
}

func TestRunner_Run_httpTimeout(t *testing.T) {
	srv, _, _ := newHTTPServer(t)
	tests := []struct {
		name           string
		action, policy time.Duration
		wantErr        string
	}{
		{"action timeout", 100 * time.Millisecond, time.Hour, "timeout after 100ms"},
		{"policy timeout", 0, 150 * time.Millisecond, "timeout after 150ms"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			job := httpJob(srv.URL + "/slow")
			job.Action.Timeout = model.Duration(tt.action)
			job.Policy.Timeout = model.Timeout(tt.policy)
			got := (&Runner{}).Run(context.Background(), job, nil)
			if !got.TimedOut || got.HTTPStatus != 0 {
				t.Errorf("TimedOut=%v HTTPStatus=%d, want true 0", got.TimedOut, got.HTTPStatus)
			}
			checkFailure(t, got, true, tt.wantErr)
		})
	}
}

func TestRunner_Run_httpCancel(t *testing.T) {
	srv, _, slow := newHTTPServer(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-slow
		cancel()
	}()
	got := (&Runner{}).Run(ctx, httpJob(srv.URL+"/slow"), nil)
	if !got.Canceled || got.TimedOut {
		t.Errorf("Canceled=%v TimedOut=%v, want true false", got.Canceled, got.TimedOut)
	}
	checkFailure(t, got, false, "canceled")
}

func TestRunner_Run_httpErrors(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + l.Addr().String() + "/"
	l.Close()
	tests := []struct {
		name          string
		url           string
		wantRetryable bool
		wantErr       string
	}{
		{"connection refused", closed, true, "connection refused"},
		{"not http", "ftp://127.0.0.1/x", false, "want an absolute http or https URL"},
		{"relative", "/ok", false, "want an absolute http or https URL"},
		{"bad url", "http://127.0.0.1:bad/", false, "bad url"},
		{"template error", "http://127.0.0.1/{{.Nope}}", false, "bad url template"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := (&Runner{}).Run(context.Background(), httpJob(tt.url), nil)
			checkFailure(t, got, tt.wantRetryable, tt.wantErr)
			if got.HTTPStatus != 0 || got.TimedOut || got.Canceled {
				t.Errorf("HTTPStatus=%d TimedOut=%v Canceled=%v, want 0 false false", got.HTTPStatus, got.TimedOut, got.Canceled)
			}
		})
	}
}

// TestRunner_Run_httpEscapesValues sends the attacks of the issue: a param
// that would rewrite the URL's path and one that would add a field to the
// JSON body arrive as plain values.
func TestRunner_Run_httpEscapesValues(t *testing.T) {
	type seen struct{ path, id, body string }
	got := make(chan seen, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- seen{r.URL.EscapedPath(), r.URL.Query().Get("id"), string(b)}
	}))
	t.Cleanup(srv.Close)
	job := httpJob(srv.URL + "/api/users/{{.Params.id}}/profile?id={{.Params.id}}")
	job.Action.Method = "POST"
	job.Action.Body = `{"amount": 5, "note": "{{.Params.note}}"}`
	job.Params = map[string]string{"id": "../../admin?x=", "note": `x", "amount": 1000000, "y": "`}
	if res := (&Runner{}).Run(context.Background(), job, nil); !res.Success {
		t.Fatalf("got %+v, want success", res)
	}
	s := <-got
	if want := "/api/users/..%2F..%2Fadmin%3Fx=/profile"; s.path != want || s.id != "../../admin?x=" {
		t.Errorf("got path %q and id %q, want %q and the param", s.path, s.id, want)
	}
	var body map[string]any
	if err := json.Unmarshal([]byte(s.body), &body); err != nil {
		t.Fatalf("body %q: %v", s.body, err)
	}
	if body["amount"] != 5.0 || body["note"] != job.Params["note"] || len(body) != 2 {
		t.Errorf("got body %v, want amount 5 and the note as it was", body)
	}
}
