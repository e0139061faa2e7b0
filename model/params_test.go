package model

import (
	"strings"
	"testing"
)

func strp(s string) *string { return &s }

// TestTask_ValidateParams: the declarations a put refuses, each naming
// its field.
func TestTask_ValidateParams(t *testing.T) {
	tests := []struct {
		name   string
		trig   string
		params map[string]ParamSpec
		field  string // "" for valid
	}{
		{"ok", TriggerEvent, map[string]ParamSpec{"n": {Type: ParamNumber, Default: strp("-1.5e3")}, "b": {Type: ParamBoolean, Required: true}}, ""},
		{"bad name", TriggerEvent, map[string]ParamSpec{"1x": {}}, "params"},
		{"system name", TriggerEvent, map[string]ParamSpec{"parent_task": {}}, "params.parent_task"},
		{"bad type", TriggerEvent, map[string]ParamSpec{"x": {Type: "date"}}, "params.x.type"},
		{"bad pattern", TriggerEvent, map[string]ParamSpec{"x": {Pattern: "("}}, "params.x.pattern"},
		{"enum of the wrong type", TriggerEvent, map[string]ParamSpec{"x": {Type: ParamInteger, Enum: []string{"1", "two"}}}, "params.x.enum[1]"},
		{"enum twice", TriggerEvent, map[string]ParamSpec{"x": {Enum: []string{"a", "a"}}}, "params.x.enum[1]"},
		{"default refused", TriggerEvent, map[string]ParamSpec{"x": {Enum: []string{"a"}, Default: strp("b")}}, "params.x.default"},
		{"default and required", TriggerEvent, map[string]ParamSpec{"x": {Required: true, Default: strp("a")}}, "params.x.default"},
		{"required on cron", TriggerCron, map[string]ParamSpec{"x": {Required: true}}, "params.x.required"},
		{"hex is no number", TriggerEvent, map[string]ParamSpec{"x": {Type: ParamNumber, Default: strp("0x10")}}, "params.x.default"},
		{"NaN is no number", TriggerEvent, map[string]ParamSpec{"x": {Type: ParamNumber, Default: strp("NaN")}}, "params.x.default"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			task := Task{Name: "t", Trigger: Trigger{Type: tc.trig}, Action: Action{Type: ActionShell, Command: "true"}, Params: tc.params}
			if tc.trig == TriggerCron {
				task.Trigger.Expression = "@hourly"
			}
			err := task.Validate()
			switch {
			case tc.field == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.field != "" && (err == nil || err.(*Error).Field != tc.field):
				t.Fatalf("got %v, want a refusal of %s", err, tc.field)
			}
		})
	}
}

// TestResolveParams: defaults filled, given values kept, and nothing
// copied when nothing is filled.
func TestResolveParams(t *testing.T) {
	schema := map[string]ParamSpec{"a": {Default: strp("1")}, "b": {}}
	got, err := ResolveParams(schema, map[string]string{"b": "x"})
	if err != nil || got["a"] != "1" || got["b"] != "x" || len(got) != 2 {
		t.Fatalf("got %v %v", got, err)
	}
	if got, err := ResolveParams(nil, map[string]string{"anything": "goes"}); err != nil || got["anything"] != "goes" {
		t.Fatalf("no schema: %v %v", got, err)
	}
	if _, err := ResolveParams(schema, map[string]string{"c": "1"}); err == nil || !strings.Contains(err.Error(), "params.c") {
		t.Fatalf("undeclared: %v", err)
	}
}
