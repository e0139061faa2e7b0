package journeys

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/internal/localcluster"
	"github.com/ax-scheduler/ax/internal/testkit"
)

// TestDocs_ExamplesRun runs the examples of README.md and docs/*.md, so
// that a reader who types them gets what the page says. Every shell block
// says, in an HTML comment on the line before it, whether the test runs
// it and on what (<!-- run: single|cluster|tls -->), or why not
// (<!-- illustrative: REASON -->); a block without one fails the test.
// Run blocks go through bash in the deployment's working directory, in
// document order, against real agents started once per deployment (each
// deployment's blocks share their files and exported variables); a
// transcript's commands ($ lines) are run one by one and a table header
// or JSON line they show must match. JSON and YAML task definitions are
// applied (ax task apply -f), a channel with ax channel apply -f, other
// JSON parsed. A failure names the file, the line and the command.
// docs/testing.md has the rules.
func TestDocs_ExamplesRun(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process test skipped in -short mode")
	}
	for _, tool := range []string{"bash", "curl", "cut"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("the documentation's examples need %s: %v", tool, err)
		}
	}
	root := "../.." // go test runs a package's tests in its directory
	files := []string{"README.md"}
	more, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range more {
		files = append(files, "docs/"+filepath.Base(f))
	}
	agentFlags := docAgentFlagNames(t)
	r := &docRunner{t: t, sessions: map[string]*docSession{}, seen: map[string]string{}}
	start := time.Now()
	counts := map[string]int{}
	for _, f := range files {
		md, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range docScanBlocks(f, string(md)) {
			bstart := time.Now()
			kind := r.block(b, agentFlags)
			counts[kind]++
			if kind == "run" || kind == "data" {
				t.Logf("%s: %s %s, %v", b.where(), kind, orDefault(b.arg, "single"), time.Since(bstart).Round(time.Millisecond))
			}
		}
	}
	t.Logf("documentation examples: %v in %v", counts, time.Since(start).Round(time.Millisecond))
	// The scan itself must not rot: the documentation has this many.
	if counts["run"] < 15 || counts["illustrative"] < 15 || counts["data"] < 6 {
		t.Errorf("only %v blocks found; the scan is missing examples", counts)
	}
}

// docDeployments are the deployments a block can run on.
var docDeployments = map[string]struct {
	nodes int
	opts  func(dir string) []clusterOption
}{
	// The no-flag agent: one node with its embedded executor.
	"single": {1, func(string) []clusterOption { return []clusterOption{withArgs("-executor", "auto")} }},
	// Three nodes without an embedded executor (README's three-node cluster).
	"cluster": {3, func(string) []clusterOption { return nil }},
	// Three TLS nodes whose CA and certificates are those the
	// documentation made in the working directory's tls/.
	"tls": {3, func(dir string) []clusterOption { return []clusterOption{withTLS(filepath.Join(dir, "tls"))} }},
}

// docRunner runs the blocks of the documentation in order.
type docRunner struct {
	t        *testing.T
	sessions map[string]*docSession
	seen     map[string]string // a block's deployment and content → where it ran
}

