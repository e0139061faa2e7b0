package config

import (
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// flagSet defines a string flag named after every key, with default
// "default", as ax agent defines typed ones.
func flagSet(t *testing.T) *flag.FlagSet {
	t.Helper()
	fs := flag.NewFlagSet("agent", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	for _, k := range Keys() {
		fs.String(FlagName(k), "default", "")
	}
	return fs
}

func mustParse(t *testing.T, src, path string) *File {
	t.Helper()
	f, err := Parse([]byte(src), path)
	if err != nil {
		t.Fatalf("Parse:\n%s\n%v", src, err)
	}
	return f
}

// TestParse_EveryKey sets every key to a value other than its default and
// checks the value its flag gets.
func TestParse_EveryKey(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cases := []struct {
		key, value, want string
	}{
		{"node", `"n7"`, "n7"},
		{"data", `"/var/lib/ax"`, "/var/lib/ax"},
		{"http", `"10.0.0.1:7070"`, "10.0.0.1:7070"},
		{"raft", `"10.0.0.1:7071"`, "10.0.0.1:7071"},
		{"advertise_http", `"ax1.example.com:7070"`, "ax1.example.com:7070"},
		{"advertise_raft", `"ax1.example.com:7071"`, "ax1.example.com:7071"},
		{"join", `["10.0.0.2:7070", "https://ax3.example.com:7070"]`, "10.0.0.2:7070,https://ax3.example.com:7070"},
		{"restore", `"backup/state.bin"`, filepath.Join(dir, "backup/state.bin")},
		{"token", `"s3cret"`, "s3cret"},
		{"token_file", `"/etc/ax/token"`, "/etc/ax/token"},
		{"executor_token", `"exec"`, "exec"},
		{"encrypt_key_file", `"keys/ax.key"`, filepath.Join(dir, "keys/ax.key")},
		{"tls_ca", `"tls/ax-ca.pem"`, filepath.Join(dir, "tls/ax-ca.pem")},
		{"tls_cert", `"tls/n1.pem"`, filepath.Join(dir, "tls/n1.pem")},
		{"tls_key", `"tls/n1-key.pem"`, filepath.Join(dir, "tls/n1-key.pem")},
		{"insecure", `true`, "true"},
		{"ui", `false`, "false"},
		{"console_url", `"https://ax.example.com/"`, "https://ax.example.com/"},
		{"max_conns", `4096`, "4096"},
		{"metrics_max_tasks", `50`, "50"},
		{"log_level", `"debug"`, "debug"},
		{"log_json", `true`, "true"},
		{"pprof", `"127.0.0.1:6060"`, "127.0.0.1:6060"},
		{"executor", `false`, "false"},
		{"executor_capacity", `4`, "4"},
		{"executor_shutdown_grace", `"20s"`, "20s"},
		{"executor_labels", `{ zone = "a", gpu = "yes" }`, "gpu=yes,zone=a"},
		{"default_timeout", `"2h"`, "2h"},
		{"lease", `"15s"`, "15s"},
		{"horizon", `"30m"`, "30m"},
		{"max_clock_skew", `"500ms"`, "500ms"},
		{"retention", `"0s"`, "0s"},
		{"retention_interval", `"5m"`, "5m"},
		{"watch_interval", `"10s"`, "10s"},
		{"stuck_after", `"1h"`, "1h"},
		{"silence_grace", `"2m"`, "2m"},
		{"overtime_grace", `"3m"`, "3m"},
		{"member_grace", `"1m"`, "1m"},
		{"anomaly_window", `"2h"`, "2h"},
		{"silence", `"20m"`, "20m"},
		{"fsm_sync", `true`, "true"},
		{"snapshot_threshold", `16384`, "16384"},
		{"snapshot_bytes", `1048576`, "1048576"},
		{"snapshot_interval", `"1m"`, "1m"},
		{"trailing_logs", `0`, "0"},
		{"raft_heartbeat_timeout", `"500ms"`, "500ms"},
		{"raft_election_timeout", `"2s"`, "2s"},
		{"raft_lease_timeout", `"250ms"`, "250ms"},
	}
	covered := map[string]bool{}
	var src strings.Builder
	for _, c := range cases {
		covered[c.key] = true
		src.WriteString(c.key + " = " + c.value + "\n")
	}
	for _, k := range Keys() {
		if !covered[k] {
			t.Errorf("key %s has no case", k)
		}
	}
	f := mustParse(t, src.String(), filepath.Join(dir, "agent.hcl"))
	fs := flagSet(t)
	if err := f.Apply(fs); err != nil {
		t.Fatal(err)
	}
	for i, c := range cases {
		t.Run(c.key, func(t *testing.T) {
			t.Parallel()
			if !f.Set(c.key) {
				t.Errorf("Set(%s) = false", c.key)
			}
			if got := fs.Lookup(FlagName(c.key)).Value.String(); got != c.want {
				t.Errorf("-%s: got %q, want %q", FlagName(c.key), got, c.want)
			}
			if got := f.lines[c.key]; got != i+1 {
				t.Errorf("line: got %d, want %d", got, i+1)
			}
		})
	}
}

// TestParse_Problems checks that each mistake is refused with the file,
// line, column and key.
func TestParse_Problems(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, src string
		line, col int
		key, msg  string
	}{
		{"unknown key, close to one", "node = \"n1\"\ndta = \"/x\"\n", 2, 1, "dta", `unknown key; did you mean "data"?`},
		{"unknown key, close to none", "\n\nbananas = 1\n", 3, 1, "bananas", "unknown key (every key is a flag"},
		{"flag spelling", "advertise-http = \"h:1\"\n", 1, 1, "advertise-http", `did you mean "advertise_http"?`},
		{"block", "tls {\n  ca = \"x\"\n}\n", 1, 1, "tls", "a block"},
		{"number for a string", "http = 7070\n", 1, 8, "http", "wants a string, got a number"},
		{"string for a number", "max_conns = \"1024\"\n", 1, 13, "max_conns", "wants a number (unquoted), got a string"},
		{"string for a bool", "ui = \"false\"\n", 1, 6, "ui", "wants a bool (true or false, unquoted), got a string"},
		{"string for a list", "join = \"a:1,b:2\"\n", 1, 8, "join", "wants a list of strings"},
		{"numbers in a list", "join = [1, 2]\n", 1, 8, "join", "wants a list of strings"},
		{"list for a map", "executor_labels = [\"a=b\"]\n", 1, 19, "executor_labels", "wants a map of strings"},
		{"number in a map", "executor_labels = { zone = 1 }\n", 1, 19, "executor_labels", "wants a map of strings"},
		{"number for an enum", "executor = 1\n", 1, 12, "executor", "wants a string or a bool"},
		{"bool for a duration", "lease = true\n", 1, 9, "lease", "wants a string, got a bool"},
		{"duration without unit", "\nlease = \"30\"\n", 2, 9, "lease", `"30" is not a duration`},
		{"negative duration", "horizon = \"-1h\"\n", 1, 11, "horizon", `"-1h" is negative`},
		{"address without port", "raft = \"10.0.0.1\"\n", 1, 8, "raft", `"10.0.0.1" is not host:port`},
		{"address with a bad port", "http = \"h:http\"\n", 1, 8, "http", "is not host:port"},
		{"bad member", "join = [\"a:1\", \"b\"]\n", 1, 8, "join", `element 2: "b" is not host:port`},
		{"bad url", "console_url = \"ax.example.com\"\n", 1, 15, "console_url", "is not an http(s):// URL"},
		{"bad log level", "log_level = \"verbose\"\n", 1, 13, "log_level", `"verbose" is not one of trace, debug, info, warn, error`},
		{"bad executor", "executor = \"maybe\"\n", 1, 12, "executor", "is not one of auto, true, false"},
		{"zero capacity", "executor_capacity = 0\n", 1, 21, "executor_capacity", "wants at least 1, got 0"},
		{"negative count", "trailing_logs = -1\n", 1, 17, "trailing_logs", "Unsuitable value"},
		{"fraction", "max_conns = 1.5\n", 1, 13, "max_conns", "Unsuitable value"},
		{"label with a comma", "executor_labels = { zone = \"a,b\" }\n", 1, 19, "executor_labels", "a value without ,"},
		{"variable", "data = \"${HOME}/ax\"\n", 1, 11, "data", "Variables not allowed"},
		{"duplicate key", "node = \"a\"\nnode = \"b\"\n", 2, 1, "node", "Attribute redefined"},
		{"syntax error", "node \"a\"\n", 1, 9, "", "Invalid block definition"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse([]byte(c.src), "/etc/ax/agent.hcl")
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("got %v, want an *Error", err)
			}
			if len(e.Problems) != 1 {
				t.Fatalf("got %d problems, want 1:\n%v", len(e.Problems), err)
			}
			p := e.Problems[0]
			if p.File != "/etc/ax/agent.hcl" || p.Line != c.line || p.Column != c.col || p.Key != c.key || !strings.Contains(p.Message, c.msg) {
				t.Errorf("got %s:%d:%d key %q %q, want /etc/ax/agent.hcl:%d:%d key %q containing %q",
					p.File, p.Line, p.Column, p.Key, p.Message, c.line, c.col, c.key, c.msg)
			}
			if !strings.HasPrefix(err.Error(), "/etc/ax/agent.hcl:") {
				t.Errorf("error does not start with the file: %v", err)
			}
		})
	}
}

