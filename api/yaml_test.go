package api_test

import (
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/ax-scheduler/ax/api"
	"github.com/ax-scheduler/ax/model"
)

// TestServer_PutTaskYAML: a definition sent as YAML (Content-Type
// application/yaml) is read as ax task apply reads a YAML file, and then
// judged as a JSON one: the same task, the same 400s naming the field.
func TestServer_PutTaskYAML(t *testing.T) {
	yaml := func(body string) map[string]string { return map[string]string{"Content-Type": body} }
	const def = "trigger:\n  type: cron\n  expression: \"0 2 * * *\"\n  timezone: Asia/Shanghai\naction:\n  type: shell\n  command: echo hi\nlabels:\n  env: prod\n"
	want := model.Task{Name: "daily", Trigger: model.Trigger{Type: model.TriggerCron, Expression: "0 2 * * *", Timezone: "Asia/Shanghai"},
		Action: model.Action{Type: model.ActionShell, Command: "echo hi"}, Labels: map[string]string{"env": "prod"}}
	for _, tt := range []struct {
		name, path, ctype, body string
		status                  int
		field, message, method  string
	}{
		{"yaml", "/v1/tasks/daily", "application/yaml", def, 200, "", "", "PutTask"},
		{"yaml with charset", "/v1/tasks/daily", "application/yaml; charset=utf-8", def, 200, "", "", "PutTask"},
		{"x-yaml dry run", "/v1/tasks/daily?dryRun=true", "application/x-yaml", def, 200, "", "", "PlanTask"},
		{"unknown field named", "/v1/tasks/daily", "application/yaml", def + "policy:\n  retryIntervall: 5m\n", 400, "policy.retryIntervall", "unknown field", ""},
		{"wrong type named", "/v1/tasks/daily", "application/yaml", def + "policy:\n  maxRetries: many\n", 400, "policy.maxRetries", "", ""},
		{"invalid value named", "/v1/tasks/daily", "application/yaml", strings.Replace(def, "0 2 * * *", "61 2 * * *", 1), 400, "trigger.expression", "", ""},
		{"syntax error has its line", "/v1/tasks/daily", "application/yaml", def + "policy: [\n", 400, "", "line", ""},
		{"two documents", "/v1/tasks/daily", "application/yaml", def + "---\n" + def, 400, "", "second document", ""},
		{"a list", "/v1/tasks/daily", "application/yaml", "- a\n- b\n", 400, "", "not a mapping", ""},
		{"empty", "/v1/tasks/daily", "application/yaml", "", 400, "", "empty", ""},
		{"YAML sent as JSON", "/v1/tasks/daily", "application/json", def, 400, "", "JSON", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fb := &fakeBackend{Write: &model.WriteResult{Name: "daily", Version: 1, Changed: true}}
			rec := serve(t, api.Config{}, fb, request{method: http.MethodPut, path: tt.path, body: tt.body, header: yaml(tt.ctype)})
			if rec.Code != tt.status {
				t.Fatalf("status %d, want %d (body %s)", rec.Code, tt.status, rec.Body)
			}
			if tt.status != 200 {
				if !strings.Contains(rec.Body.String(), `"field":"`+tt.field+`"`) && tt.field != "" || !strings.Contains(rec.Body.String(), tt.message) {
					t.Errorf("body %s: want field %q, message with %q", rec.Body, tt.field, tt.message)
				}
				if len(fb.Calls()) != 0 {
					t.Errorf("a refused body reached the backend: %v", fb.Methods())
				}
				return
			}
			calls := fb.Calls()
			if len(calls) != 1 || calls[0].Method != tt.method || !reflect.DeepEqual(*calls[0].Task, want) {
				t.Errorf("backend calls %+v, want %s of %+v", calls, tt.method, want)
			}
		})
	}
}
