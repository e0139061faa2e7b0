package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/model"
)

// TestMain_Rerun: ax instance rerun and ax task rerun send the request
// the API takes (states upper-cased, from -state given repeated or as a
// comma list) and print the answer, as a line per instance or as JSON.
func TestMain_Rerun(t *testing.T) {
	t.Parallel()
	at := model.Time{Time: time.Date(2026, 11, 29, 1, 0, 0, 0, time.UTC)}
	var mu sync.Mutex
	var got []string // method, path and body of each request
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, r.Method+" "+r.URL.Path+" "+strings.TrimSpace(string(b)))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch {
		case strings.HasPrefix(r.URL.Path, "/v1/instances/"):
			_ = json.NewEncoder(w).Encode(model.Submitted{ID: "0000000000a30001", ScheduledAt: at, State: model.StateBlocked})
		default:
			_ = json.NewEncoder(w).Encode(model.RerunResult{Rerun: 2, Instances: []model.Submitted{
				{ID: "0000000000a30001", ScheduledAt: at, State: model.StateReady}, {ID: "0000000000b30001", ScheduledAt: at, State: model.StateBlocked}}})
		}
	}))
	t.Cleanup(srv.Close)
	env := map[string]string{"AX_ADDR": srv.URL}
	tests := []struct {
		args    []string
		request string
		stdout  string
	}{
		{[]string{"instance", "rerun", "0000000000a30001"}, "POST /v1/instances/0000000000a30001/rerun ",
			"0000000000a30001 BLOCKED 2026-11-29T01:00:00.000Z\n"},
		{[]string{"instance", "rerun", "0000000000a30001", "-o", "json"}, "POST /v1/instances/0000000000a30001/rerun ",
			"{\n  \"id\": \"0000000000a30001\",\n  \"scheduledAt\": \"2026-11-29T01:00:00.000Z\",\n  \"state\": \"BLOCKED\"\n}\n"},
		{[]string{"task", "rerun", "daily", "-from", "2026-11-01", "-to", "2026-11-29T01:00", "-state", "failed,Terminated", "-state", "SKIPPED"},
			`POST /v1/tasks/daily/rerun {"from":"2026-11-01T00:00:00.000Z","to":"2026-11-29T01:00:00.000Z","states":["FAILED","TERMINATED","SKIPPED"]}`,
			"0000000000a30001 READY 2026-11-29T01:00:00.000Z\n0000000000b30001 BLOCKED 2026-11-29T01:00:00.000Z\n2 re-run\n"},
		{[]string{"task", "rerun", "daily", "-from", "2026-11-01", "-to", "2026-11-02", "-json"},
			`POST /v1/tasks/daily/rerun {"from":"2026-11-01T00:00:00.000Z","to":"2026-11-02T00:00:00.000Z"}`, ""},
	}
	for _, tt := range tests {
		mu.Lock()
		got = nil
		mu.Unlock()
		r := ax(t, env, tt.args...)
		if r.code != 0 || r.stderr != "" {
			t.Errorf("ax %s: exit %d, stderr %q", strings.Join(tt.args, " "), r.code, r.stderr)
		}
		mu.Lock()
		if len(got) != 1 || got[0] != tt.request {
			t.Errorf("ax %s sent %q, want %q", strings.Join(tt.args, " "), got, tt.request)
		}
		mu.Unlock()
		if tt.stdout != "" && r.stdout != tt.stdout {
			t.Errorf("ax %s printed %q, want %q", strings.Join(tt.args, " "), r.stdout, tt.stdout)
		}
		var res model.RerunResult
		if tt.stdout == "" && (json.Unmarshal([]byte(r.stdout), &res) != nil || res.Rerun != 2) {
			t.Errorf("ax %s printed %q, want the result as JSON", strings.Join(tt.args, " "), r.stdout)
		}
	}
}
