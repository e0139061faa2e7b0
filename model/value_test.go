package model_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/ax-scheduler/ax/model"
)

func TestValue_JSON(t *testing.T) {
	tests := []struct {
		name     string
		in       string
		want     model.Value
		wantJSON string // what it encodes back to; "" means in
		wantErr  string
	}{
		{name: "text", in: `"abc"`, want: model.Value{Text: "abc"}},
		{name: "empty text", in: `""`, want: model.Value{}},
		{name: "null", in: `null`, want: model.Value{}, wantJSON: `""`},
		{name: "secret", in: `{"fromSecret":"db_password"}`, want: model.Value{FromSecret: "db_password"}},
		{name: "secret with spaces", in: ` { "fromSecret" : "x" } `, want: model.Value{FromSecret: "x"}, wantJSON: `{"fromSecret":"x"}`},
		{name: "unknown field", in: `{"fromSecret":"x","text":"y"}`, wantErr: `object with fields other than "fromSecret"`},
		{name: "empty object", in: `{}`, wantErr: `object without "fromSecret"`},
		{name: "number", in: `12`, wantErr: `want a string or {"fromSecret": "name"}`},
		{name: "array", in: `["x"]`, wantErr: `want a string or {"fromSecret": "name"}`},
		{name: "fromSecret not a string", in: `{"fromSecret":1}`, wantErr: `object whose "fromSecret" is not a string`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got model.Value
			err := json.Unmarshal([]byte(tt.in), &got)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got %+v, %v; want error containing %q", got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("got %+v, %v; want %+v", got, err, tt.want)
			}
			b, err := json.Marshal(got)
			want := tt.wantJSON
			if want == "" {
				want = tt.in
			}
			if err != nil || string(b) != want {
				t.Errorf("encoded back: got %s, %v; want %s", b, err, want)
			}
		})
	}
}

// TestAction_envJSON checks that tasks stored before Value (plain strings)
// read back as they were, and that an error names the field.
func TestAction_envJSON(t *testing.T) {
	old := `{"type":"shell","command":"x","env":{"A":"1"}}`
	var a model.Action
	if err := json.Unmarshal([]byte(old), &a); err != nil {
		t.Fatal(err)
	}
	if want := map[string]model.Value{"A": {Text: "1"}}; !reflect.DeepEqual(a.Env, want) {
		t.Errorf("got %+v, want %+v", a.Env, want)
	}
	if b, _ := json.Marshal(a); string(b) != old {
		t.Errorf("encoded back: got %s, want %s", b, old)
	}
	err := json.Unmarshal([]byte(`{"type":"http","headers":{"X-Key":{"fromSecret":"k","x":1}}}`), &a)
	var te *json.UnmarshalTypeError
	if !errors.As(err, &te) || te.Field != "headers" {
		t.Errorf("got %v, want an UnmarshalTypeError on headers", err)
	}
}

func TestAction_validateValues(t *testing.T) {
	tests := []struct {
		name      string
		action    model.Action
		wantField string
	}{
		{"env from a secret", model.Action{Type: model.ActionShell, Command: "x", Env: map[string]model.Value{"A": model.SecretValue("db")}}, ""},
		{"header from a secret", model.Action{Type: model.ActionHTTP, URL: "http://x/", Headers: map[string]model.Value{"A": model.SecretValue("db")}}, ""},
		{"env from a bad name", model.Action{Type: model.ActionShell, Command: "x", Env: map[string]model.Value{"A": model.SecretValue("Bad Name")}}, "action.env.A.fromSecret"},
		{"header from a bad name", model.Action{Type: model.ActionHTTP, URL: "http://x/", Headers: map[string]model.Value{"A": model.SecretValue("-")}}, "action.headers.A.fromSecret"},
		{"text and secret", model.Action{Type: model.ActionShell, Command: "x", Env: map[string]model.Value{"A": {Text: "t", FromSecret: "s"}}}, "action.env.A"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tk := baseTask()
			tk.Action = tt.action
			err := tk.Validate()
			if tt.wantField == "" {
				if err != nil {
					t.Fatalf("got %v, want nil", err)
				}
				return
			}
			var me *model.Error
			if !errors.As(err, &me) || me.Field != tt.wantField {
				t.Fatalf("got %v, want an error on %s", err, tt.wantField)
			}
		})
	}
}
