package action

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/ax-scheduler/ax/model"
)

// TestRunner_Run_shellResult: what a command writes to $AX_RESULT_FILE is
// the result of a successful attempt (compacted); nothing written is no
// result; what cannot be a result fails the attempt without retry,
// saying why; a failed attempt publishes nothing.
func TestRunner_Run_shellResult(t *testing.T) {
	tests := []struct {
		name, command, want, wantErr string
	}{
		{name: "object", command: `printf '{"rows": 42,\n "ok": true}\n' > "$AX_RESULT_FILE"`, want: `{"rows":42,"ok":true}`},
		{name: "string", command: `echo '"done"' > "$AX_RESULT_FILE"`, want: `"done"`},
		{name: "none", command: `true`},
		{name: "blank", command: `echo '  ' > "$AX_RESULT_FILE"`},
		{name: "removed", command: `rm "$AX_RESULT_FILE"`},
		{name: "not JSON", command: `echo '{rows: 42}' > "$AX_RESULT_FILE"`,
			wantErr: "result refused: $AX_RESULT_FILE: not JSON: invalid character 'r'"},
		{name: "too big", command: `{ printf '"'; head -c 65536 /dev/zero | tr '\0' x; printf '"'; } > "$AX_RESULT_FILE"`,
			wantErr: "result refused: $AX_RESULT_FILE: 65538 bytes, over the limit of 65536 (64 KiB)"},
		{name: "holds a secret", command: `echo '{"pw": "hunter22"}' > "$AX_RESULT_FILE"`,
			wantErr: "result refused: $AX_RESULT_FILE: it holds the value of a secret"},
		{name: "failed attempt", command: `echo '{"a": 1}' > "$AX_RESULT_FILE"; exit 3`, wantErr: "exit status 3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			job := shellJob(tt.command)
			job.Secrets = map[string]string{"db": "hunter22"}
			got := (&Runner{}).Run(context.Background(), job, nil)
			if tt.wantErr != "" {
				checkFailure(t, got, tt.name == "failed attempt", tt.wantErr)
				if got.Result != nil {
					t.Errorf("result %s kept with a failure", got.Result)
				}
				return
			}
			if !got.Success || string(got.Result) != tt.want {
				t.Errorf("got success %v (%s), result %q; want success, result %q", got.Success, got.Error, got.Result, tt.want)
			}
		})
	}
}

// TestRunner_Run_shellResultFile: the file is private to the attempt
// (mode 0600, in a directory of mode 0700 of its own) and gone once the
// attempt ended.
func TestRunner_Run_shellResultFile(t *testing.T) {
	got := (&Runner{}).Run(context.Background(), shellJob(`echo "$AX_RESULT_FILE"; stat -c '%a' "$AX_RESULT_FILE" "$(dirname "$AX_RESULT_FILE")"`), nil)
	lines := strings.Fields(string(got.Output))
	if !got.Success || len(lines) != 3 || lines[1] != "600" || lines[2] != "700" {
		t.Fatalf("got %q (%s), want the path, 600 and 700", got.Output, got.Error)
	}
	if _, err := os.Stat(lines[0]); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the result file %s is still there after the attempt (%v)", lines[0], err)
	}
}

