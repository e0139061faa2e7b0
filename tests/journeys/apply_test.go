package journeys

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/client"
	"github.com/ax-scheduler/ax/fsm/command"
	"github.com/ax-scheduler/ax/internal/testkit"
	"github.com/ax-scheduler/ax/model"
)

// wantLines checks that a run succeeded and printed exactly these lines,
// in any order (apply prints in file order; the test states sets).
func (r cliRun) wantLines(t *testing.T, what string, want ...string) {
	t.Helper()
	if r.code != 0 {
		t.Fatalf("%s: exit %d\nstdout:\n%s\nstderr:\n%s", what, r.code, r.stdout, r.stderr)
	}
	got := strings.Split(strings.TrimSpace(r.stdout), "\n")
	sort.Strings(got)
	sort.Strings(want)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("%s: got\n%s\nwant\n%s\nstderr:\n%s", what, strings.Join(got, "\n"), strings.Join(want, "\n"), r.stderr)
	}
}

// taskVersions returns the version and paused state of every task.
func taskVersions(ctx context.Context, t *testing.T, cl *client.Client) map[string]string {
	t.Helper()
	out := map[string]string{}
	page, err := cl.ListTasks(ctx, model.TaskFilter{Limit: 1000}, client.Consistent())
	if err != nil {
		t.Fatal(err)
	}
	for _, tk := range page.Tasks {
		s := fmt.Sprint("v", tk.Version)
		if tk.Paused {
			s += " paused"
		}
		out[tk.Name] = s
	}
	return out
}

