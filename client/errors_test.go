package client

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/internal/testkit"
	"github.com/ax-scheduler/ax/model"
)

// TestClient_DecodesErrors: an error answer becomes a *model.Error with
// the server's code, message and field (errors.Is with the code's
// sentinel); an answer that is not the API's JSON gets a code from its
// status. Only 503 is tried again.
func TestClient_DecodesErrors(t *testing.T) {
	tests := []struct {
		name        string
		status      int
		body        string
		wantCode    string
		wantField   string
		wantText    string // in err.Error()
		wantIs      error
		wantRetried bool
	}{
		{"field error", 400, `{"error":{"code":"invalid_argument","message":"expected 5 fields","field":"trigger.expression"}}`,
			model.CodeInvalid, "trigger.expression", "trigger.expression: expected 5 fields", model.ErrInvalid, false},
		{"not found", 404, `{"error":{"code":"not_found","message":"task \"x\" not found"}}`,
			model.CodeNotFound, "", `task "x" not found`, model.ErrNotFound, false},
		{"precondition on a field", 409, `{"error":{"code":"failed_precondition","message":"cannot approve","field":"state"}}`,
			model.CodePrecondition, "state", "state: cannot approve", model.ErrPrecondition, false},
		{"forbidden", 403, `{"error":{"code":"forbidden","message":"role reader cannot trigger"}}`,
			model.CodeForbidden, "", "role reader cannot trigger", model.ErrForbidden, false},
		{"too many", 429, `{"error":{"code":"resource_exhausted","message":"slow down"}}`,
			model.CodeTooMany, "", "slow down", model.ErrTooMany, false},
		{"unavailable", 503, `{"error":{"code":"unavailable","message":"no leader"}}`,
			model.CodeUnavailable, "", "no leader", model.ErrUnavailable, true},
		{"plain-text 404", 404, "404 page not found\n", model.CodeNotFound, "", "HTTP 404: 404 page not found", model.ErrNotFound, false},
		{"proxy 502", 502, "<html>Bad Gateway</html>", model.CodeInternal, "", "HTTP 502: <html>Bad Gateway</html>", nil, false},
		{"empty 401", 401, "", model.CodeUnauthorized, "", "HTTP 401", model.ErrUnauthorized, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var tries atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				tries.Add(1)
				w.WriteHeader(tt.status)
				_, _ = io.WriteString(w, tt.body)
			}))
			defer srv.Close()
			c := New(Config{Addrs: []string{srv.URL}})
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer cancel()
			_, err := c.GetTask(ctx, "x")
			var me *model.Error
			if !errors.As(err, &me) {
				t.Fatalf("got %T %v, want a *model.Error", err, err)
			}
			if me.Code != tt.wantCode || me.Field != tt.wantField || !strings.Contains(err.Error(), tt.wantText) {
				t.Errorf("got code %q field %q error %q; want %q %q containing %q", me.Code, me.Field, err, tt.wantCode, tt.wantField, tt.wantText)
			}
			if tt.wantIs != nil && !errors.Is(err, tt.wantIs) {
				t.Errorf("errors.Is(%v, %v) is false", err, tt.wantIs)
			}
			if got := tries.Load() > 1; got != tt.wantRetried {
				t.Errorf("tried %d times; want retried %v", tries.Load(), tt.wantRetried)
			}
		})
	}
}

