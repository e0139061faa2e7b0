package action

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/ax-scheduler/ax/internal/testkit"
	"github.com/ax-scheduler/ax/model"
)

func TestRedactor_Redact(t *testing.T) {
	tests := []struct {
		name   string
		values []string
		in     string
		want   string
	}{
		{"none", nil, "hunter22", "hunter22"},
		{"value", []string{"hunter22"}, "pw=hunter22; again hunter22", "pw=***; again ***"},
		{"too short to mask", []string{"abc", ""}, "abc abc", "abc abc"},
		{"longest wins", []string{"abcd", "abcdefgh"}, "xabcdefghx abcdx", "x***x ***x"},
		{"adjacent", []string{"abcd"}, "abcdabcd", "******"},
		{"each line", []string{"line-one\r\nline-two"}, "got line-two only", "got *** only"},
		{"json escaped", []string{`pa"ss\word`}, `{"pw":"pa\"ss\\word"}`, `{"pw":"***"}`},
		{"query escaped", []string{"a b&c=d"}, "https://x/?k=a+b%26c%3Dd", "https://x/?k=***"},
		{"path escaped", []string{"a b/c"}, "https://x/a%20b%2Fc", "https://x/***"},
		{"go quoted", []string{"tab\there"}, `bad value "tab\there"`, `bad value "***"`},
		{"several", []string{"alpha1", "beta22"}, "alpha1beta22", "******"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := NewRedactor(tt.values...).Redact(tt.in); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// TestRedactWriter_splits writes text in two and three chunks at every
// split point: a value split across writes is masked all the same.
func TestRedactWriter_splits(t *testing.T) {
	r := NewRedactor("hunter22", "s3cret-longer-value")
	in := "a hunter22 b s3cret-longer-value c hunter22s3cret-longer-value hunter2"
	want := r.Redact(in)
	for i := 0; i <= len(in); i++ {
		for j := i; j <= len(in); j += 3 {
			var out bytes.Buffer
			w := r.Writer(&out)
			for _, chunk := range []string{in[:i], in[i:j], in[j:]} {
				if n, err := w.Write([]byte(chunk)); err != nil || n != len(chunk) {
					t.Fatalf("Write: %d, %v", n, err)
				}
			}
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
			if out.String() != want {
				t.Fatalf("split at %d, %d: got %q, want %q", i, j, out.String(), want)
			}
		}
	}
}

func TestRedactWriter_holdsBackOnlyATail(t *testing.T) {
	r := NewRedactor("hunter22")
	var out bytes.Buffer
	w := r.Writer(&out)
	w.Write([]byte("0123456789hunt"))
	if got, want := out.String(), "0123456"; got != want {
		t.Errorf("after a partial value: wrote %q, want %q (the rest held back)", got, want)
	}
	w.Write([]byte("er22!"))
	w.Flush()
	if got, want := out.String(), "0123456789***!"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	var plain bytes.Buffer
	(*Redactor)(nil).Writer(&plain).Write([]byte("as is"))
	if plain.String() != "as is" {
		t.Errorf("nil Redactor: got %q, want the text as is", plain.String())
	}
}

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
