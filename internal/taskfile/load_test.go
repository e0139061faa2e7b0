package taskfile

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// writeFiles creates files (path relative to dir → content) under dir.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for p, c := range files {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// loaded is what a test checks of a Doc.
type loaded struct {
	Name, Pos string
	Body      map[string]any
}

// loadedDocs summarizes definitions, their bodies decoded with numbers
// kept as text.
func loadedDocs(t *testing.T, docs []Doc) []loaded {
	t.Helper()
	var out []loaded
	for _, d := range docs {
		out = append(out, loaded{d.name, d.pos(), reparse(t, d.body)})
	}
	return out
}

func TestLoad_Directory(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"b.yaml": `# leading comment
---
name: b1
trigger: {type: event}
action:
  type: shell
  command: |
    echo one
    echo two
labels: {team: data, "app.kubernetes.io/name": x}
---
---
name: b2
version: 7
createdAt: "2026-01-01T00:00:00.000Z"
paused: true
trigger: {type: cron, expression: "0 2 * * *"}
action: {type: shell, command: "true"}
`,
		"a.json": `[
  {"name": "a1", "trigger": {"type": "event"}, "action": {"type": "shell", "command": "x"}, "nextFireTimes": []},

  {"name": "a2", "policy": {"maxRetries": 12345678901234567890}}
]`,
		"c.yml": `- name: c1
  trigger: {type: event}
- name: c2
  policy: {maxRetries: 2, retryInterval: 5m}
`,
		"notes.txt":       "not a task",
		".hidden.yaml":    "name: hidden",
		"sub/d.yaml":      "name: nested",
		"upper/../E.JSON": `{"name": "e1"}`,
	})
	docs, err := Load([]string{dir}, nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	p := func(f string) string { return filepath.Join(dir, f) }
	big := json.Number("12345678901234567890")
	want := []loaded{
		{"e1", p("E.JSON") + ":1", map[string]any{"name": "e1"}},
		{"a1", p("a.json") + ":2 (item 1)", map[string]any{"name": "a1", "trigger": map[string]any{"type": "event"}, "action": map[string]any{"type": "shell", "command": "x"}}},
		{"a2", p("a.json") + ":4 (item 2)", map[string]any{"name": "a2", "policy": map[string]any{"maxRetries": big}}},
		{"b1", p("b.yaml") + ":3 (document 1)", map[string]any{"name": "b1", "trigger": map[string]any{"type": "event"},
			"action": map[string]any{"type": "shell", "command": "echo one\necho two\n"}, "labels": map[string]any{"team": "data", "app.kubernetes.io/name": "x"}}},
		{"b2", p("b.yaml") + ":13 (document 3)", map[string]any{"name": "b2", "paused": true,
			"trigger": map[string]any{"type": "cron", "expression": "0 2 * * *"}, "action": map[string]any{"type": "shell", "command": "true"}}},
		{"c1", p("c.yml") + ":1 (document 1, item 1)", map[string]any{"name": "c1", "trigger": map[string]any{"type": "event"}}},
		{"c2", p("c.yml") + ":3 (document 1, item 2)", map[string]any{"name": "c2", "policy": map[string]any{"maxRetries": json.Number("2"), "retryInterval": "5m"}}},
	}
	if got := loadedDocs(t, docs); !reflect.DeepEqual(got, want) {
		t.Errorf("got\n%+v\nwant\n%+v", got, want)
	}
	// A JSON definition without server fields is sent as written.
	if !strings.Contains(string(docs[2].body), "12345678901234567890") || !strings.HasPrefix(string(docs[2].body), `{"name": "a2"`) {
		t.Errorf("a2 body %s, want the file's text", docs[2].body)
	}
}

// reparse decodes JSON keeping numbers' text.
func reparse(t *testing.T, b []byte) map[string]any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestLoad_StdinAndVersion(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		stdin       string
		keepVersion bool
		wantNames   []string
		wantVersion bool
	}{
		{"JSON object", `  {"name": "x", "version": 3}`, false, []string{"x"}, false},
		{"JSON object, -check-version", `{"name": "x", "version": 3}`, true, []string{"x"}, true},
		{"JSON array", "[{\"name\": \"x\"},\n{\"name\": \"y\"}]", false, []string{"x", "y"}, false},
		{"JSON stream", "{\"name\": \"x\", \"version\": 3}\n{\"name\": \"y\"} [{\"name\": \"z\"}]", false, []string{"x", "y", "z"}, false},
		{"YAML", "name: x\nversion: 3\n---\nname: y\n", false, []string{"x", "y"}, false},
		{"YAML, -check-version", "name: x\nversion: 3\n", true, []string{"x"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			docs, err := Load([]string{"-"}, strings.NewReader(tt.stdin), Options{KeepVersion: tt.keepVersion})
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, d := range docs {
				names = append(names, d.name)
				if strings.Contains(string(d.body), `"version"`) != tt.wantVersion && d.name == "x" {
					t.Errorf("%s body %s: version kept %v, want %v", d.name, d.body, !tt.wantVersion, tt.wantVersion)
				}
				if !strings.HasPrefix(d.pos(), "<stdin>:") {
					t.Errorf("pos %q, want <stdin>:line", d.pos())
				}
			}
			if !reflect.DeepEqual(names, tt.wantNames) {
				t.Errorf("names %v, want %v", names, tt.wantNames)
			}
		})
	}
}

