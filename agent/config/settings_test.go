package config

import (
	"flag"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/agent"
	"github.com/ax-scheduler/ax/raftnode"
)

// newSettings returns Settings with ax agent's flags registered on a
// flag set of their own.
func newSettings(t *testing.T) (*Settings, *flag.FlagSet) {
	t.Helper()
	var s Settings
	fs := flag.NewFlagSet("agent", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	s.Register(fs)
	return &s, fs
}

// noEnv is a getenv of an empty environment.
func noEnv(string) string { return "" }

// env is a getenv of vars only.
func env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

// TestSettings_EveryFlagIsAKey: every flag of ax agent but -config is a
// key of the config file, and every key a flag.
func TestSettings_EveryFlagIsAKey(t *testing.T) {
	t.Parallel()
	_, fs := newSettings(t)
	var flags []string
	fs.VisitAll(func(f *flag.Flag) {
		if f.Name != "config" {
			flags = append(flags, f.Name)
		}
	})
	var keys []string
	for _, k := range Keys() {
		keys = append(keys, FlagName(k))
	}
	sort.Strings(flags)
	if !slices.Equal(flags, keys) {
		t.Errorf("flags and config keys differ:\nflags: %v\nkeys:  %v", flags, keys)
	}
	if len(keys) < 40 {
		t.Errorf("only %d keys: %v", len(keys), keys)
	}
}

// TestSettings_Sample: deploy/ax-agent.hcl loads, sets every flag, and
// gives each the flag's default (data and max-conns excepted), so the defaults it
// documents cannot drift from the flags'.
func TestSettings_Sample(t *testing.T) {
	t.Parallel()
	f, err := Load("../../deploy/ax-agent.hcl")
	if err != nil {
		t.Fatal(err)
	}
	_, fs := newSettings(t)
	if err := f.Apply(fs); err != nil {
		t.Fatal(err)
	}
	// max-conns's default depends on the machine's open-file limit.
	notDefault := map[string]string{"data": "/var/lib/ax", "max-conns": "8192"}
	fs.VisitAll(func(fl *flag.Flag) {
		if fl.Name == "config" {
			return
		}
		if !f.Set(strings.ReplaceAll(fl.Name, "-", "_")) {
			t.Errorf("the sample does not set -%s", fl.Name)
		}
		want, ok := notDefault[fl.Name]
		if !ok {
			want = fl.DefValue
		}
		if got := fl.Value.String(); got != want {
			t.Errorf("-%s: the sample sets %q, want %q", fl.Name, got, want)
		}
	})
}

// TestSettings_DefaultsPass: the defaults pass every check, and make the
// agent.Config ax agent with no flags runs.
func TestSettings_DefaultsPass(t *testing.T) {
	t.Parallel()
	s, fs := newSettings(t)
	if _, err := s.Parse(fs, nil, noEnv); err != nil {
		t.Fatal(err)
	}
	cfg, warns, err := s.Config()
	if err != nil || len(warns) > 0 {
		t.Fatalf("Config: %v, warnings %q", err, warns)
	}
	if cfg.NodeID != "n1" || cfg.HTTPAddr != "127.0.0.1:7070" || !cfg.Executor || cfg.NoUI || cfg.Join != nil || cfg.MaxConns != agent.DefaultMaxConns() ||
		cfg.Retention != 7*24*time.Hour || cfg.HeartbeatTimeout != raftnode.DefaultHeartbeatTimeout || cfg.TLS != nil {
		t.Errorf("defaults: %+v", cfg)
	}
}

// TestSettings_Parse_Precedence: the environment's token wins over the
// file's, a flag over both, and a file holding a token readable by
// others is warned about.
func TestSettings_Parse_Precedence(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		mode      os.FileMode
		env       map[string]string
		args      []string
		want      map[string]string
		wantWarns int
	}{
		{"the file", 0o600, nil, nil, map[string]string{"node": "file", "token": "file-token-0123456789", "executor-token": "file-exec-0123456789"}, 0},
		{"a token in a shared file", 0o644, nil, nil, map[string]string{"token": "file-token-0123456789"}, 1},
		{"the environment over the file", 0o600, map[string]string{"AX_TOKEN": "env-token"}, nil,
			map[string]string{"token": "env-token", "executor-token": "file-exec-0123456789"}, 0},
		{"a flag over the environment", 0o600, map[string]string{"AX_TOKEN": "env-token"}, []string{"-token", "flag-token", "-node", "flag"},
			map[string]string{"token": "flag-token", "node": "flag"}, 0},
		{"the environment without a file", 0o600, map[string]string{"AX_EXECUTOR_TOKEN": "env-exec"}, []string{"-config="},
			map[string]string{"token": "", "executor-token": "env-exec", "node": "n1"}, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "agent.hcl")
			if err := os.WriteFile(path, []byte("node = \"file\"\ntoken = \"file-token-0123456789\"\nexecutor_token = \"file-exec-0123456789\"\n"), c.mode); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(path, c.mode); err != nil { // whatever the umask
				t.Fatal(err)
			}
			s, fs := newSettings(t)
			warns, err := s.Parse(fs, append([]string{"-config", path}, c.args...), env(c.env))
			if err != nil {
				t.Fatal(err)
			}
			for name, want := range c.want {
				if got := fs.Lookup(name).Value.String(); got != want {
					t.Errorf("-%s: got %q, want %q", name, got, want)
				}
			}
			if len(warns) != c.wantWarns {
				t.Errorf("warnings %q, want %d", warns, c.wantWarns)
			}
		})
	}
}

