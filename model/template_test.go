package model_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/model"
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
		{name: "too long", text: strings.Repeat("x", model.TemplateOutputLimit+1), wantErr: "longer than 65536 bytes"},
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

// missingArg is a format with more verbs than the call gives arguments
// (a variable, so that vet lets it through).
var missingArg = "%d %d"

func TestTemplateFuncs_limits(t *testing.T) {
	big := strings.Repeat("x", model.TemplateOutputLimit)
	tests := []struct {
		name    string
		call    func(f *model.TemplateFuncs) (string, error)
		want    string
		wantErr string
	}{
		{"printf", func(f *model.TemplateFuncs) (string, error) { return f.Printf("%05d-%s-%.2f-%q", 7, "a", 1.5, "b") }, `00007-a-1.50-"b"`, ""},
		{"printf width at the limit", func(f *model.TemplateFuncs) (string, error) { return f.Printf("%1024d", 1) }, strings.Repeat(" ", 1023) + "1", ""},
		{"printf width above the limit", func(f *model.TemplateFuncs) (string, error) { return f.Printf("%1025d", 1) }, "", "width or precision above 1024"},
		{"printf huge width", func(f *model.TemplateFuncs) (string, error) { return f.Printf("%999999999d", 1) }, "", "width or precision above 1024"},
		{"printf precision above the limit", func(f *model.TemplateFuncs) (string, error) { return f.Printf("%.2000f", 1.0) }, "", "width or precision above 1024"},
		{"printf star width", func(f *model.TemplateFuncs) (string, error) { return f.Printf("%*d", 100000000, 1) }, "", "'*' and [n] are not allowed"},
		{"printf star precision", func(f *model.TemplateFuncs) (string, error) { return f.Printf("%.*f", 100000000, 1.0) }, "", "'*' and [n] are not allowed"},
		{"printf argument index", func(f *model.TemplateFuncs) (string, error) { return f.Printf("%[1]s%[1]s", big) }, "", "'*' and [n] are not allowed"},
		{"printf many wide verbs", func(f *model.TemplateFuncs) (string, error) {
			return f.Printf(strings.Repeat("%1024d", 100), make([]any, 100)...)
		}, "", "template output longer than"},
		{"printf of a long argument", func(f *model.TemplateFuncs) (string, error) { return f.Printf("%s!", big) }, "", "template output longer than"},
		{"printf hex of a long argument", func(f *model.TemplateFuncs) (string, error) { return f.Printf("% x", big[:20000]) }, "", "template output longer than"},
		{"printf missing and extra arguments", func(f *model.TemplateFuncs) (string, error) { return f.Printf(missingArg, 1) }, "1 %!d(MISSING)", ""},
		{"print", func(f *model.TemplateFuncs) (string, error) { return f.Print("a", 1, 2, "b") }, "a1 2b", ""},
		{"print too long", func(f *model.TemplateFuncs) (string, error) { return f.Print(big, "x") }, "", "template output longer than"},
		{"println too long", func(f *model.TemplateFuncs) (string, error) { return f.Println(big) }, "", "template output longer than"},
		{"html", func(f *model.TemplateFuncs) (string, error) { return f.HTML(`<a href="x">`) }, "&lt;a href=&#34;x&#34;&gt;", ""},
		{"html that grows too long", func(f *model.TemplateFuncs) (string, error) { return f.HTML(strings.Repeat(`"`, 20000)) }, "", "template output longer than"},
		{"js", func(f *model.TemplateFuncs) (string, error) { return f.JS(`it's`) }, `it\'s`, ""},
		{"js that grows too long", func(f *model.TemplateFuncs) (string, error) { return f.JS(strings.Repeat(`<`, 20000)) }, "", "template output longer than"},
		{"urlquery of several", func(f *model.TemplateFuncs) (string, error) { return f.URLQuery("a b", "&") }, "a+b%26", ""},
		{"work limit", func(f *model.TemplateFuncs) (string, error) {
			half := big[:model.TemplateOutputLimit/2]
			for range 2 * model.TemplateWorkLimit / len(half) {
				if _, err := f.Print(half); err != nil {
					return "", err
				}
			}
			return "", nil
		}, "", "template functions produced more than"},
		{"check", func(f *model.TemplateFuncs) (string, error) {
			f.Check = func() error { return errors.New("too slow") }
			return f.Print("x")
		}, "", "too slow"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.call(new(model.TemplateFuncs))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got %d bytes, %v; want error containing %q", len(got), err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("got %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestTemplateWriter(t *testing.T) {
	w := &model.TemplateWriter{Limit: 5}
	if _, err := w.Write([]byte("abc")); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte("def")); !errors.Is(err, model.ErrTemplateOutput) {
		t.Errorf("write past the limit: got %v, want ErrTemplateOutput", err)
	}
	if got := w.String(); got != "abc" {
		t.Errorf("got %q, want %q", got, "abc")
	}
	stop := errors.New("stop")
	w = &model.TemplateWriter{Check: func() error { return stop }}
	if _, err := w.Write([]byte("x")); !errors.Is(err, stop) {
		t.Errorf("got %v, want Check's error", err)
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