// block runs or checks one block and says what it was: "run",
// "illustrative", "data" or "other".
func (r *docRunner) block(b docBlock, agentFlags map[string]bool) string {
	t := r.t
	switch {
	case b.kind == "illustrative":
		if b.arg == "" {
			t.Errorf("%s: <!-- illustrative: --> needs a reason", b.where())
		}
		return "illustrative"
	case b.lang == "json" || b.lang == "yaml" || b.lang == "yml":
		r.data(b)
		return "data"
	case b.kind == "run":
		if _, ok := docDeployments[b.arg]; !ok {
			t.Errorf("%s: <!-- run: %s -->: no such deployment (single, cluster, tls)", b.where(), b.arg)
			return "run"
		}
		r.shell(b, agentFlags)
		return "run"
	case b.needsMarker():
		t.Errorf("%s: a %s block needs <!-- run: single|cluster|tls --> or <!-- illustrative: REASON --> on the line before it",
			b.where(), orDefault(b.lang, "shell"))
	}
	return "other"
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// data checks a JSON or YAML block: task definitions are applied with ax
// task apply -f, a channel with ax channel apply -f (on the single node,
// or the deployment its marker names), anything else parsed.
func (r *docRunner) data(b docBlock) {
	kind, err := docDataKind(b)
	if err != nil {
		r.t.Errorf("%s: %v", b.where(), err)
		return
	}
	if kind == "" || b.kind == "illustrative" {
		return
	}
	dep := "single"
	if b.kind == "run" {
		dep = b.arg
	}
	s := r.session(dep)
	s.start()
	name := fmt.Sprintf("%s-%d.%s", strings.NewReplacer("/", "-", ".md", "").Replace(b.file), b.line, b.lang)
	if err := os.WriteFile(filepath.Join(s.dir, name), []byte(strings.Join(b.lines, "\n")+"\n"), 0o644); err != nil {
		r.t.Fatal(err)
	}
	cmd := "ax task apply -f " + name
	if kind == "channel" {
		cmd = "ax channel apply -f " + name
	}
	if _, err := s.bash([]string{cmd}); err != nil {
		r.t.Errorf("%s: the %s in this block, written to a file: %s: %v", b.where(), kind, cmd, err)
	}
}

// shell runs a shell block on its deployment.
func (r *docRunner) shell(b docBlock, agentFlags map[string]bool) {
	t := r.t
	script := docPrepareShell(b)
	for _, c := range script.cmds {
		if c.kind == "agent" {
			if err := docAgentFlagsOK(c, agentFlags); err != nil {
				t.Errorf("%s: %s: %v", b.where(), c.text, err)
			}
		}
	}
	key := b.arg + "\n" + strings.Join(b.lines, "\n")
	if first, ok := r.seen[key]; ok {
		t.Logf("%s: the same as %s, which ran", b.where(), first)
		return
	}
	r.seen[key] = b.where()
	s := r.session(b.arg)
	report := func(err error) {
		var fe *docFailure
		if errors.As(err, &fe) && fe.line >= 0 && fe.line < len(b.lines) {
			t.Errorf("%s:%d: %s\n%v", b.file, b.lineOf(fe.line), strings.TrimSpace(b.lines[fe.line]), err)
			return
		}
		t.Errorf("%s: %v", b.where(), err)
	}
	if b.isTranscript() {
		s.start()
		for _, c := range script.cmds {
			out, err := s.bash(script.only(c.first, c.last))
			if err = docCompareOutput(c.output, out, err); err != nil {
				t.Errorf("%s:%d: %s\n%v", b.file, b.lineOf(c.first), c.text, err)
			}
		}
		return
	}
	// A block that starts the agents (an ax agent line) runs up to it,
	// then the test starts the deployment, then the rest runs.
	firstAgent := len(b.lines)
	for _, c := range script.cmds {
		if c.kind == "agent" {
			firstAgent = c.first
			break
		}
	}
	from := 0
	if s.c == nil && firstAgent < len(b.lines) {
		if _, err := s.bash(script.only(0, firstAgent-1)); err != nil {
			report(err)
			return
		}
		s.checkAgentFiles(b, script)
		from = firstAgent
	}
	started := s.c != nil
	s.start()
	if _, err := s.bash(script.only(from, len(b.lines)-1)); err != nil {
		report(err)
	}
	if started {
		s.checkAgentFiles(b, script)
	}
}

// checkAgentFiles: every file an `ax agent` command of the block reads
// exists in the working directory, written by an earlier step.
func (s *docSession) checkAgentFiles(b docBlock, script docScript) {
	for _, c := range script.cmds {
		if c.kind != "agent" {
			continue
		}
		for _, f := range docAgentFiles(c) {
			p := s.path(f)
			if _, err := os.Stat(p); err != nil {
				s.t.Errorf("%s:%d: %s\nit reads %s, which no step before it wrote", b.file, b.lineOf(c.first), c.text, f)
			}
		}
	}
}

// path is where a path of the documentation is in the working directory.
func (s *docSession) path(f string) string {
	f = s.paths().Replace(f)
	if !filepath.IsAbs(f) {
		f = filepath.Join(s.dir, f)
	}
	return f
}

// paths moves the system directories the documentation writes to
// into the working directory.
func (s *docSession) paths() *strings.Replacer {
	return strings.NewReplacer("/etc/ax/", s.dir+"/etc/ax/", "/var/lib/ax/", s.dir+"/var/lib/ax/")
}

// session returns the deployment's session, making it (its directory
// and addresses) on first use; its agents start later (start).
func (r *docRunner) session(name string) *docSession {
	if s, ok := r.sessions[name]; ok {
		return s
	}
	t := r.t
	dir := t.TempDir()
	for _, d := range []string{"etc/ax", "var/lib/ax"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	s := &docSession{t: t, name: name, dir: dir, addrs: map[string]string{}}
	n := docDeployments[name].nodes
	for i := 1; i <= n; i++ {
		h, err1 := localcluster.FreePort()
		ra, err2 := localcluster.FreePort()
		if err := errors.Join(err1, err2); err != nil {
			t.Fatal(err)
		}
		s.nodes = append(s.nodes, [2]string{h, ra})
		// The addresses the documentation uses for node i.
		for _, a := range []struct{ doc, real string }{
			{fmt.Sprintf("127.0.0.1:70%d0", 6+i), h}, {fmt.Sprintf("127.0.0.1:70%d1", 6+i), ra},
			{fmt.Sprintf("10.0.0.%d:7070", i), h}, {fmt.Sprintf("10.0.0.%d:7071", i), ra},
			{fmt.Sprintf("n%d:7070", i), h},
		} {
			s.addrs[a.doc] = a.real
		}
	}
	s.addrs["localhost:7070"] = s.nodes[0][0]
	lib := filepath.Join(dir, ".axdoc", "lib.sh")
	if err := os.MkdirAll(filepath.Dir(lib), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(lib, []byte(docShellLib), 0o644); err != nil {
		t.Fatal(err)
	}
	s.env = []string{
		"PATH=" + filepath.Dir(axBinary) + string(os.PathListSeparator) + os.Getenv("PATH"),
		"HOME=" + dir, "TMPDIR=" + os.TempDir(), "USER=docs", "LANG=C.UTF-8",
		"AX_ADDR=" + s.nodes[0][0],
		// What a block expects of the reader's environment.
		"EDITOR=true", "DB_PASSWORD=docs-example-password",
		"AXDOC_LIB=" + lib, "AXDOC_DIR=" + filepath.Dir(lib), "AXDOC_ENV=" + filepath.Join(filepath.Dir(lib), "env"),
	}
	r.sessions[name] = s
	return s
}

// docSession is a deployment the documentation's blocks run on: its
// agents, its working directory and its shell variables.
type docSession struct {
	t     *testing.T
	name  string
	dir   string
	nodes [][2]string       // each node's HTTP and Raft address
	addrs map[string]string // the documentation's addresses → the nodes'
	env   []string
	c     *localcluster.Cluster
}

// start starts the deployment's agents unless they run.
func (s *docSession) start() {
	if s.c != nil {
		return
	}
	opts := append(docDeployments[s.name].opts(s.dir), func(c *localcluster.Config) {
		c.Listen = func(id string) (string, string) {
			i, _ := strconv.Atoi(strings.TrimPrefix(id, "n"))
			return s.nodes[i-1][0], s.nodes[i-1][1]
		}
	})
	// startCluster fails the test itself; it runs on the test's goroutine.
	s.c = startCluster(s.t, len(s.nodes), opts...)
	s.t.Cleanup(s.stopBackground)
}

// docFailure is a block's command that failed: its content line (-1 if
// unknown) and what bash and the command printed.
type docFailure struct {
	line   int
	status string
	output string
}

func (e *docFailure) Error() string {
	return fmt.Sprintf("%s; it printed:\n%s", e.status, e.output)
}

// docFailedAt is what the library's ERR trap prints: the script line,
// the exit status and the text of the command that failed.
var docFailedAt = regexp.MustCompile(`(?m)^axdoc-failed (\d+) (\d+) (.*)\n?`)

// docOutput is what a script printed.
type docOutput struct{ stdout, stderr string }

// bash runs script lines (content line i is script line i+2: the first
// line loads the library) in the working directory with the session's
// variables, and returns what it printed.
func (s *docSession) bash(lines []string) (docOutput, error) {
	text := ". \"$AXDOC_LIB\"\n" + docRewriteAddrs(strings.Join(lines, "\n"), s.addrs) + "\n"
	text = s.paths().Replace(text)
	path := filepath.Join(s.dir, ".axdoc", "block.sh")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		return docOutput{}, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "--noprofile", "--norc", path)
	cmd.Dir, cmd.Env = s.dir, s.env
	var stdout, stderr bytes.Buffer
	var both testkit.Buffer // written by the stdout and the stderr copiers
	cmd.Stdout = io.MultiWriter(&stdout, &both)
	cmd.Stderr = io.MultiWriter(&stderr, &both)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Run()
	out := docOutput{stdout.String(), docFailedAt.ReplaceAllString(stderr.String(), "")}
	if err == nil {
		return out, nil
	}
	fe := &docFailure{line: -1, status: err.Error(), output: docTail(docFailedAt.ReplaceAllString(both.String(), ""), 30)}
	if ctx.Err() != nil {
		fe.status = "still running after 60s"
	}
	if m := docFailedAt.FindStringSubmatch(both.String()); m != nil {
		n, _ := strconv.Atoi(m[1])
		fe.line, fe.status = n-2, fmt.Sprintf("%s: exit status %s", m[3], m[2])
	}
	return out, fe
}

// stopBackground stops what the blocks left running (ax executor), with
// SIGTERM, as a reader would with Ctrl-C.
func (s *docSession) stopBackground() {
	b, _ := os.ReadFile(filepath.Join(s.dir, ".axdoc", "background.pids"))
	for _, f := range strings.Fields(string(b)) {
		pid, err := strconv.Atoi(f)
		if err != nil || syscall.Kill(pid, syscall.SIGTERM) != nil {
			continue
		}
		deadline := time.Now().Add(15 * time.Second)
		for docProcessAlive(pid) && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		if docProcessAlive(pid) {
			s.t.Errorf("%s deployment: background process %d did not stop within 15s of SIGTERM; killed", s.name, pid)
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// alive reports whether a process runs (a zombie does not).
func docProcessAlive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	_, rest, _ := strings.Cut(string(st), ") ")
	return !strings.HasPrefix(rest, "Z")
}

// docShellLib is loaded by every block's script: it stops at the first
// failing command and names its line (axdoc-failed LINE STATUS), exports
// every variable a block sets and keeps them for the deployment's next
// blocks, and defines the wrappers of long-running commands.
const docShellLib = `set -eo pipefail -a
trap 'echo "axdoc-failed $LINENO $? $BASH_COMMAND" >&2' ERR
trap '{ export -p | grep -Ev "^declare -x (OLDPWD|PWD|SHLVL|_)(=|\$)" >"$AXDOC_ENV.new" && mv "$AXDOC_ENV.new" "$AXDOC_ENV"; } || true' EXIT
if [ -f "$AXDOC_ENV" ]; then . "$AXDOC_ENV"; fi

# A command that runs until stopped (ax executor): it runs in the
# background, and must still be running a second later; the test stops
# it with SIGTERM when it is done with the deployment.
axdoc_background() {
	local log="$AXDOC_DIR/background.log" pid i rc=0
	"$@" >>"$log" 2>&1 </dev/null &
	pid=$!
	echo "$pid" >>"$AXDOC_DIR/background.pids"
	for ((i = 0; i < 20; i++)); do
		if ! kill -0 "$pid" 2>/dev/null; then
			wait "$pid" || rc=$?
			echo "axdoc: $* stopped at once (exit $rc):" >&2
			tail -n 5 "$log" >&2
			return 1
		fi
		sleep 0.05
	done
}

# A command that redraws until Ctrl-C (-w): once it has drawn (10 s at
# most) it gets SIGINT, and must exit 130 as after Ctrl-C.
axdoc_interrupt() {
	local out="$AXDOC_DIR/interrupt.out" pid i rc=0
	"$@" >"$out" 2>&1 </dev/null &
	pid=$!
	for ((i = 0; i < 200; i++)); do
		if [ -s "$out" ] || ! kill -0 "$pid" 2>/dev/null; then break; fi
		sleep 0.05
	done
	kill -INT "$pid" 2>/dev/null || true
	wait "$pid" || rc=$?
	cat "$out"
	if [ "$rc" -ne 130 ]; then
		echo "axdoc: $* exited $rc after Ctrl-C, want 130" >&2
		return 1
	fi
}
`

// docAgentFlagNames are the flags of ax agent, from ax agent -h.
func docAgentFlagNames(t *testing.T) map[string]bool {
	t.Helper()
	out, err := exec.Command(axBinary, "agent", "-h").CombinedOutput()
	if err != nil {
		t.Fatalf("ax agent -h: %v\n%s", err, out)
	}
	names := map[string]bool{}
	for _, m := range docAgentFlagRE.FindAllStringSubmatch(string(out), -1) {
		names[m[1]] = true
	}
	if !names["tls-ca"] || !names["join"] {
		t.Fatalf("ax agent -h: no flags found in\n%s", out)
	}
	return names
}

// tail is the last n lines of s.
func docTail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