// TestSettings_Parse_RefusesNegativeDurations: every duration flag
// refuses a value below zero, naming the flag, as the config file does;
// zero stays allowed (it means "none" or "forever" for some) but for the
// Raft timeouts.
func TestSettings_Parse_RefusesNegativeDurations(t *testing.T) {
	t.Parallel()
	var names []string
	_, fs := newSettings(t)
	fs.VisitAll(func(f *flag.Flag) {
		if _, ok := f.Value.(flag.Getter).Get().(time.Duration); ok {
			names = append(names, f.Name)
		}
	})
	if len(names) < 15 {
		t.Fatalf("found %d duration flags: %v", len(names), names)
	}
	for _, name := range names {
		s, fs := newSettings(t)
		_, err := s.Parse(fs, []string{"-" + name, "-1s"}, noEnv)
		if err == nil || err.Error() != "agent: -"+name+`: "-1s" is negative` {
			t.Errorf("-%s -1s: %v", name, err)
		}
		if strings.HasPrefix(name, "raft-") {
			continue // zero is below what Raft accepts (TestCheckRaftTiming)
		}
		s, fs = newSettings(t)
		if _, err := s.Parse(fs, []string{"-" + name, "0s"}, noEnv); err != nil {
			t.Errorf("-%s 0s: %v", name, err)
		}
	}
}

