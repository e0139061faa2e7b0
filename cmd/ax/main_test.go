package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/internal/command"
	"github.com/ax-scheduler/ax/internal/follow"
	"github.com/ax-scheduler/ax/internal/testkit"
	"github.com/ax-scheduler/ax/model"
)

// axRun is the outcome of one in-process run of ax.
type axRun struct {
	stdout, stderr string
	code           int
	err            error
}

// newTestMain is a Main on buffers whose environment is env only (what
// it sets goes there too).
func newTestMain(env map[string]string, stdin string) (*Main, *testkit.Buffer, *testkit.Buffer) {
	var mu sync.Mutex
	vars := map[string]string{}
	for k, v := range env {
		vars[k] = v
	}
	stdout, stderr := &testkit.Buffer{}, &testkit.Buffer{}
	return &Main{command.IO{
		Stdin:  strings.NewReader(stdin),
		Stdout: stdout,
		Stderr: stderr,
		Getenv: func(k string) string { mu.Lock(); defer mu.Unlock(); return vars[k] },
		Setenv: func(k, v string) error { mu.Lock(); defer mu.Unlock(); vars[k] = v; return nil },
	}}, stdout, stderr
}

// ax runs ax args in this process, as main does, on a Main of its own.
func ax(t *testing.T, env map[string]string, args ...string) axRun {
	t.Helper()
	return axStdin(t, env, "", args...)
}

// axStdin is ax with stdin, bounded by 30 seconds.
func axStdin(t *testing.T, env map[string]string, stdin string, args ...string) axRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	m, stdout, stderr := newTestMain(env, stdin)
	err := m.Run(ctx, args)
	code := m.Exit(err, nil)
	return axRun{stdout: stdout.String(), stderr: stderr.String(), code: code, err: err}
}

// goldenHelp are the help texts tests/journeys/cli_test.go checks on the binary
// (tests/journeys/testdata/cli); Main must print the same in process.
var goldenHelp = []struct {
	args   []string
	code   int
	golden string
}{
	{nil, 2, "usage.txt"},
	{[]string{"help"}, 0, "usage.txt"},
	{[]string{"help", "task"}, 0, "task.txt"},
	{[]string{"task", "-h"}, 0, "task.txt"},
	{[]string{"task"}, 2, "task.txt"},
	{[]string{"task", "list", "-h"}, 0, "task-list.txt"},
	{[]string{"task", "apply", "-h"}, 0, "task-apply.txt"},
	{[]string{"task", "export", "--help"}, 0, "task-export.txt"},
	{[]string{"instance", "list", "-h"}, 0, "instance-list.txt"},
	{[]string{"instance", "rerun", "-h"}, 0, "instance-rerun.txt"},
	{[]string{"task", "rerun", "-h"}, 0, "task-rerun.txt"},
	{[]string{"trigger", "-h"}, 0, "trigger.txt"},
	{[]string{"status", "--help"}, 0, "status.txt"},
	{[]string{"completion", "-h"}, 0, "completion.txt"},
	{[]string{"acl", "-h"}, 0, "acl.txt"},
	{[]string{"acl", "token", "-h"}, 0, "acl.txt"},
	{[]string{"tls", "-h"}, 0, "tls.txt"},
	{[]string{"tls", "ca", "-h"}, 0, "tls.txt"},
	{[]string{"version", "-h"}, 0, "version.txt"},
}

// TestMain_Help: the usage texts, at every level, are the golden files
// of the binary's tests, with their exit codes (2 for usage without a
// command, 0 for help asked for), and nothing on stderr.
func TestMain_Help(t *testing.T) {
	t.Parallel()
	for _, tc := range goldenHelp {
		t.Run(strings.Join(append([]string{"ax"}, tc.args...), " "), func(t *testing.T) {
			t.Parallel()
			want, err := os.ReadFile(filepath.Join("..", "..", "tests", "journeys", "testdata", "cli", tc.golden))
			if err != nil {
				t.Fatal(err)
			}
			r := ax(t, nil, tc.args...)
			if r.code != tc.code || r.stderr != "" {
				t.Errorf("exit %d, stderr %q; want exit %d and nothing", r.code, r.stderr, tc.code)
			}
			if r.stdout != string(want) {
				t.Errorf("differs from tests/journeys/testdata/cli/%s:\n--- got\n%s\n--- want\n%s", tc.golden, r.stdout, want)
			}
		})
	}
}