// TestApply_GitOps drives task apply and export of the real binary against
// a real single-node agent: a directory of JSON and YAML files is created,
// then unchanged; a paused task stays paused when its file is applied
// again; a dry run prints the diff of a changed file and writes nothing;
// prune deletes only the labelled task missing from the files; an export
// applies as unchanged.
func TestApply_GitOps(t *testing.T) {
	c := startCluster(t, 1)
	ctx := ctxT(t, 2*time.Minute)
	cl := c.Client()
	addr := c.Addrs()[0]
	// The created/keep-paused rules are protocol 5's: wait until the
	// leader has raised the cluster to it.
	testkit.Eventually(t, 15*time.Second, func() error {
		st, err := cl.Cluster(ctx)
		if err == nil && st.Protocol != command.ProtoVersion {
			err = fmt.Errorf("cluster protocol %d, want %d", st.Protocol, command.ProtoVersion)
		}
		return err
	})
	ax := func(stdin string, args ...string) cliRun {
		t.Helper()
		return axStdin(t, nil, stdin, append(args, "-addr", addr)...)
	}

	dir := t.TempDir()
	write := func(name, content string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a.json", `[
  {"name": "git-a", "trigger": {"type": "cron", "expression": "0 3 * * *"},
   "action": {"type": "shell", "command": "echo a"}, "labels": {"team": "data"}},
  {"name": "git-b", "trigger": {"type": "event"},
   "action": {"type": "shell", "command": "echo b"}, "labels": {"team": "data"}}
]`)
	cYAML := `# the data team's tasks
name: git-c
trigger:
  type: interval
  every: 10m
action:
  type: shell
  command: echo c
labels: {team: data}
---
name: git-d
trigger: {type: event}
action: {type: shell, command: echo d}
labels: {team: web}
`
	write("b.yaml", cYAML)
	write("README.md", "not a task")

	ax("", "task", "apply", "-f", dir).wantLines(t, "first apply",
		"git-a created (version 1)", "git-b created (version 1)", "git-c created (version 1)", "git-d created (version 1)")
	ax("", "task", "apply", "-f", dir).wantLines(t, "second apply",
		"git-a unchanged (version 1)", "git-b unchanged (version 1)", "git-c unchanged (version 1)", "git-d unchanged (version 1)")

	// Paused is operational state: re-applying does not resume.
	ax("", "task", "pause", "git-a").wantLines(t, "pause", "git-a paused (version 2)")
	ax("", "task", "apply", "-f", dir).wantLines(t, "apply after pause",
		"git-a unchanged (version 2)", "git-b unchanged (version 1)", "git-c unchanged (version 1)", "git-d unchanged (version 1)")
	if got := taskVersions(ctx, t, cl)["git-a"]; got != "v2 paused" {
		t.Fatalf("git-a after re-apply: %s, want v2 paused", got)
	}

	// A dry run of a changed file: the diff, and nothing written.
	write("b.yaml", strings.Replace(cYAML, "command: echo c", "command: echo C", 1))
	before := taskVersions(ctx, t, cl)
	r := ax("", "task", "apply", "-f", dir, "-dry-run")
	if r.code != 0 {
		t.Fatalf("dry run: exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{
		"git-a unchanged (dry run, version 2)\n",
		"git-c configured (dry run, version 1)\n--- git-c on the server (version 1)\n+++ git-c in " + filepath.Join(dir, "b.yaml") + ":2 (document 1)\n",
		"\n   type: shell\n-  command: echo c\n+  command: echo C\n",
		"git-d unchanged (dry run, version 1)\n",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("dry run output lacks %q:\n%s", want, r.stdout)
		}
	}
	if after := taskVersions(ctx, t, cl); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatalf("the dry run wrote: before %v, after %v", before, after)
	}

	// Prune: git-b leaves the files; only tasks labelled team=data that
	// are not in them go, git-d (team=web) stays.
	write("a.json", `[{"name": "git-a", "trigger": {"type": "cron", "expression": "0 3 * * *"},
   "action": {"type": "shell", "command": "echo a"}, "labels": {"team": "data"}}]`)
	if r := ax("", "task", "apply", "-f", dir, "-prune"); r.code == 0 || !strings.Contains(r.stderr, "-prune needs -l") {
		t.Fatalf("-prune without -l: exit %d, stderr %q; want refused", r.code, r.stderr)
	}
	ax("", "task", "apply", "-f", dir, "-prune", "-l", "team=data", "-dry-run").wantLines(t, "prune dry run",
		"git-a unchanged (dry run, version 2)", "git-b deleted (dry run, version 1)",
		"git-c configured (dry run, version 1)", "--- git-c on the server (version 1)",
		"+++ git-c in "+filepath.Join(dir, "b.yaml")+":2 (document 1)",
		"@@ -4,7 +4,7 @@", "   every: 10m0s", " action:", "   type: shell", "-  command: echo c", "+  command: echo C",
		" policy:", "   backoff: fixed", "   maxConcurrency: 1", "git-d unchanged (dry run, version 1)")
	if after := taskVersions(ctx, t, cl); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatalf("the prune dry run wrote: before %v, after %v", before, after)
	}
	ax("", "task", "apply", "-f", dir, "-prune", "-l", "team=data").wantLines(t, "prune",
		"git-a unchanged (version 2)", "git-c configured (version 2)", "git-d unchanged (version 1)", "git-b deleted (version 2)")
	if got := taskVersions(ctx, t, cl); fmt.Sprint(got) != "map[git-a:v2 paused git-c:v2 git-d:v1]" {
		t.Fatalf("after prune: %v", got)
	}

	// Export, then apply the export: every task unchanged, git-a still
	// paused (export leaves paused out).
	exp := filepath.Join(t.TempDir(), "export")
	if r := ax("", "task", "export", "-d", exp); r.code != 0 {
		t.Fatalf("export: exit %d: %s", r.code, r.stderr)
	}
	files, _ := filepath.Glob(filepath.Join(exp, "*"))
	if len(files) != 3 {
		t.Fatalf("export wrote %v, want 3 files", files)
	}
	unchanged := []string{"git-a unchanged (version 2)", "git-c unchanged (version 2)", "git-d unchanged (version 1)"}
	ax("", "task", "apply", "-f", exp).wantLines(t, "apply of the export", unchanged...)
	for _, format := range []string{"yaml", "json"} {
		r := ax("", "task", "export", "-o", format)
		if r.code != 0 || strings.Contains(r.stdout, "paused") || strings.Contains(r.stdout, "version") {
			t.Fatalf("export -o %s: exit %d, want no paused or version:\n%s%s", format, r.code, r.stdout, r.stderr)
		}
		ax(r.stdout, "task", "apply", "-f", "-").wantLines(t, "apply of the "+format+" export on stdin", unchanged...)
	}
	if got := taskVersions(ctx, t, cl)["git-a"]; got != "v2 paused" {
		t.Fatalf("git-a after applying the exports: %s, want v2 paused", got)
	}

	// task list -json carries version and paused: it applies as unchanged
	// (version is ignored without -check-version), and with
	// -check-version a stale version fails, naming the line.
	list := ax("", "task", "list", "-json")
	ax(list.stdout, "task", "apply", "-f", "-").wantLines(t, "apply of list -json", unchanged...)
	stale := `{"name": "git-d",
 "version": 1, "trigger": {"type": "event"}, "action": {"type": "shell", "command": "echo D"}}`
	ax("", "task", "pause", "git-d").wantLines(t, "pause git-d", "git-d paused (version 2)")
	r = ax(stale, "task", "apply", "-f", "-", "-check-version")
	if r.code == 0 || !strings.Contains(r.stderr, "<stdin>:2: task git-d: version: version precondition failed") {
		t.Fatalf("stale -check-version: exit %d, stderr %q", r.code, r.stderr)
	}

	// A file with a bad task: the others are applied, the bad one is
	// reported at its line, the exit status is 1, and prune is skipped.
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("name: git-e\ntrigger: {type: event}\naction: {type: shell, command: echo e}\nlabels: {team: ops}\n---\nname: git-f\ntrigger:\n  type: cron\n  expression: \"61 * * * *\"\naction: {type: shell, command: x}\nlabels: {team: ops}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r = ax("", "task", "apply", "-f", bad, "-prune", "-l", "team=data")
	if r.code != 1 || strings.TrimSpace(r.stdout) != "git-e created (version 1)" ||
		!strings.Contains(r.stderr, bad+":9 (document 2): task git-f: trigger.expression:") ||
		!strings.Contains(r.stderr, "prune skipped: 1 tasks failed") || !strings.Contains(r.stderr, "1 of 2 tasks failed") {
		t.Fatalf("partly bad file: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if got := taskVersions(ctx, t, cl); got["git-a"] == "" || got["git-c"] == "" || got["git-f"] != "" {
		t.Fatalf("after the partly bad apply: %v", got)
	}

	// Two definitions of one task: nothing is written.
	dup := t.TempDir()
	for name, content := range map[string]string{"1.json": `{"name": "git-g", "trigger": {"type": "event"}, "action": {"type": "shell", "command": "x"}}`,
		"2.yaml": "name: git-g\ntrigger: {type: event}\naction: {type: shell, command: y}\n"} {
		if err := os.WriteFile(filepath.Join(dup, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r = ax("", "task", "apply", "-f", dup)
	if r.code != 1 || r.stdout != "" || !strings.Contains(r.stderr, "task git-g is defined twice") {
		t.Fatalf("duplicate: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if _, ok := taskVersions(ctx, t, cl)["git-g"]; ok {
		t.Fatal("a duplicate definition was applied")
	}
}