// TestSettings_Parse_FlagsCheckedAsTheFile: a flag's value is refused
// when the config file would refuse it (counts below 1, addresses,
// URLs, enumerations, labels), naming the flag; before, only the file's
// values were checked and -max-conns 0 or -http nonsense started an
// agent.
func TestSettings_Parse_FlagsCheckedAsTheFile(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string // "" when accepted
	}{
		{[]string{"-max-conns", "0"}, "agent: -max-conns: wants at least 1, got 0"},
		{[]string{"-executor-capacity", "-2"}, "agent: -executor-capacity: wants at least 1, got -2"},
		{[]string{"-http", "nonsense"}, `agent: -http: "nonsense" is not host:port`},
		{[]string{"-pprof", "127.0.0.1"}, `agent: -pprof: "127.0.0.1" is not host:port`},
		{[]string{"-join", "10.0.0.2:7070,b"}, `agent: -join: element 2: "b" is not host:port`},
		{[]string{"-console-url", "ax.example.com"}, `agent: -console-url: "ax.example.com" is not an http(s):// URL`},
		{[]string{"-executor", "maybe"}, `agent: -executor "maybe": want one of auto, true, false`},
		{[]string{"-log-level", "verbose"}, `agent: -log-level "verbose": want one of trace, debug, info, warn, error`},
		{[]string{"-executor-labels", "zone"}, `agent: -executor-labels: want k=v,k=v, got "zone"`},
		{[]string{"-tls-ca", "ca.pem"}, "agent: -tls-ca, -tls-cert and -tls-key go together"},
		{[]string{"-max-conns", "1", "-http", "10.0.0.1:0", "-join", "https://ax2.example.com:7070, 10.0.0.3:7070,", "-log-level", "DEBUG",
			"-executor", "false", "-executor-labels", "zone=a,gpu=yes", "-console-url", "https://ax.example.com/"}, ""},
	} {
		s, fs := newSettings(t)
		_, err := s.Parse(fs, tc.args, noEnv)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%q: %v, want it accepted", tc.args, err)
		case tc.want != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.want)):
			t.Errorf("%q: got %v, want %q", tc.args, err, tc.want)
		}
	}
}

// TestSettings_Config: the settings that need parsing become
// agent.Config's fields.
func TestSettings_Config(t *testing.T) {
	t.Parallel()
	s, fs := newSettings(t)
	args := []string{"-join", " 10.0.0.2:7070,,https://ax3.example.com:7070", "-executor-labels", "zone=a,gpu=yes", "-ui=false", "-max-conns", "7"}
	if _, err := s.Parse(fs, args, noEnv); err != nil {
		t.Fatal(err)
	}
	cfg, _, err := s.Config()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(cfg.Join, []string{"10.0.0.2:7070", "https://ax3.example.com:7070"}) || cfg.Executor || !cfg.NoUI || cfg.MaxConns != 7 ||
		len(cfg.ExecutorLabels) != 2 || cfg.ExecutorLabels["gpu"] != "yes" {
		t.Errorf("got %+v", cfg)
	}
	for _, tc := range []struct{ executor, join string }{{"true", "a:1"}, {"TRUE", ""}, {"auto", ""}} {
		s, fs := newSettings(t)
		if _, err := s.Parse(fs, []string{"-executor", tc.executor, "-join", tc.join}, noEnv); err != nil {
			t.Fatal(err)
		}
		if cfg, _, err := s.Config(); err != nil || !cfg.Executor {
			t.Errorf("-executor %s -join %q: embedded %v, %v; want it on", tc.executor, tc.join, cfg.Executor, err)
		}
	}
}

// TestSettings_Config_RefusesShortTokens: a management (or executor)
// token shorter than 16 bytes, from a flag, the environment, the token
// file or the config file, is refused naming the flag.
func TestSettings_Config_RefusesShortTokens(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	conf, tokFile := filepath.Join(dir, "agent.hcl"), filepath.Join(dir, "token")
	if err := os.WriteFile(conf, []byte("token = \"abc\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(tokFile, []byte("abcd\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"-token", []string{"-token", "abc"}, nil, "-token (or -token-file) is 3 bytes"},
		{"the config file", []string{"-config", conf}, nil, "-token (or -token-file) is 3 bytes"},
		{"-token-file", []string{"-token-file", tokFile}, nil, "-token (or -token-file) is 4 bytes"},
		{"AX_TOKEN", nil, map[string]string{"AX_TOKEN": "abcde"}, "-token (or -token-file) is 5 bytes"},
		{"-executor-token", []string{"-token", "a-long-enough-management-token", "-executor-token", "short"}, nil, "-executor-token is 5 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, fs := newSettings(t)
			if _, err := s.Parse(fs, tc.args, env(tc.env)); err != nil {
				t.Fatal(err)
			}
			_, _, err := s.Config()
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "at least 16") {
				t.Fatalf("got %v, want an error saying %q and at least 16", err, tc.want)
			}
		})
	}
}