func TestLoad_Errors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		files map[string]string
		args  []string // default: the directory
		want  []string // substrings of the error, with "DIR" for the directory
	}{
		{"no name", map[string]string{"a.yaml": "trigger: {type: event}\n---\nname: ok\n"},
			nil, []string{"DIR/a.yaml:1 (document 1): name is required"}},
		{"bad name", map[string]string{"a.json": "[\n{\"name\": \"ok\"},\n{\"name\": \"Bad Name\"}]"},
			nil, []string{"DIR/a.json:3 (item 2): name:"}},
		{"name not a string", map[string]string{"a.yaml": "trigger: {type: event}\nname: [1]\n"},
			nil, []string{"DIR/a.yaml:2 (document 1): name must be a string"}},
		{"duplicate across files", map[string]string{"a.json": `{"name": "x"}`, "b.yaml": "name: y\n---\n\nname: x\n"},
			nil, []string{"DIR/b.yaml:4 (document 2): task x is defined twice: first at DIR/a.json:1"}},
		{"duplicate in a file", map[string]string{"a.yaml": "- name: x\n- name: x\n"},
			nil, []string{"DIR/a.yaml:2 (document 1, item 2): task x is defined twice: first at DIR/a.yaml:1 (document 1, item 1)"}},
		{"JSON syntax", map[string]string{"a.json": "{\"name\": \"x\",\n \"trigger\": {\"type\": \"event\"\n \"action\": {}}"},
			nil, []string{"DIR/a.json:3: invalid character"}},
		{"JSON after the array is a second document", map[string]string{"a.json": "[{\"name\": \"x\"}]\n{}"},
			nil, []string{"DIR/a.json:2 (document 2): name is required"}},
		{"JSON documents separated by a comma", map[string]string{"a.json": "{\"name\": \"x\"},\n{\"name\": \"y\"}"},
			nil, []string{"DIR/a.json:1: invalid character ',' looking for beginning of value"}},
		{"JSON not closed", map[string]string{"a.json": "{\"name\": \"x\"}\n\n{\"name\": \"y\",\n"},
			nil, []string{"DIR/a.json:3: the JSON value that starts here is not closed before the end of the file"}},
		{"YAML syntax in a later document", map[string]string{"a.yaml": "name: a\n---\nname: b\ntrigger: [\n"},
			nil, []string{"DIR/a.yaml:4 (document 2): did not find expected node content"}},
		{"YAML duplicate key", map[string]string{"a.yaml": "name: a\nlabels:\n  k: 1\n  k: 2\n"},
			nil, []string{`DIR/a.yaml:4 (document 1): mapping key "k" already defined at line 3`}},
		{"not a mapping", map[string]string{"a.yaml": "just text\n"},
			nil, []string{"DIR/a.yaml:1 (document 1): a task definition must be an object (a mapping)"}},
		{"infinite number", map[string]string{"a.yaml": "name: a\npolicy: {maxRetries: .inf}\n"},
			nil, []string{"DIR/a.yaml:1 (document 1): policy.maxRetries: +Inf is not a JSON number"}},
		{"empty directory", map[string]string{"notes.txt": "x"}, nil, []string{"DIR: no *.json, *.yaml or *.yml files"}},
		{"only empty documents", map[string]string{"a.yaml": "---\n# nothing\n---\n"}, nil, []string{"no task definitions in DIR"}},
		{"missing file", nil, []string{"DIR/nope.json"}, []string{"DIR/nope.json: no such file"}},
		{"every problem is reported", map[string]string{"a.yaml": "trigger: {}\n", "b.json": "{"},
			nil, []string{"DIR/a.yaml:1 (document 1): name is required", "DIR/b.json"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			writeFiles(t, dir, tt.files)
			args := []string{dir}
			if tt.args != nil {
				args = nil
				for _, a := range tt.args {
					args = append(args, strings.ReplaceAll(a, "DIR", dir))
				}
			}
			docs, err := Load(args, nil, Options{})
			if err == nil {
				t.Fatalf("got %d definitions, want an error", len(docs))
			}
			for _, w := range tt.want {
				if w = strings.ReplaceAll(w, "DIR", dir); !strings.Contains(err.Error(), w) {
					t.Errorf("error:\n%v\nwant it to contain %q", err, w)
				}
			}
		})
	}
}