// TestMain_HelpAndUnknown: help at every level answers without an error;
// an unknown command is one line with a hint.
func TestMain_HelpAndUnknown(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"help"}, {"-h"}, {"--help"}, {"help", "task"}, {"help", "agent"}, {"--version"}, {"version"},
		{"help", "executor-supervise"}} {
		if r := ax(t, nil, args...); r.code != 0 || r.stdout == "" || r.stderr != "" {
			t.Errorf("ax %s: exit %d, stdout %q, stderr %q", strings.Join(args, " "), r.code, r.stdout, r.stderr)
		}
	}
	for _, e := range commands() {
		if e.subs == nil {
			continue
		}
		for _, h := range []string{"-h", "--help", "help"} {
			if r := ax(t, nil, e.name, h); r.code != 0 || !strings.HasPrefix(r.stdout, "Usage:") {
				t.Errorf("ax %s %s: exit %d, stdout %q", e.name, h, r.code, r.stdout)
			}
		}
	}
	for _, args := range [][]string{{"foo"}, {"help", "foo"}} {
		r := ax(t, nil, args...)
		if r.code != 1 || r.stderr != "ax: unknown command \"foo\" (ax help lists them)\n" {
			t.Errorf("ax %s: exit %d, stderr %q; want one line naming it with a hint", strings.Join(args, " "), r.code, r.stderr)
		}
	}
	// The benchmarks moved out of ax: "ax bench" points at ax-bench.
	for _, args := range [][]string{{"bench", "tasks"}, {"help", "bench"}} {
		r := ax(t, nil, args...)
		if r.code != 1 || !strings.Contains(r.stderr, `unknown command "bench"`) || !strings.Contains(r.stderr, "go run ./cmd/ax-bench") || strings.Count(r.stderr, "\n") != 1 {
			t.Errorf("ax %s: %q, want one line pointing at ax-bench", strings.Join(args, " "), r.stderr)
		}
	}
}

