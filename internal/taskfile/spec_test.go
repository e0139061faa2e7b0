package taskfile

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/api/visible"
	"github.com/ax-scheduler/ax/model"
)

// TestSpec_Fields: every JSON field of model.Task is in Spec, or
// is one the server owns, or paused: a field added to the task must be
// exported (or knowingly left out here), or export would drop it and a
// re-apply would reset it.
func TestSpec_Fields(t *testing.T) {
	t.Parallel()
	left := map[string]bool{"version": true, "createdAt": true, "updatedAt": true, "updatedBy": true, "nextFireTimes": true, "paused": true,
		"runs": true, "completed": true, "-": true, // "-": Resolved, what the state machine compiles for a read
		"rollout": true} // a write's request to roll the definition out as a canary, never stored
	spec := map[string]bool{}
	st := reflect.TypeFor[Spec]()
	for i := range st.NumField() {
		spec[jsonName(st.Field(i))] = true
	}
	tt := reflect.TypeFor[model.Task]()
	for i := range tt.NumField() {
		name := jsonName(tt.Field(i))
		if !spec[name] && !left[name] {
			t.Errorf("model.Task field %q is neither in Spec nor left out on purpose", name)
		}
		if spec[name] && left[name] {
			t.Errorf("field %q is exported and left out", name)
		}
	}
	for _, f := range serverFields {
		if !left[f] {
			t.Errorf("apply drops %q, which export keeps", f)
		}
	}
}

func jsonName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	return name
}

// TestWrite_RoundTrip: a definition rendered as YAML (export, the dry
// run's diff) reads back as the same JSON, whatever its strings look like.
func TestWrite_RoundTrip(t *testing.T) {
	t.Parallel()
	at := model.Time{Time: time.Date(2030, 1, 2, 3, 4, 5, 6e6, time.UTC)}
	specs := []Spec{
		{Name: "plain", Trigger: model.Trigger{Type: model.TriggerCron, Expression: "*/5 * * * *", Timezone: "UTC"},
			Action: model.Action{Type: model.ActionShell, Command: "echo hi"}},
		{Name: "tricky", Trigger: model.Trigger{Type: model.TriggerOnce, At: &at},
			Action: model.Action{Type: model.ActionShell, Command: "#!/bin/sh\nset -e\n  indented: yes\n\ttab\n",
				Env: map[string]model.Value{"N": model.TextValue("123"), "B": model.TextValue("true"), "Z": model.TextValue("null"),
					"E": model.TextValue(""), "Y": model.TextValue("yes"), "S": model.SecretValue("db"), "Q": model.TextValue(`"quoted" 'x' : - [a]`)}},
			Policy: model.Policy{MaxRetries: 3, RetryInterval: model.Duration(90 * time.Second), Timeout: model.NoTimeout,
				RetryableExitCodes: []int{1, 75}, Notify: []string{"ops"}, OnSuccess: []model.Chain{{Task: "next", Params: map[string]string{"a": "1.5"}}}},
			Labels: map[string]string{"app.kubernetes.io/name": "x", "n": "0x1F", "empty": ""}},
		{Name: "http", Trigger: model.Trigger{Type: model.TriggerInterval, Every: model.Duration(time.Hour)},
			Action: model.Action{Type: model.ActionHTTP, Method: "POST", URL: "https://h.example/x?a=1&b=2", Body: `{"k": [1, 2]}`,
				Headers: map[string]model.Value{"Authorization": model.SecretValue("tok")}}},
	}
	var buf bytes.Buffer
	if err := Write(&buf, specs, "yaml"); err != nil {
		t.Fatal(err)
	}
	docs, err := parseYAMLDocs("export.yaml", buf.Bytes())
	if err != nil {
		t.Fatalf("%v\n%s", err, buf.String())
	}
	if len(docs) != len(specs) {
		t.Fatalf("read %d documents, want %d:\n%s", len(docs), len(specs), buf.String())
	}
	for i, s := range specs {
		want, _ := json.Marshal(s)
		var w, g any
		_ = json.Unmarshal(want, &w)
		if err := json.Unmarshal(docs[i].body, &g); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(g, w) {
			t.Errorf("%s: read back\n%s\nwant\n%s\nfrom YAML\n%s", s.Name, docs[i].body, want, buf.String())
		}
	}
	if !strings.HasPrefix(buf.String(), "name: plain\ntrigger:\n  type: cron\n") {
		t.Errorf("fields out of the API's order:\n%s", buf.String())
	}

	// JSON export reads back too.
	buf.Reset()
	if err := Write(&buf, specs, "json"); err != nil {
		t.Fatal(err)
	}
	jd, err := parseJSONDocs("export.json", buf.Bytes())
	if err != nil || len(jd) != len(specs) {
		t.Fatalf("json export: %v, %d documents", err, len(jd))
	}
}

func TestParseSelector(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		in      []string
		want    map[string]string
		wantErr string
	}{
		{"none", nil, nil, ""},
		{"comma-separated", []string{"team=data,env=prod"}, map[string]string{"team": "data", "env": "prod"}, ""},
		{"repeated", []string{"team=data", " env=prod "}, map[string]string{"team": "data", "env": "prod"}, ""},
		{"empty value", []string{"team="}, map[string]string{"team": ""}, ""},
		{"same twice", []string{"team=data", "team=data"}, map[string]string{"team": "data"}, ""},
		{"conflict", []string{"team=data,team=web"}, nil, "given twice"},
		{"no value", []string{"team"}, nil, `-l wants key=value, got "team"`},
		{"no key", []string{"=x"}, nil, "-l wants key=value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := ParseSelector(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got %v, %v; want error %q", got, err, tt.wantErr)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %v, %v; want %v", got, err, tt.want)
			}
		})
	}
}

func TestRedacted(t *testing.T) {
	t.Parallel()
	clean := &model.Task{Action: model.Action{Env: map[string]model.Value{"A": model.TextValue("x"), "S": model.SecretValue(visible.Redacted)}}}
	if f := Redacted(clean); f != "" {
		t.Errorf("clean task: got %q", f)
	}
	hidden := &model.Task{Action: model.Action{Headers: map[string]model.Value{"Authorization": model.TextValue(visible.Redacted)}}}
	if f := Redacted(hidden); f != "action.headers.Authorization" {
		t.Errorf("redacted header: got %q", f)
	}
}
