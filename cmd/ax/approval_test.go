package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/client"
	"github.com/ax-scheduler/ax/model"
)

// TestAwaitDecision: `ax approval request` waits for the operator while
// its attempt waits for approval, and gives up once the attempt is over
// or the cluster has not answered for a lease.
func TestAwaitDecision(t *testing.T) {
	tests := []struct {
		name    string
		answer  func(polls int32) (int, *model.Instance)
		want    bool
		wantErr string
	}{
		{"approved", func(p int32) (int, *model.Instance) {
			if p < 3 {
				return 200, &model.Instance{State: model.StateWaitingApproval, Attempts: 1}
			}
			return 200, &model.Instance{State: model.StateRunning, Attempts: 1}
		}, true, ""},
		{"rejected", func(int32) (int, *model.Instance) {
			return 200, &model.Instance{State: model.StateCanceled, Attempts: 1}
		}, false, ""},
		{"terminated", func(int32) (int, *model.Instance) {
			return 200, &model.Instance{State: model.StateTerminated, Attempts: 1}
		}, false, "attempt 1 is over"},
		{"a newer attempt runs", func(int32) (int, *model.Instance) {
			return 200, &model.Instance{State: model.StateRunning, Attempts: 2}
		}, false, "attempt 1 is over"},
		{"instance gone", func(int32) (int, *model.Instance) { return 404, nil }, false, "is gone"},
		{"cluster unreachable", func(int32) (int, *model.Instance) { return 503, nil }, false, "no answer from the cluster"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var polls atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				code, in := tt.answer(polls.Add(1))
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(code)
				if in != nil {
					_ = json.NewEncoder(w).Encode(in)
					return
				}
				codes := map[int]string{404: model.CodeNotFound, 503: model.CodeUnavailable}
				_ = json.NewEncoder(w).Encode(model.ErrorBody{Error: &model.Error{Code: codes[code], Message: "no"}})
			}))
			defer srv.Close()
			cl := client.New(client.Config{Addrs: []string{srv.URL}})
			lease := 400 * time.Millisecond
			start := time.Now()
			got, err := awaitDecision(context.Background(), cl, "0000000000100000", 1, lease)
			if got != tt.want || (tt.wantErr == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("got %v, %v; want %v, error %q", got, err, tt.want, tt.wantErr)
			}
			if took := time.Since(start); took > 3*lease {
				t.Errorf("took %s, want within a few leases (%s)", took, lease)
			}
		})
	}
}