// TestRunner_Run_httpResult: a 2xx JSON response body is the result
// (declared JSON, or a body that parses), resultFrom selects a part of it
// (RFC 6901) and fails the attempt when it cannot; a body that is not
// JSON is no result; a declared-JSON body that cannot be kept leaves the
// attempt successful with a note in its output.
func TestRunner_Run_httpResult(t *testing.T) {
	var body, ct string
	var status int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if ct != "" {
			w.Header().Set("Content-Type", ct)
		}
		w.WriteHeader(status)
		w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	huge := `{"data": {"rows": 7}, "pad": "` + strings.Repeat("x", 2*MaxResult) + `"}`
	tests := []struct {
		name, body, ct, resultFrom string
		status                     int
		want, wantErr, wantOutput  string
	}{
		{name: "declared JSON", body: `{"id": "a1", "n": [1, 2]}`, ct: "application/json; charset=utf-8", want: `{"id":"a1","n":[1,2]}`},
		{name: "parses", body: ` [1, "two"] `, ct: "text/plain", want: `[1,"two"]`},
		{name: "plain text", body: "all good", ct: "text/plain"},
		{name: "empty", body: "", ct: "application/json"},
		{name: "resultFrom", body: `{"data": {"rows": 7, "a/b": "x"}}`, resultFrom: "/data/rows", want: `7`},
		{name: "resultFrom escaped", body: `{"data": {"rows": 7, "a/b": "x"}}`, resultFrom: "/data/a~1b", want: `"x"`},
		{name: "resultFrom of a big body", body: huge, resultFrom: "/data", want: `{"rows":7}`},
		{name: "resultFrom no member", body: `{"data": {}}`, resultFrom: "/data/rows",
			wantErr: `result refused: resultFrom /data/rows: no member "rows"`},
		{name: "resultFrom not JSON", body: `<html>`, ct: "text/html", resultFrom: "/data",
			wantErr: "result refused: resultFrom /data: the response body is not JSON"},
		{name: "declared but too big", body: huge, ct: "application/json",
			wantOutput: "[ax: the response body is not kept as the attempt's result: over the limit of 65536 bytes (64 KiB); set resultFrom to pick a part]"},
		{name: "declared but not JSON", body: `{oops`, ct: "application/json",
			wantOutput: "[ax: the response body is not kept as the attempt's result: not JSON: invalid character 'o'"},
		{name: "failure", body: `{"error": "x"}`, ct: "application/json", status: 500, wantErr: "HTTP 500"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body, ct, status = tt.body, tt.ct, tt.status
			if status == 0 {
				status = 200
			}
			job := httpJob(srv.URL)
			job.Action.ResultFrom = tt.resultFrom
			got := (&Runner{}).Run(context.Background(), job, nil)
			if tt.wantErr != "" {
				checkFailure(t, got, tt.status >= 500, tt.wantErr)
				if got.Result != nil {
					t.Errorf("result %s kept with a failure", got.Result)
				}
				return
			}
			if !got.Success || string(got.Result) != tt.want {
				t.Errorf("got success %v (%s), result %q; want success, result %q", got.Success, got.Error, got.Result, tt.want)
			}
			if !strings.Contains(string(got.Output), tt.wantOutput) {
				t.Errorf("output %q, want it to contain %q", got.Output, tt.wantOutput)
			}
		})
	}
}

// TestRunner_Run_sdkResult: SetResult publishes a handler's result; the
// last call wins; a value that cannot be a result is an error to the
// handler and fails the attempt even if the handler returns nil.
func TestRunner_Run_sdkResult(t *testing.T) {
	tests := []struct {
		name    string
		h       Handler
		want    string
		wantErr string
	}{
		{name: "value", h: func(ctx context.Context, job Job) error {
			return SetResult(ctx, map[string]any{"order": job.Params["id"], "total": 12.5})
		}, want: `{"order":"o-1","total":12.5}`},
		{name: "raw JSON, last wins", h: func(ctx context.Context, job Job) error {
			_ = SetResult(ctx, "first")
			return SetResult(ctx, json.RawMessage(` [ true ] `))
		}, want: `[true]`},
		{name: "none", h: func(ctx context.Context, job Job) error { return nil }},
		{name: "not JSON", h: func(ctx context.Context, job Job) error {
			if err := SetResult(ctx, func() {}); err == nil {
				t.Error("SetResult of a func: no error")
			}
			return nil
		}, wantErr: "result refused: SetResult: json: unsupported type: func()"},
		{name: "too big", h: func(ctx context.Context, job Job) error {
			_ = SetResult(ctx, strings.Repeat("x", MaxResult))
			return nil
		}, wantErr: "result refused: SetResult: 65538 bytes, over the limit of 65536"},
		{name: "holds a secret", h: func(ctx context.Context, job Job) error {
			return SetResult(ctx, map[string]string{"token": job.Secrets["db"]})
		}, wantErr: "result refused: SetResult: it holds the value of a secret"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			job := shellJob("")
			job.Action = model.Action{Type: model.ActionSDK, Handler: "h"}
			job.Params = map[string]string{"id": "o-1"}
			job.Secrets = map[string]string{"db": "hunter22"}
			got := (&Runner{Handlers: map[string]Handler{"h": tt.h}}).Run(context.Background(), job, nil)
			if tt.wantErr != "" {
				checkFailure(t, got, false, tt.wantErr)
				return
			}
			if !got.Success || string(got.Result) != tt.want {
				t.Errorf("got success %v (%s), result %q; want success, result %q", got.Success, got.Error, got.Result, tt.want)
			}
		})
	}
	if err := SetResult(context.Background(), 1); err == nil || !strings.Contains(err.Error(), "not the context of an SDK handler") {
		t.Errorf("SetResult outside a handler: got %v", err)
	}
}

