package action

import (
	"errors"
	"strings"
	"testing"

	"github.com/ax-scheduler/ax/model"
)

func TestCheck(t *testing.T) {
	shell := func(command string) model.Action {
		return model.Action{Type: model.ActionShell, Command: command}
	}
	http := func(url, body string) model.Action {
		return model.Action{Type: model.ActionHTTP, URL: url, Body: body}
	}
	tests := []struct {
		name      string
		action    model.Action
		wantField string // "" when the action is valid
		wantErr   string
	}{
		// What the doc shows.
		{name: "doc unquoted", action: shell("echo {{.Params.name}}")},
		{name: "doc double quotes", action: shell(`echo "Hello {{.Params.name}}"`)},
		{name: "doc single quotes", action: shell(`echo 'id={{.Params.name}}'`)},
		{name: "doc dates", action: shell("backup --at {{.ScheduledAt}} --date {{.Date}} --since {{.Yesterday}}")},
		{name: "doc ids", action: shell("echo {{.Task}} {{.InstanceID}} {{.ExecutionID}} {{.Attempt}}")},
		{name: "doc payload", action: shell("echo {{.Payload}}")},
		{name: "doc env var in a here-document", action: shell("cat <<EOF\n$AX_PARAM_NAME\nEOF")},
		{name: "doc env var in backquotes", action: shell("echo `echo \"$AX_PAYLOAD\"`")},
		{name: "doc env var in ${...}", action: shell(`echo ${AX_PARAM_NAME:-none}`)},
		{name: "doc urlquery in a url", action: http("https://example.com/run?date={{.Date}}&q={{urlquery .Params.x}}", "")},
		{name: "doc body", action: http("https://example.com/hook", `{"task":"{{.Task}}","at":"{{.ScheduledAt}}","payload":{{.Payload}}}`)},
		// Other valid templates.
		{name: "no template", action: shell("echo hi")},
		{name: "any param is valid", action: shell("echo {{.Params.anything}}")},
		{name: "default from with-else", action: shell("run --date={{with .Params.date}}{{.}}{{else}}{{.Yesterday}}{{end}}")},
		{name: "optional flag", action: shell("run {{if .Params.full}}--full{{end}} {{if not .Params.full}}--quick{{end}}")},
		{name: "index of a param name with a dash", action: shell(`echo {{index .Params "order-id"}}`)},

		{name: "$ inside with", action: shell(`{{with .Params.v}}echo {{$.Params.v}} {{.}}{{end}}`)},

		{name: "slice longer than a sample value", action: shell("git checkout {{slice .Params.sha 0 40}}")},
		{name: "slice of a missing param", action: shell("echo {{slice .Params.sha 0 7}}")},
		{name: "index of the payload", action: http("https://example.com/{{index .Payload 30}}", "")},
		{name: "backquotes in an http body", action: http("https://example.com/hook", "{\"a\": \"`{{.Params.v}}` ${x:-{{.Params.v}}}\"}")},
		{name: "secret in a command", action: shell(`curl -u "ax:{{secret "api-token"}}" https://x/`)},
		{name: "secret in a url and body", action: http(`https://x/?k={{secret "k"}}`, `{"k": {{secret "k"}}}`)},
		{name: "param in a url path that a fire leaves empty", action: http("https://x/orders/{{.Params.id}}/close", "")},
		{name: "typed body", action: model.Action{Type: model.ActionHTTP, URL: "https://x/", Body: "a={{.Params.a}}",
			Headers: map[string]model.Value{"content-type": model.TextValue("application/x-www-form-urlencoded")}}},
		{name: "sdk", action: model.Action{Type: model.ActionSDK, Handler: "h"}},

		{name: "unknown field", action: shell("echo {{.Nope}}"), wantField: "action.command", wantErr: "can't evaluate field Nope"},
		{name: "field of a param", action: shell("echo {{.Params.x.y}}"), wantField: "action.command", wantErr: "can't evaluate field y"},
		{name: "unknown function", action: shell("echo {{.Params.x | nosuchfunc}}"), wantField: "action.command", wantErr: `"nosuchfunc" not defined`},
		{name: "method with an argument", action: shell(`echo {{.Date "x"}}`), wantField: "action.command", wantErr: "wrong number of args for Date"},
		{name: "function with too few arguments", action: shell("echo {{printf}}"), wantField: "action.command", wantErr: "wrong number of args for printf"},
		{name: "param compared to a number", action: shell("{{if lt .Params.n 5}}echo small{{end}}"), wantField: "action.command", wantErr: "incompatible types"},
		{name: "range over params", action: shell(`{{range $k, $v := .Params}}echo {{$v}}; {{end}}`), wantField: "action.command", wantErr: "range is not allowed"},
		{name: "defined template", action: shell(`{{define "d"}}{{.Date}}{{end}}echo {{template "d" .}}`), wantField: "action.command", wantErr: "not allowed"},
		{name: "raw in a command", action: shell(`echo {{raw .Params.x}}`), wantField: "action.command", wantErr: "raw is not allowed here"},
		{name: "secret from a param", action: http(`https://x/{{secret .Params.x}}`, ""), wantField: "action.url", wantErr: "secret takes one literal name"},
		{name: "param as the host", action: http("https://{{.Params.host}}/x", ""), wantField: "action.url", wantErr: "cannot form the scheme or host"},
		{name: "param as the url", action: http("{{.Params.url}}", ""), wantField: "action.url", wantErr: "cannot form the scheme or host"},
		{name: "param in an untyped text body", action: http("https://x/", "n={{.Params.n}}"), wantField: "action.body", wantErr: "set a Content-Type header"},
		{name: "body typed by a secret", action: model.Action{Type: model.ActionHTTP, URL: "https://x/", Body: "{{.Params.n}}",
			Headers: map[string]model.Value{"Content-Type": model.SecretValue("ct")}}, wantField: "action.body", wantErr: "set a Content-Type header"},
		{name: "printf bomb", action: shell(`echo {{printf "%1000000000d" 1}}`), wantField: "action.command", wantErr: "width or precision above 1024"},
		{name: "output bomb", action: shell("echo " + strings.Repeat(`{{printf "%1024d" 1}}`, 70)), wantField: "action.command", wantErr: "longer than"},
		{name: "error in a branch a param opens", action: shell("echo {{if .Params.v}}{{.Nope}}{{end}}"), wantField: "action.command", wantErr: "Nope"},
		{name: "error in a branch of a dashed param", action: shell(`{{if index .Params "dry-run"}}{{.Nope}}{{end}}`), wantField: "action.command", wantErr: "Nope"},
		{name: "error in the else of a param", action: shell("run {{with .Params.date}}{{.}}{{else}}{{.Yesteday}}{{end}}"), wantField: "action.command", wantErr: "Yesteday"},
		{name: "value after $ in a branch", action: shell("{{with .Params.tag}}echo ${{.}}{{end}}"), wantField: "action.command", wantErr: "after a $"},
		{name: "payload in backquotes", action: shell("echo `echo {{.Payload}}`"), wantField: "action.command", wantErr: "inside `...`"},
		{name: "bad url", action: http("https://example.com/{{.Nope}}", ""), wantField: "action.url", wantErr: "bad url template"},
		{name: "bad body", action: http("https://example.com/hook", `{"x":"{{.Params.x.y}}"}`), wantField: "action.body", wantErr: "bad body template"},
		{name: "method with an argument in a body", action: http("https://example.com/hook", `{{.Yesterday 1}}`), wantField: "action.body", wantErr: "wrong number of args for Yesterday"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkCheck(t, tt.action, tt.wantField, tt.wantErr)
		})
	}
}

