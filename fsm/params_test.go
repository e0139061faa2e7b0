package fsm

import (
	"maps"
	"strings"
	"testing"

	"github.com/ax-scheduler/ax/model"
)

func ptr[T any](v T) *T { return &v }

// TestFSM_ParamSchemas: a task's parameter declarations refuse a trigger
// with a missing, undeclared or invalid parameter (naming it, writing
// nothing), fill the defaults of every instance (triggers, fires,
// submissions, onSuccess chains), let ax's own parameters through, and
// need protocol 8.
func TestFSM_ParamSchemas(t *testing.T) {
	fx := newPolicyFixture(t, ProtoVersion)
	job := eventTask("job", model.Policy{})
	job.Params = map[string]model.ParamSpec{
		"region": {Enum: []string{"eu", "us"}, Default: ptr("eu")},
		"count":  {Type: model.ParamInteger, Required: true},
		"day":    {Pattern: `\d{4}-\d{2}-\d{2}`},
	}
	fx.mustPut(job)
	refusals := []struct {
		params map[string]string
		field  string
		msg    string
	}{
		{nil, "params.count", "required"},
		{map[string]string{"count": "x"}, "params.count", `"x" is not an integer`},
		{map[string]string{"count": "1", "colour": "red"}, "params.colour", "declares no parameter colour (it declares count, day, region)"},
		{map[string]string{"count": "1", "region": "ap"}, "params.region", `"ap" is not one of eu, us`},
		{map[string]string{"count": "1", "day": "2026-1-1"}, "params.day", "does not match the pattern"},
	}
	for _, r := range refusals {
		before := len(fx.instancesOf("job"))
		res := fx.do(CmdTrigger, "", Trigger{Task: "job", Params: r.params})
		if res.Err == nil || res.Err.Field != r.field || !strings.Contains(res.Err.Message, r.msg) || res.Err.Code != model.CodeInvalid {
			t.Errorf("trigger %v: %+v, want %s: %q", r.params, res.Err, r.field, r.msg)
		}
		if len(fx.instancesOf("job")) != before {
			t.Errorf("trigger %v wrote an instance", r.params)
		}
	}
	id := fx.trigger2("job", map[string]string{"count": "3", "day": "2026-12-03", model.ParamFailedTask: "x"})
	want := map[string]string{"count": "3", "day": "2026-12-03", "region": "eu", model.ParamFailedTask: "x"}
	if got := fx.inst(id).Params; !maps.Equal(got, want) {
		t.Errorf("params %v, want %v (the default filled, ax's own let through)", got, want)
	}
	// A submission passes no parameters: refused while one is required.
	c := submitCmd(t, "job", fx.now+10, SubmitItem{DelayMs: 0})
	if res := fx.a.apply(c); res.Err == nil || res.Err.Field != "params.count" {
		t.Errorf("submit to a task requiring count: %+v", res.Err)
	}

	// Defaults on the instances a task makes on its own, and on a chain.
	nightly := cronTask("nightly", "0 2 * * *")
	nightly.Params = map[string]model.ParamSpec{"mode": {Enum: []string{"full", "delta"}, Default: ptr("delta")}}
	nightly.Policy.OnSuccess = []model.Chain{{Task: "job", Params: map[string]string{"count": "7"}}, {Task: "job"}}
	fx.mustPut(nightly)
	n := fx.fire("nightly", "2026-12-03")
	if got := fx.inst(n).Params; !maps.Equal(got, map[string]string{"mode": "delta"}) {
		t.Errorf("fired instance's params %v, want the default", got)
	}
	fx.run(n, true, "")
	chained := fx.instancesOf("job")
	last := chained[len(chained)-1]
	if last.Params["count"] != "7" || last.Params["region"] != "eu" || last.Params[model.ParamParentTask] != "nightly" {
		t.Errorf("chained instance's params %v", last.Params)
	}
	if e, ok := fx.event(n, "on_success"); !ok || !strings.Contains(fx.eventsText(n), "task job refuses the parameters (params.count: required") {
		t.Errorf("on_success events %+v: want the second chain refused", e)
	}
	sub := fx.a.apply(submitCmd(t, "nightly", fx.now+10, SubmitItem{DelayMs: 0}))
	if sub.Err != nil {
		t.Fatal(sub.Err)
	}
	l := fx.instancesOf("nightly")
	if got := l[len(l)-1].Params; !maps.Equal(got, map[string]string{"mode": "delta"}) {
		t.Errorf("submitted instance's params %v, want the default", got)
	}

	// Protocol 8.
	old := newPolicyFixture(t, 7)
	if r := old.put(job); r.Err == nil || r.Err.Field != "params" || !strings.Contains(r.Err.Message, "needs protocol 8") {
		t.Errorf("params at protocol 7: %+v", r.Err)
	}
}

// trigger2 triggers task with params.
func (fx *policyFixture) trigger2(task string, params map[string]string) uint64 {
	fx.t.Helper()
	var s model.Submitted
	if err := fx.do(CmdTrigger, "", Trigger{Task: task, Params: params}).Decode(&s); err != nil {
		fx.t.Fatal(err)
	}
	id, _ := model.ParseID(s.ID)
	return id
}

// eventsText is every event message of instance id, one a line.
func (fx *policyFixture) eventsText(id uint64) string {
	var b strings.Builder
	for _, e := range fx.inst(id).Events {
		b.WriteString(e.Type + ": " + e.Message + "\n")
	}
	return b.String()
}
