package model_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/model"
)

func TestTimeout_JSON(t *testing.T) {
	tests := []struct {
		in   string
		want model.Timeout
		out  string // "" when omitted
	}{
		{`{}`, 0, ``},
		{`{"timeout":""}`, 0, ``},
		{`{"timeout":null}`, 0, ``},
		{`{"timeout":"none"}`, model.NoTimeout, `"none"`},
		{`{"timeout":"0s"}`, model.NoTimeout, `"none"`},
		{`{"timeout":"0"}`, model.NoTimeout, `"none"`},
		{`{"timeout":"90s"}`, model.Timeout(90 * time.Second), `"1m30s"`},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			var p model.Policy
			if err := json.Unmarshal([]byte(tt.in), &p); err != nil {
				t.Fatal(err)
			}
			if p.Timeout != tt.want {
				t.Fatalf("got %d, want %d", p.Timeout, tt.want)
			}
			b, _ := json.Marshal(p)
			want := `{}`
			if tt.out != "" {
				want = `{"timeout":` + tt.out + `}`
			}
			if string(b) != want {
				t.Errorf("encoded %s, want %s", b, want)
			}
		})
	}
	var p model.Policy
	if err := json.Unmarshal([]byte(`{"timeout":"forever"}`), &p); err == nil {
		t.Errorf("a bad timeout decoded")
	}
	if got := model.NoTimeout.Std(); got != 0 {
		t.Errorf("NoTimeout.Std() = %s, want 0", got)
	}
}

func TestPolicy_ValidateProto4(t *testing.T) {
	long := strings.Repeat("x", model.MaxParamValue+1)
	tests := []struct {
		name  string
		p     model.Policy
		field string
	}{
		{"all set", model.Policy{DependsOn: []string{"a"}, OnUpstreamFailure: "fail", MaxQueued: 5, Timeout: model.NoTimeout,
			OnSuccess: []model.Chain{{Task: "b", Params: map[string]string{"day": "x"}}}}, ""},
		{"wait without dependsOn", model.Policy{OnUpstreamFailure: "wait"}, ""},
		{"unknown onUpstreamFailure", model.Policy{DependsOn: []string{"a"}, OnUpstreamFailure: "retry"}, "policy.onUpstreamFailure"},
		{"skip without dependsOn", model.Policy{OnUpstreamFailure: "skip"}, "policy.onUpstreamFailure"},
		{"maxQueued negative", model.Policy{MaxQueued: -1}, "policy.maxQueued"},
		{"maxQueued too big", model.Policy{MaxQueued: model.MaxMaxQueued + 1}, "policy.maxQueued"},
		{"maxQueued with skip", model.Policy{MaxQueued: 3, Overlap: "skip"}, "policy.maxQueued"},
		{"onSuccess bad name", model.Policy{OnSuccess: []model.Chain{{Task: "Bad Name"}}}, "policy.onSuccess[0].task"},
		{"onSuccess reserved param", model.Policy{OnSuccess: []model.Chain{{Task: "b", Params: map[string]string{"parent_task": "x"}}}}, "policy.onSuccess[0].params.parent_task"},
		{"onSuccess bad param", model.Policy{OnSuccess: []model.Chain{{Task: "b", Params: map[string]string{"a-b": "x"}}}}, "policy.onSuccess[0].params"},
		{"onSuccess long param", model.Policy{OnSuccess: []model.Chain{{Task: "b", Params: map[string]string{"a": long}}}}, "policy.onSuccess[0].params.a"},
		{"onSuccess too many", model.Policy{OnSuccess: make([]model.Chain, model.MaxOnSuccess+1)}, "policy.onSuccess"},
		{"negative timeout", model.Policy{Timeout: model.Timeout(-time.Second)}, "policy.timeout"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			task := baseTask()
			task.Policy = tt.p
			wantFieldError(t, task.Validate(), tt.field)
		})
	}
}