// TestCheckRaftTiming checks the Raft timeouts as flags and config keys
// set them: the defaults pass, and each broken rule is refused naming
// the flag and the value.
func TestCheckRaftTiming(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		args    []string
		file    string // config file contents, "" for none
		wantErr []string
		want    [3]time.Duration // heartbeat, election, lease when accepted
	}{
		{name: "defaults",
			want: [3]time.Duration{raftnode.DefaultHeartbeatTimeout, raftnode.DefaultElectionTimeout, raftnode.DefaultLeaderLeaseTimeout}},
		{name: "scaled together", args: []string{"-raft-heartbeat-timeout", "2s", "-raft-election-timeout", "2s", "-raft-lease-timeout", "1s"},
			want: [3]time.Duration{2 * time.Second, 2 * time.Second, time.Second}},
		{name: "lease equal to heartbeat, election longer", args: []string{"-raft-heartbeat-timeout", "100ms", "-raft-election-timeout", "1s", "-raft-lease-timeout", "100ms"},
			want: [3]time.Duration{100 * time.Millisecond, time.Second, 100 * time.Millisecond}},
		{name: "from the config file", file: "raft_heartbeat_timeout = \"3s\"\nraft_election_timeout = \"4s\"\nraft_lease_timeout = \"1s\"\n",
			want: [3]time.Duration{3 * time.Second, 4 * time.Second, time.Second}},
		{name: "lease over heartbeat", args: []string{"-raft-heartbeat-timeout", "300ms", "-raft-election-timeout", "300ms", "-raft-lease-timeout", "400ms"},
			wantErr: []string{"-raft-lease-timeout 400ms", "-raft-heartbeat-timeout 300ms", "at most"}},
		{name: "lease over heartbeat, from the file", file: "raft_heartbeat_timeout = \"300ms\"\nraft_election_timeout = \"300ms\"\nraft_lease_timeout = \"2s\"\n",
			wantErr: []string{"-raft-lease-timeout 2s", "-raft-heartbeat-timeout 300ms"}},
		{name: "election under heartbeat", args: []string{"-raft-heartbeat-timeout", "2s", "-raft-election-timeout", "1s", "-raft-lease-timeout", "1s"},
			wantErr: []string{"-raft-election-timeout 1s", "-raft-heartbeat-timeout 2s", "at least"}},
		{name: "zero heartbeat", args: []string{"-raft-heartbeat-timeout", "0s", "-raft-election-timeout", "1s", "-raft-lease-timeout", "1ms"},
			wantErr: []string{"-raft-heartbeat-timeout 0s", "below", "5ms"}},
		{name: "election too short", args: []string{"-raft-heartbeat-timeout", "1ms", "-raft-election-timeout", "1ms", "-raft-lease-timeout", "1ms"},
			wantErr: []string{"-raft-heartbeat-timeout 1ms", "below"}},
		{name: "lease too short", args: []string{"-raft-heartbeat-timeout", "100ms", "-raft-election-timeout", "100ms", "-raft-lease-timeout", "4ms"},
			wantErr: []string{"-raft-lease-timeout 4ms", "below"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			args := c.args
			if c.file != "" {
				path := filepath.Join(t.TempDir(), "agent.hcl")
				if err := os.WriteFile(path, []byte(c.file), 0o600); err != nil {
					t.Fatal(err)
				}
				args = append([]string{"-config", path}, args...)
			}
			s, fs := newSettings(t)
			_, err := s.Parse(fs, args, noEnv)
			if c.wantErr != nil {
				if err == nil {
					t.Fatalf("got no error, want one containing %q", c.wantErr)
				}
				for _, w := range c.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("got %q, want it to contain %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := [3]time.Duration{s.Agent.HeartbeatTimeout, s.Agent.ElectionTimeout, s.Agent.LeaderLeaseTimeout}; got != c.want {
				t.Errorf("heartbeat, election, lease: got %v, want %v", got, c.want)
			}
		})
	}
}