// TestMain_FlagErrorsAndExitCodes: an unknown flag or subcommand is one
// line on stderr with where help is, and exit 1; a bad agent setting is
// refused before anything starts, naming the flag.
func TestMain_FlagErrorsAndExitCodes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	agent := []string{"agent", "-data", filepath.Join(dir, "data"), "-http", "127.0.0.1:0", "-raft", "127.0.0.1:0", "-executor", "false"}
	for _, tc := range []struct {
		args []string
		env  map[string]string
		want string
	}{
		{[]string{"task", "list", "-nope"}, nil, "flag provided but not defined: -nope (ax task list -h for help)"},
		{[]string{"acl", "token", "create", "-nope"}, nil, "flag provided but not defined: -nope (ax acl token create -h for help)"},
		{[]string{"trigger", "-limit", "x"}, nil, "flag provided but not defined: -limit (ax trigger -h for help)"},
		{[]string{"task", "lst"}, nil, `task: unknown subcommand "lst"; did you mean "list"? (ax task -h lists them)`},
		{[]string{"task", "zzz"}, nil, `task: unknown subcommand "zzz" (ax task -h lists them)`},
		{[]string{"tsk"}, nil, `unknown command "tsk"; did you mean "task"? (ax help lists them)`},
		{[]string{"instnace", "list"}, nil, `unknown command "instnace"; did you mean "instance"? (ax help lists them)`},
		{[]string{"acl", "tokn", "list"}, nil, `acl: unknown subcommand "tokn"; did you mean "token"? (ax acl -h lists them)`},
		{[]string{"acl", "token", "craete"}, nil, `acl token: unknown subcommand "craete"; did you mean "create"? (ax acl -h lists them)`},
		{[]string{"tls", "ca", "make"}, nil, `tls ca: unknown subcommand "make" (ax tls -h lists them)`},
		// A required choice is enforced before any request.
		{[]string{"submit", "T"}, nil, "submit: say when the instance is due: -delay D (30m) or -at TIME (ax trigger runs it now)"},
		{[]string{"submit", "T", "-delay", "1m", "-at", "2026-12-01T09:00"}, nil, "submit: -delay and -at both given: want one"},
		{[]string{"submit", "T", "-delay", "-1m"}, nil, "submit: -delay -1m0s is negative"},
		{[]string{"version", "extra"}, nil, `version: unexpected arguments ["extra"]`},
		// -l and -label are one flag: both spellings checked alike.
		{[]string{"task", "list", "-l", "team"}, nil, `task list: -l wants key=value, got "team"`},
		{[]string{"task", "list", "-label", "team"}, nil, `task list: -l wants key=value, got "team"`},
		{[]string{"alert", "silence", "-l", "team", "-for", "1h"}, nil, `alert silence: -l wants key=value, got "team"`},
		{[]string{"instance", "list", "-since", "yesterday"}, nil, `invalid value "yesterday" for flag -since: not a time: want a duration ago (30m, 1h, 2d, 1d12h), a date (2006-01-02), a time (2006-01-02T15:04, 2006-01-02T15:04:05; UTC) or RFC 3339 (2006-01-02T15:04:05+08:00) (ax instance list -h for help)`},
		{[]string{"trigger", "x", "-log"}, nil, "trigger: -log goes with -wait"},
		{[]string{"instance", "rerun", "0000000000100000", "-log"}, nil, "instance rerun: -log goes with -wait"},
		{[]string{"instance", "rerun"}, nil, "instance rerun: want exactly one instance id"},
		{[]string{"task", "rerun", "-state"}, nil, "flag needs an argument: -state (ax task rerun -h for help)"},
		{[]string{"task", "get"}, nil, "task get: want exactly one task name"},
		{[]string{"task", "list", "-o", "xml"}, nil, `task list: -o "xml": want table, json or yaml`},
		// A subcommand takes only its own flags.
		{[]string{"acl", "token", "list", "-role", "admin"}, nil, "flag provided but not defined: -role (ax acl token list -h for help)"},
		{[]string{"acl", "bootstrap", "-ttl", "1h"}, nil, "flag provided but not defined: -ttl (ax acl bootstrap -h for help)"},
		{[]string{"secret", "list", "-value-file", "f"}, nil, "flag provided but not defined: -value-file (ax secret list -h for help)"},
		// ax agent: the settings' checks, before anything starts.
		{[]string{"agent", "-log-level", "verbose"}, nil, `agent: -log-level "verbose": want one of trace, debug, info, warn, error`},
		{append(slices.Clone(agent), "-token", "abc"), nil, "agent: -token (or -token-file) is 3 bytes; a token must be at least 16"},
		{agent, map[string]string{"AX_TOKEN": "abcd"}, "agent: -token (or -token-file) is 4 bytes; a token must be at least 16"},
		{append(slices.Clone(agent), "-max-conns", "0"), nil, "agent: -max-conns: wants at least 1, got 0"},
		{append(slices.Clone(agent), "-lease", "-5s"), nil, `agent: -lease: "-5s" is negative`},
		{append(slices.Clone(agent), "extra"), nil, `agent: unexpected arguments ["extra"]`},
		{[]string{"approval", "request", "-summary", "x"}, nil, "approval request: AX_INSTANCE_ID and AX_ATTEMPT are not set: run it from a task's command"},
	} {
		r := ax(t, tc.env, tc.args...)
		if r.code != 1 || r.stdout != "" || r.stderr != "ax: "+tc.want+"\n" && !strings.HasPrefix(r.stderr, "ax: "+tc.want) {
			t.Errorf("ax %s: exit %d\nstderr %q\nwant   %q (one line, nothing on stdout: %q)", strings.Join(tc.args, " "), r.code, r.stderr, "ax: "+tc.want, r.stdout)
		}
		if strings.Count(r.stderr, "\n") != 1 {
			t.Errorf("ax %s: %d lines on stderr, want one:\n%s", strings.Join(tc.args, " "), strings.Count(r.stderr, "\n"), r.stderr)
		}
	}
}

