package model_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/model/tmpl"
)

func TestParseTemplate(t *testing.T) {
	tests := []struct {
		name    string
		field   string // default action.url
		text    string
		wantErr string // "" when valid
	}{
		{name: "plain text", text: "https://example.com/x"},
		{name: "empty", text: ""},
		{name: "fields and methods", text: "{{.Task}} {{.ScheduledAt}} {{.Date}} {{.Params.x}} {{.Payload}}"},
		{name: "if else with", text: `{{if eq .Params.m "a"}}a{{else if .Params.b}}b{{else}}c{{end}}{{with .Params.d}}{{.}}{{end}}`},
		{name: "builtins", text: `{{and 1 (or 0 (not 0))}} {{len .Params.x}} {{index .Params "x-y"}} {{slice .Params.s 0 7}} {{lt 1 2}}`},
		{name: "variables", text: `{{$x := .Params.x}}{{$x = "y"}}{{$x}}`},
		{name: "bounded printf", text: `{{printf "%1024d|%.1024f|%-5s|%%" 1 2.0 "x"}}`},
		{name: "escapers", text: `{{urlquery .Params.x}} {{html .Params.x}} {{js .Params.x}} {{print 1}} {{println 2}}`},
		{name: "raw in a body", field: "action.body", text: `{"n": {{raw .Params.n}}}`},
		{name: "secret", text: `{{secret "api-token"}} {{secret "a.b" | urlquery}} {{(secret "c")}}`},
		{name: "comment", text: `{{/* a comment */}}x`},

		{name: "range of the issue", text: "{{range 10000000}}x{{end}}", wantErr: "range is not allowed"},
		{name: "range over params", text: "{{range .Params}}{{.}}{{end}}", wantErr: "range is not allowed"},
		{name: "range in an else", text: "{{if 1}}{{else}}{{range .Params}}{{end}}{{end}}", wantErr: "range is not allowed"},
		{name: "define", text: `{{define "d"}}x{{end}}y`, wantErr: "define and block are not allowed"},
		{name: "block", text: `{{block "b" .}}x{{end}}`, wantErr: "not allowed"},
		{name: "template", text: `{{template "t"}}`, wantErr: "template and block are not allowed"},
		{name: "call", text: `{{call .F}}`, wantErr: "function call is not allowed"},
		{name: "call as an argument", text: `{{print call}}`, wantErr: "function call is not allowed"},
		{name: "unknown function", text: `{{nope 1}}`, wantErr: `function "nope" not defined`},
		{name: "parse error", text: "{{.Task", wantErr: "bad template"},
		{name: "NUL", text: "a\x00b", wantErr: "NUL byte"},
		{name: "too long", text: strings.Repeat("x", tmpl.OutputLimit+1), wantErr: "longer than 65536 bytes"},
		{name: "secret from a variable", text: `{{$n := "x"}}{{secret $n}}`, wantErr: "secret takes one literal name"},
		{name: "secret of a param", text: `{{secret .Params.n}}`, wantErr: "secret takes one literal name"},
		{name: "secret piped", text: `{{"x" | secret}}`, wantErr: "secret takes one literal name"},
		{name: "secret as an argument", text: `{{print secret}}`, wantErr: "secret takes one literal name"},
		{name: "secret with two names", text: `{{secret "a" "b"}}`, wantErr: "secret takes one literal name"},
		{name: "secret with a bad name", text: `{{secret "DB password"}}`, wantErr: `secret "DB password" is not a valid name`},
		{name: "raw in a command", field: "action.command", text: "echo {{raw .Params.x}}", wantErr: "raw is not allowed here"},
		{name: "secret in a command", field: "action.command", text: `curl -u {{secret "cred"}} x`},
		{name: "secret in a key", field: "policy.idempotencyKey", text: `{{secret "k"}}`, wantErr: "secret is not allowed here"},
		{name: "raw in a key", field: "policy.idempotencyKey", text: `{{raw .Task}}`, wantErr: "raw is not allowed here"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			field := tt.field
			if field == "" {
				field = "action.url"
			}
			_, err := model.ParseTemplate(field, tt.text)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("got %v, want nil", err)
				}
				return
			}
			var me *model.Error
			if !errors.As(err, &me) || me.Code != model.CodeInvalid || me.Field != field || !strings.Contains(me.Message, tt.wantErr) {
				t.Fatalf("got %v, want an invalid_argument error on %s containing %q", err, field, tt.wantErr)
			}
		})
	}
}

// TestTask_ValidateBoundsKeyTemplates checks that the idempotency key
// template, which the state machine renders when it validates a task, is
// bounded without a clock.
func TestTask_ValidateBoundsKeyTemplates(t *testing.T) {
	tests := []struct {
		name, key, wantErr string
	}{
		{"range of the issue", "{{range 10000000}}x{{end}}", "range is not allowed"},
		{"wide printf", `{{printf "%1000000000d" 1}}`, "width or precision above 1024"},
		{"many wide printfs", strings.Repeat(`{{printf "%1024d" 1}}`, 100), "template output longer than"},
		{"nested escapers", "{{" + strings.Repeat("js (", 16) + "`\\\\`" + strings.Repeat(")", 16) + "}}", "template output longer than"},
		{"growing work", strings.Repeat(`{{len (printf "%1024s%1024s%1024s%1024s%1024s%1024s%1024s%1024s%1024s%1024s%1024s%1024s%1024s%1024s%1024s%1024s" "" "" "" "" "" "" "" "" "" "" "" "" "" "" "" "")}}`, 80),
			"template functions produced more than"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tk := baseTask()
			tk.Policy.IdempotencyKey = tt.key
			err := tk.Validate()
			var me *model.Error
			if !errors.As(err, &me) || me.Field != "policy.idempotencyKey" || !strings.Contains(me.Message, tt.wantErr) {
				t.Fatalf("got %v, want an error on policy.idempotencyKey containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestKeyRenderer_Key(t *testing.T) {
	tk := baseTask()
	tk.Policy.IdempotencyKey = `{{.Task}}:{{printf "%s" .Date}}`
	at := time.Date(2026, 1, 2, 20, 0, 0, 0, time.UTC)
	if got, want := tk.FireKeys().Key(at), "daily_report:2026-01-03"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