// TestCheck_expandTables checks the templates of the expansion tests: those
// that expand are valid, those that fail are not, unless it is the value
// that makes them fail.
func TestCheck_expandTables(t *testing.T) {
	for _, tt := range commandTests {
		t.Run("command/"+tt.name, func(t *testing.T) {
			field, wantErr := "action.command", tt.wantErr
			if tt.wantErr == "" || strings.IndexByte(tt.value, 0) >= 0 {
				field, wantErr = "", ""
			}
			checkCheck(t, model.Action{Type: model.ActionShell, Command: tt.command}, field, wantErr)
		})
	}
	for _, tt := range urlTests {
		t.Run("url/"+tt.name, func(t *testing.T) {
			field, wantErr := "action.url", tt.wantErr
			if tt.wantErr == "" || tt.runOnly {
				field, wantErr = "", ""
			}
			checkCheck(t, model.Action{Type: model.ActionHTTP, URL: tt.url}, field, wantErr)
		})
	}
	for _, tt := range bodyTests {
		t.Run("body/"+tt.name, func(t *testing.T) {
			field, wantErr := "action.body", tt.wantErr
			if tt.wantErr == "" || tt.runOnly {
				field, wantErr = "", ""
			}
			a := model.Action{Type: model.ActionHTTP, URL: "https://example.com/", Body: tt.body}
			if tt.ct != "" {
				a.Headers = map[string]model.Value{"Content-Type": model.TextValue(tt.ct)}
			}
			checkCheck(t, a, field, wantErr)
		})
	}
}

// checkCheck checks that Check accepts a when wantField is "", else that it
// rejects it with an invalid_argument *model.Error naming wantField whose
// message contains wantErr.
func checkCheck(t *testing.T, a model.Action, wantField, wantErr string) {
	t.Helper()
	err := Check(&a)
	if wantField == "" {
		if err != nil {
			t.Fatalf("got %v, want nil", err)
		}
		return
	}
	var me *model.Error
	if !errors.As(err, &me) {
		t.Fatalf("got %v, want a *model.Error", err)
	}
	if !errors.Is(err, model.ErrInvalid) || me.Field != wantField || !strings.Contains(me.Message, wantErr) {
		t.Errorf("got code %q field %q message %q; want %q, %q and a message containing %q",
			me.Code, me.Field, me.Message, model.CodeInvalid, wantField, wantErr)
	}
}