// TestMain_Streams: a command reads Main's stdin and writes Main's
// stdout and stderr, so runs of ax in one process do not mix.
func TestMain_Streams(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/trigger"):
			name := strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/v1/tasks/"), "/trigger")
			_ = json.NewEncoder(w).Encode(model.Submitted{ID: "00000000000000" + name, State: model.StateReady})
		case r.Method == http.MethodPut:
			_ = json.NewEncoder(w).Encode(model.WriteResult{Created: true, Version: 1})
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	for i := range 8 {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			t.Parallel()
			name := fmt.Sprintf("t%d", i)
			r := ax(t, map[string]string{"AX_ADDR": srv.URL}, "trigger", name)
			if want := "00000000000000" + name + " READY\n"; r.code != 0 || r.stdout != want || r.stderr != "" {
				t.Errorf("trigger %s: exit %d, stdout %q, stderr %q; want %q", name, r.code, r.stdout, r.stderr, want)
			}
			def := fmt.Sprintf(`{"name": %q, "trigger": {"type": "event"}, "action": {"type": "shell", "command": "true"}}`, name)
			r = axStdin(t, map[string]string{"AX_ADDR": srv.URL}, def, "task", "apply", "-f", "-")
			if want := name + " created (version 1)\n"; r.code != 0 || r.stdout != want {
				t.Errorf("task apply -f - (%s): exit %d, stdout %q, stderr %q; want %q", name, r.code, r.stdout, r.stderr, want)
			}
		})
	}
}

// TestCommands_EveryLeafHelps: every leaf of the table answers -h with a
// usage on stdout listing exactly the flags of its flag set (the one
// completion reads), and runs nothing.
func TestCommands_EveryLeafHelps(t *testing.T) {
	t.Parallel()
	for _, path := range paths() {
		if slices.Equal(path, []string{"version"}) || slices.Equal(path, []string{"__complete"}) {
			continue // they take no flags and parse none
		}
		t.Run(strings.Join(path, " "), func(t *testing.T) {
			t.Parallel()
			r := ax(t, nil, append(slices.Clone(path), "-h")...)
			if r.code != 0 || !strings.HasPrefix(r.stdout, "Usage:") || r.stderr != "" {
				t.Fatalf("exit %d, stderr %q, stdout:\n%s", r.code, r.stderr, r.stdout)
			}
			m, _, _ := newTestMain(nil, "")
			e := lookup(path[0])
			if e.subs != nil {
				e, _ = e.sub(path[1:])
			}
			var want []string
			e.new(&m.IO).Flags().VisitAll(func(f *flag.Flag) { want = append(want, f.Name) })
			var listed []string
			_, list, _ := strings.Cut(r.stdout, "\nFlags:\n")
			for _, l := range strings.Split(list, "\n") {
				if rest, ok := strings.CutPrefix(l, "  -"); ok {
					listed = append(listed, strings.FieldsFunc(rest, func(r rune) bool { return r == ' ' || r == '\t' })[0])
				}
			}
			if !slices.Equal(listed, want) {
				t.Errorf("-h lists %q, the flag set has %q", listed, want)
			}
		})
	}
}

// TestHelp_KeepsSecretsOut: no command's -h prints the tokens of the
// environment, which a flag default would.
func TestHelp_KeepsSecretsOut(t *testing.T) {
	t.Parallel()
	env := map[string]string{"AX_TOKEN": "secret-api-token", "AX_EXECUTOR_TOKEN": "secret-exec-token", "AX_ADDR": "10.9.8.7:7070"}
	for _, path := range paths() {
		r := ax(t, env, append(slices.Clone(path), "-h")...)
		if r.code != 0 {
			t.Fatalf("ax %s -h: exit %d %s", strings.Join(path, " "), r.code, r.stderr)
		}
		if strings.Contains(r.stdout, "secret-") {
			t.Errorf("ax %s -h prints a token from the environment:\n%s", strings.Join(path, " "), r.stdout)
		}
	}
	// The environment is Main's: AX_ADDR is the default it shows.
	if r := ax(t, env, "task", "list", "-h"); !strings.Contains(r.stdout, `(default "10.9.8.7:7070")`) {
		t.Errorf("ax task list -h does not show Main's AX_ADDR:\n%s", r.stdout)
	}
}

func TestVersionLine(t *testing.T) {
	t.Parallel()
	v := versionLine()
	if !strings.HasPrefix(v, "ax ") || !strings.Contains(v, runtime.Version()) || !strings.Contains(v, runtime.GOOS+"/"+runtime.GOARCH) {
		t.Fatalf("version line %q", v)
	}
}