func TestDoc_FieldPos(t *testing.T) {
	t.Parallel()
	yamlSrc := `# c
name: x
trigger:
  type: cron
  expression: "61 * * * *"
labels:
  app.kubernetes.io/name: y
  app: z
policy:
  onSuccess:
    - task: a
    - task: b
`
	docs, err := parseYAMLDocs("f.yaml", []byte(yamlSrc))
	if err != nil || len(docs) != 1 {
		t.Fatalf("%v %d", err, len(docs))
	}
	jsonDocs, err := parseJSONDocs("f.json", []byte("[\n\n {\"name\": \"x\",\n  \"trigger\": {\"type\": \"cron\",\n   \"expression\": \"61 * * * *\"}}]"))
	if err != nil || len(jsonDocs) != 1 {
		t.Fatalf("%v %d", err, len(jsonDocs))
	}
	tests := []struct {
		d     *Doc
		field string
		want  string
	}{
		{&docs[0], "trigger.expression", "f.yaml:5 (document 1)"},
		{&docs[0], "labels.app.kubernetes.io/name", "f.yaml:7 (document 1)"},
		{&docs[0], "labels.app", "f.yaml:8 (document 1)"},
		{&docs[0], "policy.onSuccess[1].task", "f.yaml:12 (document 1)"},
		{&docs[0], "policy.onSuccess[5].task", "f.yaml:10 (document 1)"},
		{&docs[0], "action.command", "f.yaml:2 (document 1)"},
		{&docs[0], "", "f.yaml:2 (document 1)"},
		{&jsonDocs[0], "trigger.expression", "f.json:5 (item 1)"},
		{&jsonDocs[0], "policy", "f.json:3 (item 1)"},
	}
	for _, tt := range tests {
		if got := tt.d.fieldPos(tt.field); got != tt.want {
			t.Errorf("%s in %s: got %q, want %q", tt.field, tt.d.file, got, tt.want)
		}
	}
}

// TestFindField_Alias follows an alias to the mapping it names.
func TestFindField_Alias(t *testing.T) {
	t.Parallel()
	var n yaml.Node
	if err := yaml.Unmarshal([]byte("base: &b\n  type: event\ntrigger: *b\n"), &n); err != nil {
		t.Fatal(err)
	}
	if got := findField(n.Content[0], "trigger.type"); got == nil || got.Line != 2 {
		t.Fatalf("got %+v, want the aliased key on line 2", got)
	}
}

// TestLoad_JSONStream: a JSON file may hold several values one
// after another (docs/tasks.md's example: two objects), each an object or
// an array, as a YAML file holds several documents; positions then name
// the document. It was refused with a blank message ("two.json:6: ").
func TestLoad_JSONStream(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"two.json": `{"name": "extract",
 "trigger": {"type": "cron", "expression": "0 1 * * *"}}
{"name": "report",
 "trigger": {"type": "cron", "expression": "0 2 * * *"}}

[{"name": "a"},
 {"name": "b"}]
`})
	docs, err := Load([]string{filepath.Join(dir, "two.json")}, nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range docs {
		got = append(got, d.name+" "+strings.TrimPrefix(d.pos(), dir+"/"))
	}
	want := []string{"extract two.json:1 (document 1)", "report two.json:3 (document 2)",
		"a two.json:6 (document 3, item 1)", "b two.json:7 (document 3, item 2)"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %q\nwant %q", got, want)
	}
	if f := docs[1].fieldPos("trigger.expression"); f != filepath.Join(dir, "two.json")+":4 (document 2)" {
		t.Errorf("report's trigger.expression at %s, want two.json:4 (document 2)", f)
	}
}

// TestLoad_NoBlankErrors: whatever a file holds, every problem
// is reported as "file:line...: message" with a message.
func TestLoad_NoBlankErrors(t *testing.T) {
	t.Parallel()
	for i, content := range []string{
		"{} x", "{}}", "{} ]", "[{}] ]", "[{} {}]", "[{},]", "[", "{", `{"name": "x"`, `{"name": "x",}`,
		"\"text\"", "42 43", "null", "[1, {}]", "{}\n{\n", "{\"name\": \"x\"} // comment", "\ufeff{}",
		"{\"name\": \"x\"}\x00", "[{\"name\": \"x\"}]]", "{\"name\": 1e999}",
	} {
		for _, ext := range []string{".json", ".yaml", ""} {
			dir := t.TempDir()
			f := filepath.Join(dir, fmt.Sprintf("f%d%s", i, ext))
			writeFiles(t, dir, map[string]string{filepath.Base(f): content})
			_, err := Load([]string{f}, nil, Options{})
			if err == nil {
				continue // some are definitions without a name: they fail elsewhere, or load
			}
			for _, line := range strings.Split(err.Error(), "\n") {
				msg, ok := line, true
				if strings.HasPrefix(line, f) { // file:line (document N): message
					_, msg, ok = strings.Cut(strings.TrimPrefix(line, f), ": ")
				}
				if !ok || strings.TrimSpace(msg) == "" {
					t.Errorf("%q as %q: an error line without a message: %q", content, ext, line)
				}
			}
		}
	}
}
