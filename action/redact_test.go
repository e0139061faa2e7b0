package action

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/ax-scheduler/ax/internal/testkit"
	"github.com/ax-scheduler/ax/model"
)

// TestRunner_Run_masksSecrets runs each action type with secrets that it
// prints, sends or fails with: neither the output (kept and live) nor the
// error holds them.
func TestRunner_Run_masksSecrets(t *testing.T) {
	secrets := map[string]string{"db": "hunter22", "tok": "t0ken-value"}
	var gotAuth, gotQuery string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotAuth, gotQuery = r.Header.Get("Authorization"), r.URL.Query().Get("k")
		w.Write([]byte("echo: " + r.URL.Query().Get("k")))
	}))
	t.Cleanup(srv.Close)
	tests := []struct {
		name        string
		action      model.Action
		handlers    map[string]Handler
		wantOutput  string
		wantErr     string
		wantSuccess bool
	}{
		{name: "shell output", action: model.Action{Type: model.ActionShell,
			Command: `echo {{secret "db"}}; printf 'split: hun'; sleep 0.05; printf 'ter22\n'; echo "$PW"`,
			Env:     map[string]model.Value{"PW": model.SecretValue("tok")}},
			wantOutput: "***\nsplit: ***\n***\n", wantSuccess: true},
		{name: "shell error", action: model.Action{Type: model.ActionShell, Command: "true",
			Env: map[string]model.Value{"PW": model.SecretValue("nope")}},
			wantErr: `env PW: secret "nope" was not delivered with the job`},
		{name: "http", action: model.Action{Type: model.ActionHTTP, URL: srv.URL + `/?k={{secret "db"}}`,
			Headers: map[string]model.Value{"Authorization": model.SecretValue("tok")}},
			wantOutput: "echo: ***", wantSuccess: true},
		{name: "http error", action: model.Action{Type: model.ActionHTTP, URL: `ftp://x/?k={{secret "db"}}`},
			wantErr: `bad url "ftp://x/?k=***"`},
		{name: "sdk", action: model.Action{Type: model.ActionSDK, Handler: "h"},
			handlers: map[string]Handler{"h": func(ctx context.Context, job Job) error {
				Output(ctx).Write([]byte("using " + job.Secrets["db"]))
				return Permanent(&testError{"login failed for " + job.Secrets["tok"]})
			}},
			wantOutput: "using ***", wantErr: "login failed for ***"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			job := httpJob("")
			job.Action = tt.action
			job.Secrets = secrets
			var live testkit.Buffer
			got := (&Runner{Handlers: tt.handlers}).Run(context.Background(), job, &live)
			if got.Success != tt.wantSuccess || !strings.Contains(got.Error, tt.wantErr) {
				t.Errorf("got success %v error %q, want %v and an error containing %q", got.Success, got.Error, tt.wantSuccess, tt.wantErr)
			}
			if string(got.Output) != tt.wantOutput || live.String() != tt.wantOutput {
				t.Errorf("got output %q, live %q; want %q", got.Output, live.String(), tt.wantOutput)
			}
			for _, v := range secrets {
				if strings.Contains(got.Error+string(got.Output)+live.String(), v) {
					t.Errorf("secret %q leaked: %+v, live %q", v, got, live.String())
				}
			}
		})
	}
	if gotAuth != "t0ken-value" || gotQuery != "hunter22" {
		t.Errorf("the server got Authorization %q and k %q, want the secrets' values", gotAuth, gotQuery)
	}
}

type testError struct{ msg string }

func (e *testError) Error() string { return e.msg }