// upstreamJob is templateJob with the result of an upstream task
// "extract".
func upstreamJob(result string) Job {
	job := templateJob()
	job.Upstream = map[string]json.RawMessage{"extract": json.RawMessage(result)}
	return job
}

// TestExpand_upstream: {{.Upstream.<task>.Result...}} in a shell command
// (strings quoted like params), an HTTP body (JSON values inserted as
// such) and a url; reading what is not there fails.
func TestExpand_upstream(t *testing.T) {
	const result = `{"rows": 42, "file": "it's.csv", "ok": true, "items": [{"id": "a"}, {"id": "b"}], "meta": {"n": null}}`
	tests := []struct {
		name, field, text, want, wantErr string
	}{
		{name: "shell number", field: "command", text: `load --rows {{.Upstream.extract.Result.rows}}`, want: `load --rows '42'`},
		{name: "shell string", field: "command", text: `load {{.Upstream.extract.Result.file}}`, want: `load 'it'\''s.csv'`},
		{name: "shell in double quotes", field: "command", text: `echo "f={{.Upstream.extract.Result.file}}"`, want: `echo "f=it's.csv"`},
		{name: "shell array element", field: "command", text: `echo {{(index .Upstream.extract.Result.items 1).id}}`, want: `echo 'b'`},
		{name: "shell whole object", field: "command", text: `echo {{.Upstream.extract.Result.meta}}`, want: `echo '{"n":null}'`},
		{name: "shell if", field: "command", text: `{{if eq .Upstream.extract.Result.file "it's.csv"}}yes{{end}}`, want: `yes`},
		{name: "shell missing field", field: "command", text: `echo {{.Upstream.extract.Result.nope}}`, wantErr: "reads an upstream result, or a field of one, that is not there"},
		{name: "shell missing task", field: "command", text: `echo {{.Upstream.other.Result}}`, wantErr: "reads an upstream result, or a field of one, that is not there"},
		{name: "shell missing task field", field: "command", text: `echo {{.Upstream.other.Result.rows}}`, wantErr: "nil pointer evaluating"},
		{name: "body JSON", field: "body", text: `{"rows": {{.Upstream.extract.Result.rows}}, "file": {{.Upstream.extract.Result.file}}, "all": {{.Upstream.extract.Result.items}}}`,
			want: `{"rows": 42, "file": "it's.csv", "all": [{"id":"a"},{"id":"b"}]}`},
		{name: "body in a string", field: "body", text: `{"msg": "loaded {{.Upstream.extract.Result.rows}} rows"}`, want: `{"msg": "loaded 42 rows"}`},
		{name: "url", field: "url", text: `https://h/files/{{.Upstream.extract.Result.file}}?rows={{.Upstream.extract.Result.rows}}`, want: `https://h/files/it%27s.csv?rows=42`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			job := upstreamJob(result)
			var got string
			var err error
			switch tt.field {
			case "command":
				got, err = expandCommand(tt.text, job)
			case "body":
				got, err = expandBody(tt.text, job, "application/json", true)
			case "url":
				got, err = expandURL(tt.text, job)
			}
			checkExpansion(t, got, err, tt.want, tt.wantErr)
			if err == nil {
				if err := Check(&model.Action{Type: model.ActionShell, Command: tt.text}); tt.field == "command" && err != nil {
					t.Errorf("Check refuses the command: %v", err)
				}
			}
		})
	}
}

// TestCheck_upstream: Check, which has no upstream results, does not
// hold reading into one against a template, but still refuses an unknown
// field of an upstream entry.
func TestCheck_upstream(t *testing.T) {
	for _, cmd := range []string{
		`echo {{.Upstream.extract.Result}}`,
		`echo {{.Upstream.extract.Result.rows}}`,
		`echo {{(index .Upstream.extract.Result.items 0).id}}`,
		`{{if eq .Upstream.extract.Result.status "ok"}}echo ok{{end}}`,
		`echo "day={{(index .Upstream "ex-tract").Result.day}}"`,
		`echo {{index (index .Upstream "ex-tract").Result.items 0}}`,
	} {
		if err := Check(&model.Action{Type: model.ActionShell, Command: cmd}); err != nil {
			t.Errorf("Check(%q): %v, want nil", cmd, err)
		}
	}
	err := Check(&model.Action{Type: model.ActionShell, Command: `echo {{.Upstream.extract.Results}}`})
	if err == nil || !strings.Contains(err.Error(), "can't evaluate field Results") {
		t.Errorf("Check of .Results: got %v, want it refused", err)
	}
}