// TestParse_EveryProblem checks that one load reports every problem, in
// the file's order.
func TestParse_EveryProblem(t *testing.T) {
	t.Parallel()
	src := "lease = \"x\"\nnode = \"n1\"\nui = 1\nporf = \"\"\n"
	_, err := Parse([]byte(src), "a.hcl")
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("got %v, want an *Error", err)
	}
	// Type and key problems are found before values are checked, so the
	// bad duration waits for them to be fixed.
	var got []string
	for _, p := range e.Problems {
		got = append(got, p.Key)
	}
	if want := []string{"ui", "porf"}; strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("got problems for %v, want %v:\n%v", got, want, err)
	}
	want := "a.hcl:3:6: ui: wants a bool (true or false, unquoted), got a number\na.hcl:4:1: porf: unknown key; did you mean \"pprof\"?"
	if err.Error() != want {
		t.Errorf("got\n%s\nwant\n%s", err, want)
	}
}

// TestFile_Apply_Precedence checks defaults < file < environment (keep) <
// command line, whatever the command line's value.
func TestFile_Apply_Precedence(t *testing.T) {
	t.Parallel()
	f := mustParse(t, `
node     = "from-file"
http     = "10.0.0.1:7070"
raft     = "10.0.0.1:7071"
token    = "file-token"
pprof    = "127.0.0.1:6060"
`, "agent.hcl")
	cases := []struct {
		name string
		args []string
		keep []string
		want map[string]string
	}{
		{"file over defaults", nil, nil, map[string]string{
			"node": "from-file", "http": "10.0.0.1:7070", "token": "file-token", "data": "default"}},
		{"flags over the file", []string{"-node", "from-flag", "-data", "/d"}, nil, map[string]string{
			"node": "from-flag", "http": "10.0.0.1:7070", "data": "/d"}},
		{"a flag given its default value still wins", []string{"-raft", "default"}, nil, map[string]string{
			"raft": "default", "http": "10.0.0.1:7070"}},
		{"an empty flag wins", []string{"-pprof="}, nil, map[string]string{"pprof": ""}},
		{"kept flags keep their value", nil, []string{"token"}, map[string]string{
			"token": "default", "node": "from-file"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			fs := flagSet(t)
			if err := fs.Parse(c.args); err != nil {
				t.Fatal(err)
			}
			if err := f.Apply(fs, c.keep...); err != nil {
				t.Fatal(err)
			}
			for name, want := range c.want {
				if got := fs.Lookup(name).Value.String(); got != want {
					t.Errorf("-%s: got %q, want %q", name, got, want)
				}
			}
		})
	}
}