// TestClient_FailsOverAcrossAddresses: a write that the first address
// cannot take (connection refused, 503, connection broken mid-request)
// goes to the next one, with the same Idempotency-Key; an answer that is
// the caller's fault (4xx) does not. The address that answered is tried
// first by the next call.
func TestClient_FailsOverAcrossAddresses(t *testing.T) {
	tests := []struct {
		name     string
		first    http.HandlerFunc // nil: nothing listens
		wantNext bool
	}{
		{"connection refused", nil, true},
		{"no leader (503)", func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = io.WriteString(w, `{"error":{"code":"unavailable","message":"no leader"}}`)
		}, true},
		{"connection broken", func(w http.ResponseWriter, r *http.Request) {
			c, _, _ := w.(http.Hijacker).Hijack()
			c.Close()
		}, true},
		{"bad request (400)", func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, `{"error":{"code":"invalid_argument","message":"bad","field":"params"}}`)
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var mu sync.Mutex
			var keys []string
			var firstTries, nextTries int
			record := func(r *http.Request, n *int) {
				mu.Lock()
				defer mu.Unlock()
				keys = append(keys, r.Header.Get(HeaderIdempotencyKey))
				*n++
			}
			first := testkit.FreeAddr(t)
			if tt.first != nil {
				srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					record(r, &firstTries)
					tt.first(w, r)
				}))
				defer srv.Close()
				first = srv.URL
			}
			next := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				record(r, &nextTries)
				_ = json.NewEncoder(w).Encode(model.Submitted{ID: "0000000000100000"})
			}))
			defer next.Close()
			c := New(Config{Addrs: []string{first, next.URL}, RetryFor: 5 * time.Second})
			got, err := c.Trigger(context.Background(), "job", model.TriggerRequest{})
			if !tt.wantNext {
				if !errors.Is(err, model.ErrInvalid) || nextTries != 0 {
					t.Fatalf("got %+v, %v (next address asked %d times); want the 400, not sent elsewhere", got, err, nextTries)
				}
				return
			}
			if err != nil || got.ID != "0000000000100000" || nextTries != 1 {
				t.Fatalf("got %+v, %v (next address asked %d times); want the next address's answer", got, err, nextTries)
			}
			for _, k := range keys {
				if k == "" || k != keys[0] {
					t.Fatalf("Idempotency-Keys %q, want one key on every try", keys)
				}
			}
			// The next call starts with the address that answered.
			before := firstTries
			if _, err := c.Trigger(context.Background(), "job", model.TriggerRequest{}); err != nil || firstTries != before || nextTries != 2 {
				t.Errorf("second call: %v; first address asked %d more times, next %d in all; want the next address at once",
					err, firstTries-before, nextTries)
			}
		})
	}
}

// TestClient_Decide: each decision is a POST to the instance's decision
// path with the comment; a decision that is not a lowercase word is
// refused before anything is sent, naming the field action; a
// well-formed one the server does not know gets the server's answer.
func TestClient_Decide(t *testing.T) {
	type seen struct{ method, path, body string }
	var mu sync.Mutex
	var got []seen
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, seen{r.Method, r.URL.EscapedPath(), string(b)})
		mu.Unlock()
		if strings.HasSuffix(r.URL.Path, "/approved") {
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, `{"error":{"code":"invalid_argument","field":"action","message":"\"approved\" is not a decision"}}`)
			return
		}
		_, _ = io.WriteString(w, `{"id":"0000000000100000","state":"DECIDED"}`)
	}))
	defer srv.Close()
	c := New(Config{Addrs: []string{srv.URL}, RetryFor: time.Second})
	tests := []struct {
		name      string
		d         Decision
		comment   string
		wantPath  string // "" when nothing may be sent
		wantBody  string
		wantField string // of the error, "" for success
	}{
		{"approve", Approve, "checked", "/v1/instances/0000000000100000/approve", `{"comment":"checked"}`, ""},
		{"reject", Reject, "", "/v1/instances/0000000000100000/reject", `{}`, ""},
		{"cancel", Cancel, "not needed", "/v1/instances/0000000000100000/cancel", `{"comment":"not needed"}`, ""},
		{"terminate", Terminate, "runaway", "/v1/instances/0000000000100000/terminate", `{"comment":"runaway"}`, ""},
		{"unknown to the server", Decision("approved"), "", "/v1/instances/0000000000100000/approved", `{}`, "action"},
		{"empty", Decision(""), "", "", "", "action"},
		{"capitals", Decision("Approve"), "", "", "", "action"},
		{"a path", Decision("../../tasks/x"), "", "", "", "action"},
		{"two elements", Decision("approve/x"), "", "", "", "action"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mu.Lock()
			got = nil
			mu.Unlock()
			state, err := c.Decide(context.Background(), "0000000000100000", tt.d, tt.comment)
			var me *model.Error
			switch {
			case tt.wantField == "" && (err != nil || state != "DECIDED"):
				t.Errorf("got %q, %v; want the server's state", state, err)
			case tt.wantField != "" && (!errors.As(err, &me) || me.Field != tt.wantField || me.Code != model.CodeInvalid):
				t.Errorf("got %q, %v; want an invalid_argument error naming %q", state, err, tt.wantField)
			}
			mu.Lock()
			defer mu.Unlock()
			if tt.wantPath == "" {
				if len(got) != 0 {
					t.Errorf("sent %+v, want nothing", got)
				}
				return
			}
			if len(got) != 1 || got[0] != (seen{http.MethodPost, tt.wantPath, tt.wantBody}) {
				t.Errorf("sent %+v, want one POST %s %s", got, tt.wantPath, tt.wantBody)
			}
		})
	}
}
