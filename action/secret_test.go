package action

import (
	"reflect"
	"testing"

	"github.com/ax-scheduler/ax/model"
)

func TestSecretRefs(t *testing.T) {
	tests := []struct {
		name   string
		action model.Action
		want   []string
	}{
		{"none", model.Action{Type: model.ActionShell, Command: "echo {{.Params.secret}}"}, nil},
		{"command", model.Action{Type: model.ActionShell, Command: `psql -p {{secret "pg"}} {{if 1}}{{secret "b"}}{{end}}`}, []string{"b", "pg"}},
		{"url, body, headers", model.Action{Type: model.ActionHTTP, URL: `https://x/?k={{secret "key"}}`,
			Body:    `{"a":"{{secret "z"}}","b":"{{secret "key"}}"}`,
			Headers: map[string]model.Value{"Authorization": model.SecretValue("tok"), "X": model.TextValue("secret")}},
			[]string{"key", "tok", "z"}},
		{"env", model.Action{Type: model.ActionShell, Command: "x", Env: map[string]model.Value{"A": model.SecretValue("a"), "B": model.SecretValue("a")}}, []string{"a"}},
		{"bad template", model.Action{Type: model.ActionShell, Command: `{{secret "a"`}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := SecretRefs(&tt.action); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// BenchmarkSecretRefs measures what the leader pays per lease: an action
// without secrets (the common case) and one with a secret in its body.
func BenchmarkSecretRefs(b *testing.B) {
	for _, bc := range []struct {
		name   string
		action model.Action
	}{
		{"none", model.Action{Type: model.ActionHTTP, URL: "https://x/{{.Params.id}}", Body: `{"at":"{{.ScheduledAt}}"}`}},
		{"template", model.Action{Type: model.ActionHTTP, URL: "https://x/{{.Params.id}}", Body: `{"k":"{{secret "key"}}","at":"{{.ScheduledAt}}"}`}},
		{"header", model.Action{Type: model.ActionHTTP, URL: "https://x/", Headers: map[string]model.Value{"Authorization": model.SecretValue("tok")}}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				SecretRefs(&bc.action)
			}
		})
	}
}