// TestFile_Apply_Errors checks that a value a flag refuses, and a key
// with no flag, name the file and line.
func TestFile_Apply_Errors(t *testing.T) {
	t.Parallel()
	f := mustParse(t, "node = \"n1\"\nmax_conns = 10\n", "agent.hcl")
	cases := []struct {
		name string
		fs   func() *flag.FlagSet
		want string
	}{
		{"value refused", func() *flag.FlagSet {
			fs := flag.NewFlagSet("agent", flag.ContinueOnError)
			fs.String("node", "", "")
			fs.Bool("max-conns", false, "")
			return fs
		}, "agent.hcl:2: max_conns: "},
		{"no such flag", func() *flag.FlagSet {
			fs := flag.NewFlagSet("agent", flag.ContinueOnError)
			fs.String("node", "", "")
			return fs
		}, "agent.hcl:2: max_conns: ax agent has no flag -max-conns"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			err := f.Apply(c.fs())
			if err == nil || !strings.HasPrefix(err.Error(), c.want) {
				t.Errorf("got %v, want an error starting %q", err, c.want)
			}
		})
	}
}

// TestParse_Paths checks that relative paths in path keys are resolved
// against the file's directory and nothing else is touched.
func TestParse_Paths(t *testing.T) {
	t.Parallel()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, file, key, value, want string
	}{
		{"relative", "/etc/ax/agent.hcl", "tls_cert", "tls/n1.pem", "/etc/ax/tls/n1.pem"},
		{"dot-dot", "/etc/ax/agent.hcl", "data", "../../var/lib/ax", "/var/lib/ax"},
		{"absolute", "/etc/ax/agent.hcl", "token_file", "/run/credentials/token", "/run/credentials/token"},
		{"empty stays empty", "/etc/ax/agent.hcl", "tls_ca", "", ""},
		{"file given relative", "conf/agent.hcl", "encrypt_key_file", "ax.key", filepath.Join(wd, "conf/ax.key")},
		{"not a path key", "/etc/ax/agent.hcl", "node", "n1/x", "n1/x"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := mustParse(t, c.key+" = \""+c.value+"\"\n", c.file)
			fs := flagSet(t)
			if err := f.Apply(fs); err != nil {
				t.Fatal(err)
			}
			if got := fs.Lookup(FlagName(c.key)).Value.String(); got != c.want {
				t.Errorf("got %q, want %q", got, c.want)
			}
		})
	}
}

// TestParse_Null checks that a null value is as if the key were absent.
func TestParse_Null(t *testing.T) {
	t.Parallel()
	f := mustParse(t, "node = null\njoin = null\n", "agent.hcl")
	fs := flagSet(t)
	if err := f.Apply(fs); err != nil {
		t.Fatal(err)
	}
	if f.Set("node") || f.Set("join") || fs.Lookup("node").Value.String() != "default" {
		t.Errorf("null applied: node %q", fs.Lookup("node").Value)
	}
}

// TestLoad checks reading files: the sample in deploy/ sets every key,
// and a missing file is an error naming it.
func TestLoad(t *testing.T) {
	t.Parallel()
	f, err := Load("../../deploy/ax-agent.hcl")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range Keys() {
		if !f.Set(k) {
			t.Errorf("the sample does not set %s", k)
		}
	}
	missing := filepath.Join(t.TempDir(), "nope.hcl")
	if _, err := Load(missing); err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("missing file: got %v, want an error naming it", err)
	}
}
