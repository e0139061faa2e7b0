package view

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/ax-scheduler/ax/model"
)

func TestHuman(t *testing.T) {
	t.Parallel()
	for d, want := range map[time.Duration]string{
		350 * time.Millisecond:         "350ms",
		1500 * time.Millisecond:        "1.5s",
		42 * time.Second:               "42s",
		3*time.Minute + 12*time.Second: "3m12s",
		3*time.Hour + 12*time.Minute:   "3h12m",
		50 * time.Hour:                 "2d2h",
	} {
		if got := Human(d); got != want {
			t.Errorf("Human(%s) = %q, want %q", d, got, want)
		}
	}
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	if got := ago(model.Time{Time: now.Add(-time.Minute)}, now); got != "1m00s ago" {
		t.Errorf("ago a minute back: %q", got)
	}
	if got := ago(model.Time{Time: now.Add(5 * time.Minute)}, now); got != "in 5m00s" {
		t.Errorf("ago five minutes on: %q", got)
	}
}

// TestOutput_Print: table calls the table function, json and yaml carry
// the JSON field names and the wire forms of values (model.Time), -json
// is -o json, and a bad or contradictory format is refused.
func TestOutput_Print(t *testing.T) {
	t.Parallel()
	v := model.TaskHistory{Name: "x", Versions: []model.TaskVersion{{Version: 2, Op: "update", Time: model.Time{Time: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)}}}}
	table := func(w io.Writer) error { _, err := io.WriteString(w, "TABLE\n"); return err }
	for _, tc := range []struct {
		name string
		o    Output
		want func(t *testing.T, out []byte)
	}{
		{"default", Output{}, func(t *testing.T, out []byte) {
			if string(out) != "TABLE\n" {
				t.Errorf("got %q", out)
			}
		}},
		{"json", Output{format: "json"}, func(t *testing.T, out []byte) {
			var got model.TaskHistory
			if err := json.Unmarshal(out, &got); err != nil || got.Name != "x" || got.Versions[0].Version != 2 {
				t.Errorf("got %s (%v)", out, err)
			}
		}},
		{"-json", Output{format: "table", asJSON: true}, func(t *testing.T, out []byte) {
			if !json.Valid(out) {
				t.Errorf("got %s", out)
			}
		}},
		{"yaml", Output{format: "yaml"}, func(t *testing.T, out []byte) {
			var got map[string]any
			if err := yaml.Unmarshal(out, &got); err != nil || got["name"] != "x" {
				t.Errorf("got %s (%v)", out, err)
			}
			if !strings.Contains(string(out), `time: "2026-11-29T12:00:00.000Z"`) {
				t.Errorf("time not in its wire form:\n%s", out)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if err := tc.o.Check(); err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			if err := tc.o.Print(&buf, v, table); err != nil {
				t.Fatal(err)
			}
			tc.want(t, buf.Bytes())
		})
	}
	for _, bad := range []Output{{format: "xml"}, {format: "yaml", asJSON: true}} {
		if err := bad.Check(); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}

// TestOutput_YAMLKeepsTheAPIOrder: -o yaml writes every object's fields
// in the order of the API's JSON (a task: name, trigger, action, policy,
// ...), and the YAML reads back as that JSON.
func TestOutput_YAMLKeepsTheAPIOrder(t *testing.T) {
	t.Parallel()
	at := model.Time{Time: time.Date(2030, 1, 2, 3, 4, 5, 6e6, time.UTC)}
	task := model.Task{
		Name:    "nightly",
		Trigger: model.Trigger{Type: model.TriggerCron, Expression: "0 2 * * *", Timezone: "Europe/Paris"},
		Action: model.Action{Type: model.ActionShell, Command: "#!/bin/sh\nset -e\n  make report\n", Workdir: "/srv",
			Env: map[string]model.Value{"Z": model.TextValue("yes"), "A": model.SecretValue("db"), "N": model.TextValue("1:30")}},
		Policy: model.Policy{MaxRetries: 3, RetryInterval: model.Duration(90 * time.Second), RetryableExitCodes: []int{1, 75},
			OnSuccess: []model.Chain{{Task: "next", Params: map[string]string{"b": "2", "a": "on"}}}},
		Labels:        map[string]string{"team": "data", "app.kubernetes.io/name": "x"},
		Paused:        true,
		Version:       7,
		CreatedAt:     at,
		UpdatedAt:     at,
		UpdatedBy:     "ci",
		NextFireTimes: []model.Time{at, {Time: at.Add(24 * time.Hour)}},
	}
	instances := model.InstanceList{Instances: []model.Instance{{ID: "i1", Task: "nightly", TaskVersion: 7, State: model.StateSuccess,
		Payload:   json.RawMessage(`{"zeta": 1, "alpha": {"y": [true, null, 1.50, "off"], "x": {}}, "big": 12345678901234567890}`),
		CreatedAt: at, Events: []model.Event{{Time: at, Type: "created", Message: "a: b\n- c"}}}}, NextCursor: "c1"}
	for _, tc := range []struct {
		name string
		v    any
		top  []string // the first keys of the first object, in order
	}{
		{"task get", task, []string{"name", "trigger", "action", "policy", "labels", "paused", "version", "createdAt", "updatedAt", "updatedBy", "nextFireTimes"}},
		{"task list", []model.Task{task, {Name: "bare", Trigger: model.Trigger{Type: model.TriggerEvent}}}, []string{"name", "trigger", "action", "policy", "labels"}},
		{"instance list", instances, []string{"instances", "nextCursor"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			o := Output{format: FormatYAML}
			if err := o.Check(); err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			if err := o.Print(&buf, tc.v, nil); err != nil {
				t.Fatal(err)
			}
			api, err := json.Marshal(tc.v)
			if err != nil {
				t.Fatal(err)
			}
			var doc yaml.Node
			if err := yaml.Unmarshal(buf.Bytes(), &doc); err != nil {
				t.Fatalf("%v\n%s", err, buf.String())
			}
			if got, want := yamlKeys(doc.Content[0], ""), jsonKeys(t, api); !slices.Equal(got, want) {
				t.Errorf("keys out of the API's order:\n got %q\nwant %q\n%s", got, want, buf.String())
			}
			first := doc.Content[0]
			if first.Kind == yaml.SequenceNode {
				first = first.Content[0]
			}
			var top []string
			for i := 0; i < len(first.Content); i += 2 {
				top = append(top, first.Content[i].Value)
			}
			if len(top) < len(tc.top) || !slices.Equal(top[:len(tc.top)], tc.top) {
				t.Errorf("first object's keys start %q, want %q\n%s", top, tc.top, buf.String())
			}

			// Read back: the YAML's data, as JSON, is the API's JSON.
			var fromYAML any
			if err := yaml.Unmarshal(buf.Bytes(), &fromYAML); err != nil {
				t.Fatal(err)
			}
			back, err := json.Marshal(fromYAML)
			if err != nil {
				t.Fatal(err)
			}
			var got, want any
			if err := json.Unmarshal(back, &got); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(api, &want); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("read back\n%s\nwant\n%s\nfrom\n%s", back, api, buf.String())
			}
		})
	}
}

// jsonKeys lists the object keys of a JSON document in their order, each
// with its path ("action.env.A", "[0].name").
func jsonKeys(t *testing.T, data []byte) []string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(data))
	var keys []string
	var walk func(path string)
	walk = func(path string) {
		tok, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		d, ok := tok.(json.Delim)
		if !ok {
			return
		}
		for i := 0; dec.More(); i++ {
			if d == '[' {
				walk(fmt.Sprintf("%s[%d]", path, i))
				continue
			}
			k, err := dec.Token()
			if err != nil {
				t.Fatal(err)
			}
			keys = append(keys, path+"."+k.(string))
			walk(path + "." + k.(string))
		}
		if _, err := dec.Token(); err != nil {
			t.Fatal(err)
		}
	}
	walk("")
	return keys
}

// yamlKeys lists the mapping keys under n in their order, with paths as
// jsonKeys writes them.
func yamlKeys(n *yaml.Node, path string) []string {
	var keys []string
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			p := path + "." + n.Content[i].Value
			keys = append(keys, p)
			keys = append(keys, yamlKeys(n.Content[i+1], p)...)
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			keys = append(keys, yamlKeys(c, fmt.Sprintf("%s[%d]", path, i))...)
		}
	}
	return keys
}
