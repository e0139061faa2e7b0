package notify

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/model"
)

// TestPostLegacy: the pre-protocol-4 failure webhook is the first
// release's JSON body, POSTed with up to three tries until a 2xx, and
// says how it went.
func TestPostLegacy(t *testing.T) {
	at := model.Time{Time: time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)}
	f := LegacyFailure{Event: "instance_failed", Task: "nightly", InstanceID: "00000000000000ff", ScheduledAt: at, Attempts: 2, Error: "exit status 3", Node: "n1"}
	for _, tc := range []struct {
		name      string
		statuses  []int // answered in turn, then the last again
		wantTries int32
		wantOK    bool
		wantRes   string
	}{
		{"delivered", []int{200}, 1, true, "200 OK"},
		{"a retry after a 500", []int{500, 204}, 2, true, "204 No Content"},
		{"three failures", []int{503}, 3, false, "failed: 503 Service Unavailable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var tries atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				n := int(tries.Add(1))
				body, _ := io.ReadAll(r.Body)
				var got LegacyFailure
				if err := json.Unmarshal(body, &got); err != nil || got != f || r.Header.Get("Content-Type") != "application/json" || r.Method != http.MethodPost {
					t.Errorf("request %s %q (%s): %+v, %v", r.Method, body, r.Header.Get("Content-Type"), got, err)
				}
				w.WriteHeader(tc.statuses[min(n, len(tc.statuses))-1])
			}))
			defer srv.Close()
			res, ok := PostLegacy(context.Background(), srv.Client(), srv.URL, f)
			if res != tc.wantRes || ok != tc.wantOK || tries.Load() != tc.wantTries {
				t.Fatalf("got %q, %v after %d tries; want %q, %v after %d", res, ok, tries.Load(), tc.wantRes, tc.wantOK, tc.wantTries)
			}
		})
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if res, ok := PostLegacy(ctx, http.DefaultClient, "http://127.0.0.1:1/x", f); ok || res != "canceled" {
		t.Fatalf("cancelled: %q, %v; want canceled", res, ok)
	}
}
