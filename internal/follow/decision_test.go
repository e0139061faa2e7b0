package follow

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/client"
	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/model/approval"
)

// TestDecision: `ax approval request` waits for the operator while
// its attempt waits for approval (GET /v1/instances/{id}/approval), and
// gives up once the attempt is over, at once when the cluster refuses its
// token, or once the cluster has not answered for a lease. A node older
// than the endpoint (405) is asked for the instance instead.
func TestDecision(t *testing.T) {
	t.Parallel()
	status := func(decision, state string, current int) *approval.Status {
		return &approval.Status{ID: "0000000000100000", Attempt: 1, Decision: decision, State: state, CurrentAttempt: current}
	}
	tests := []struct {
		name    string
		answer  func(polls int32) (int, any)
		want    bool
		wantErr string
	}{
		{"approved", func(p int32) (int, any) {
			if p < 3 {
				return 200, status(approval.Pending, model.StateWaitingApproval, 1)
			}
			return 200, status(approval.Approved, model.StateRunning, 1)
		}, true, ""},
		{"rejected", func(int32) (int, any) { return 200, status(approval.Rejected, model.StateCanceled, 1) }, false, ""},
		{"terminated", func(int32) (int, any) { return 200, status(approval.Over, model.StateTerminated, 1) }, false, "attempt 1 is over"},
		{"a newer attempt runs", func(int32) (int, any) { return 200, status(approval.Over, model.StateRunning, 2) }, false, "attempt 1 is over"},
		{"instance gone", func(int32) (int, any) { return 404, nil }, false, "is gone"},
		{"token refused", func(int32) (int, any) { return 403, nil }, false, "approval request: no"},
		{"cluster unreachable", func(int32) (int, any) { return 503, nil }, false, "no answer from the cluster"},
		{"older node: approved", func(p int32) (int, any) {
			if p == 1 {
				return 405, nil
			}
			return 200, &model.Instance{ID: "0000000000100000", State: model.StateRunning, Attempts: 1}
		}, true, ""},
		{"older node: rejected", func(p int32) (int, any) {
			if p == 1 {
				return 405, nil
			}
			return 200, &model.Instance{ID: "0000000000100000", State: model.StateCanceled, Attempts: 1}
		}, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var polls atomic.Int32
			var paths []string
			var mu sync.Mutex
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				paths = append(paths, r.Method+" "+r.URL.Path+"?"+r.URL.RawQuery)
				mu.Unlock()
				code, v := tt.answer(polls.Add(1))
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(code)
				if v != nil {
					_ = json.NewEncoder(w).Encode(v)
					return
				}
				codes := map[int]string{403: model.CodeForbidden, 404: model.CodeNotFound, 405: "method_not_allowed", 503: model.CodeUnavailable}
				_ = json.NewEncoder(w).Encode(model.ErrorBody{Error: &model.Error{Code: codes[code], Message: "no"}})
			}))
			defer srv.Close()
			cl := client.New(client.Config{Addrs: []string{srv.URL}})
			lease := 400 * time.Millisecond
			start := time.Now()
			var said strings.Builder
			got, err := Decision(context.Background(), cl, "0000000000100000", 1, lease, &said)
			if got != tt.want || (tt.wantErr == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("got %v, %v; want %v, error %q", got, err, tt.want, tt.wantErr)
			}
			if (got && !strings.HasPrefix(said.String(), "approved")) || (!got && err == nil && !strings.HasPrefix(said.String(), "rejected")) {
				t.Errorf("said %q", said.String())
			}
			if took := time.Since(start); took > 3*lease {
				t.Errorf("took %s, want within a few leases (%s)", took, lease)
			}
			mu.Lock()
			defer mu.Unlock()
			if want := "GET /v1/instances/0000000000100000/approval?attempt=1"; paths[0] != want {
				t.Errorf("first request %s, want %s", paths[0], want)
			}
			if strings.HasPrefix(tt.name, "older node") && paths[len(paths)-1] != "GET /v1/instances/0000000000100000?consistent=true" {
				t.Errorf("requests %v, want the instance read after the 405", paths)
			}
		})
	}
}