func TestExitCode(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err  error
		sig  os.Signal
		want int
	}{
		{nil, nil, 0},
		{errors.New("boom"), nil, 1},
		{flag.ErrHelp, nil, 2},
		{context.Canceled, os.Interrupt, 130},
		{nil, os.Interrupt, 130},
		{nil, syscall.SIGTERM, 0},
		{context.Canceled, syscall.SIGTERM, 0}, // a -w watch stopped by SIGTERM
		{fmt.Errorf("watch: %w", context.Canceled), syscall.SIGTERM, 0},
		{&follow.StoppedError{ID: "i", Err: context.Canceled}, syscall.SIGTERM, 143}, // a -wait: not a success
		{&follow.StoppedError{ID: "i", Err: context.Canceled}, os.Interrupt, 130},
		{context.Canceled, nil, 1},
		{errors.New("boom"), syscall.SIGTERM, 1},
		{command.ExitStatus(3), nil, 3},
		{command.ExitStatus(1), os.Interrupt, 1},
		{&follow.OutcomeError{State: model.StateFailed}, nil, 1},
		{&follow.OutcomeError{State: model.StateTerminated}, nil, 3},
		{&follow.OutcomeError{State: model.StateCanceled}, nil, 4},
		{&follow.OutcomeError{State: model.StateSkipped}, nil, 4},
		{fmt.Errorf("wrapped: %w", &follow.OutcomeError{State: model.StateTerminated}), nil, 3},
	} {
		if got := exitCode(tc.err, tc.sig); got != tc.want {
			t.Errorf("exitCode(%v, %v) = %d, want %d", tc.err, tc.sig, got, tc.want)
		}
	}
}

// TestMain_Exit: an error is reported on Main's stderr with its hint; a
// usage request, an ExitStatus and Ctrl-C add nothing.
func TestMain_Exit(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err  error
		sig  os.Signal
		want string
	}{
		{errors.New("boom"), nil, "ax: boom\n"},
		{&model.Error{Code: model.CodeUnauthorized, Message: "missing token"}, nil, "ax: missing token\nax: hint: the cluster wants a token: set -token or AX_TOKEN (or -token-file)\n"},
		{flag.ErrHelp, nil, ""},
		{command.ExitStatus(1), nil, ""},
		{context.Canceled, os.Interrupt, ""},
		{context.Canceled, syscall.SIGTERM, ""},
		{errors.New("boom"), syscall.SIGTERM, "ax: boom\n"},
	} {
		m, _, stderr := newTestMain(nil, "")
		m.Exit(tc.err, tc.sig)
		if got := stderr.String(); got != tc.want {
			t.Errorf("Exit(%v): stderr %q, want %q", tc.err, got, tc.want)
		}
	}
}

// TestMain_NestedGroupHelp: a group inside a group ("acl token", "tls
// ca") answers -h with the group's help, like "ax acl -h", and alone
// prints it as usage (exit 2), like "ax task".
func TestMain_NestedGroupHelp(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args  []string
		group string
		code  int
	}{
		{[]string{"acl", "token", "-h"}, "acl", 0},
		{[]string{"acl", "token", "--help"}, "acl", 0},
		{[]string{"acl", "token", "help"}, "acl", 0},
		{[]string{"tls", "ca", "-h"}, "tls", 0},
		{[]string{"tls", "cert", "-h"}, "tls", 0},
		{[]string{"acl", "token"}, "acl", 2},
		{[]string{"tls", "ca"}, "tls", 2},
	} {
		want := ax(t, nil, tc.group, "-h").stdout
		r := ax(t, nil, tc.args...)
		if r.code != tc.code || r.stderr != "" || r.stdout != want {
			t.Errorf("ax %s: exit %d, stderr %q, stdout %q; want exit %d and ax %s -h's help", strings.Join(tc.args, " "), r.code, r.stderr, r.stdout, tc.code, tc.group)
		}
	}
}

// TestMain_VersionHelp: ax version -h prints its usage, not the version.
func TestMain_VersionHelp(t *testing.T) {
	t.Parallel()
	r := ax(t, nil, "version", "-h")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "Usage: ax version") || strings.Contains(r.stdout, runtime.Version()) {
		t.Errorf("ax version -h: exit %d, stdout %q; want its usage", r.code, r.stdout)
	}
	if r := ax(t, nil, "version"); r.code != 0 || r.stdout != versionLine()+"\n" {
		t.Errorf("ax version: exit %d, stdout %q", r.code, r.stdout)
	}
}
