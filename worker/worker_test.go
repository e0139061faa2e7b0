package worker

import (
	"strings"
	"testing"

	"github.com/ax-scheduler/ax/action"
	"github.com/ax-scheduler/ax/model"
)

func TestWorker_completeReport(t *testing.T) {
	w, err := New(Config{Name: "e1", Servers: []string{"127.0.0.1:1"}, Host: "h", Shell: true})
	if err != nil {
		t.Fatal(err)
	}
	job := model.Job{ExecutionID: "i-1", Secrets: map[string]string{"db": "hunter22", "short": "ab"}}
	tests := []struct {
		name       string
		res        action.Result
		reason     string
		wantError  string
		wantOutput string
		wantRetry  bool
	}{
		{"masks error and output", action.Result{Error: `bad url "https://x/?k=hunter22"`, Output: []byte("pw=hunter22\nab\n")},
			"", `bad url "https://x/?k=***"`, "pw=***\nab\n", false},
		{"stopped by the cluster", action.Result{Canceled: true, Error: "canceled"}, "terminated by ops (hunter22)",
			"stopped: terminated by ops (***)", "", false},
		{"stopped by shutdown", action.Result{Canceled: true, Error: "canceled"}, "executor shutting down",
			"stopped: executor shutting down", "", true},
		{"stopped by its fence", action.Result{Canceled: true, Error: "canceled"}, "lease lost: not renewed within 10s",
			"stopped: lease lost: not renewed within 10s", "", true},
		{"success", action.Result{Success: true, Output: []byte("ok")}, "", "", "ok", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := w.completeReport(job, tt.res, tt.reason)
			if got.Error != tt.wantError || got.Output != tt.wantOutput || got.Retryable != tt.wantRetry {
				t.Errorf("got error %q output %q retryable %v; want %q %q %v",
					got.Error, got.Output, got.Retryable, tt.wantError, tt.wantOutput, tt.wantRetry)
			}
			if strings.Contains(got.Error+got.Output, "hunter22") {
				t.Errorf("the secret leaked: %+v", got)
			}
			if got.Executor != "e1" || got.Host != "h" {
				t.Errorf("got executor %q host %q, want e1 h", got.Executor, got.Host)
			}
		})
	}
}
