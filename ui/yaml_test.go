package ui

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/ax-scheduler/ax/internal/yamljson"
)

// TestToYAML_ReadBackByTheServer: what the console's editor writes as
// YAML (static/js/yaml.js) is read by the server's YAML reader
// (yamljson.Document, which PUT /v1/tasks/{name} and ax task apply use)
// as the same value, for the strings YAML would misread if plain. It
// runs the module with node, and is skipped without it.
func TestToYAML_ReadBackByTheServer(t *testing.T) {
	nodeBin, err := exec.LookPath("node")
	if err != nil {
		t.Skip("no node on PATH")
	}
	cases := []string{
		`{"name":"a","trigger":{"type":"cron","expression":"0 2 * * *","timezone":"Europe/Berlin"},"version":3,"f":1.5,"neg":-2,"b":false,"nothing":null}`,
		`{"action":{"type":"shell","command":"echo \"hi\"\nexit 3\n","env":{"A":"yes","B C":"no","x:y":"#c","on":"off"}}}`,
		`{"policy":{"dependsOn":["x","y"],"onSuccess":[{"task":"r","params":{"k":"v: w"}}],"retryableExitCodes":[],"executorLabels":{}}}`,
		`{"labels":{"app.io/name":"true","n":"007","e":"","t":"\ttab","u":"ünï","lead":" x","trail":"x ","multi":"a\nb","multi2":"a\n\n","nl":"\n","dash":"- x","q":"'","star":"*x","amp":"&a","pct":"%x","at":"@x","bt":"` + "`" + `x","null":"null","tilde":"~","colon":"a:b","hash":"a #b","cr":"a\r\nb","lf1":"\nlead","deep":"x\n  y\n"}}`,
		`{"a":[1,[2,3],{"b":[{"c":1}]},"x",""],"o":{"p":{"q":{}}}}`,
	}
	dir := t.TempDir()
	src, err := os.ReadFile(filepath.Join("static", "js", "yaml.js"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "yaml.mjs"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	script := `import {toYAML} from './yaml.mjs'; import {readFileSync} from 'fs';
for (const c of JSON.parse(readFileSync(0, 'utf8'))) process.stdout.write(JSON.stringify(toYAML(c)) + '\n');`
	if err := os.WriteFile(filepath.Join(dir, "run.mjs"), []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(nodeBin, "run.mjs")
	cmd.Dir = dir
	cmd.Stdin = strings.NewReader("[" + strings.Join(cases, ",") + "]")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != len(cases) {
		t.Fatalf("%d answers for %d cases:\n%s", len(lines), len(cases), out)
	}
	for i, c := range cases {
		var y string
		if err := json.Unmarshal([]byte(lines[i]), &y); err != nil {
			t.Fatal(err)
		}
		got, err := yamljson.Document([]byte(y))
		if err != nil {
			t.Errorf("case %d: the server cannot read it: %v\n%s", i, err, y)
			continue
		}
		var want, have any
		_ = json.Unmarshal([]byte(c), &want)
		_ = json.NewDecoder(bytes.NewReader(got)).Decode(&have)
		if !reflect.DeepEqual(want, have) {
			t.Errorf("case %d: read back as\n%s\nwant\n%s\nfrom YAML:\n%s", i, got, c, y)
		}
	}
}
