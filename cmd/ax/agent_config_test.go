package main

import (
	"context"
	"flag"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/agent"
	"github.com/ax-scheduler/ax/agent/config"
	"github.com/ax-scheduler/ax/internal/testkit"
)

const sampleConfig = "../../deploy/ax-agent.hcl"

// newAgentFlags returns ax agent's flag set with the environment's
// defaults cleared.
func newAgentFlags(t *testing.T) *flag.FlagSet {
	t.Helper()
	fs, _ := newAgentConfig(t)
	return fs
}

// newAgentConfig returns ax agent's flag set, with the environment's
// defaults cleared, and the config it parses into.
func newAgentConfig(t *testing.T) (*flag.FlagSet, *agent.Config) {
	t.Helper()
	for _, env := range agentEnvFlags {
		t.Setenv(env, "")
	}
	var (
		cfg agent.Config
		o   agentOptions
	)
	fs := agentFlags("", &cfg, &o)
	fs.SetOutput(io.Discard)
	return fs, &cfg
}

// TestAgentFlags_ConfigKeys checks that every flag of ax agent but
// -config is a key of the config file, and every key a flag.
func TestAgentFlags_ConfigKeys(t *testing.T) {
	fs := newAgentFlags(t)
	var flags []string
	fs.VisitAll(func(f *flag.Flag) {
		if f.Name != "config" {
			flags = append(flags, f.Name)
		}
	})
	var keys []string
	for _, k := range config.Keys() {
		keys = append(keys, config.FlagName(k))
	}
	sort.Strings(flags)
	sort.Strings(keys)
	if strings.Join(flags, " ") != strings.Join(keys, " ") {
		t.Errorf("flags and config keys differ:\nflags: %v\nkeys:  %v", flags, keys)
	}
}

// TestAgentFlags_Sample checks that deploy/ax-agent.hcl loads, sets every
// flag, and gives each the flag's default (data excepted), so the
// defaults it documents cannot drift from the flags'.
func TestAgentFlags_Sample(t *testing.T) {
	f, err := config.Load(sampleConfig)
	if err != nil {
		t.Fatal(err)
	}
	fs := newAgentFlags(t)
	if err := f.Apply(fs); err != nil {
		t.Fatal(err)
	}
	notDefault := map[string]string{"data": "/var/lib/ax"}
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

// TestApplyConfigFile checks the agent's precedence: the environment's
// token wins over the file's, a flag over both, and a file holding a
// token readable by others is warned about.
func TestApplyConfigFile(t *testing.T) {
	cases := []struct {
		name      string
		mode      os.FileMode
		env       map[string]string
		args      []string
		want      map[string]string
		wantWarns int
	}{
		{"the file", 0o600, nil, nil, map[string]string{"node": "file", "token": "file-token", "executor-token": "file-exec"}, 0},
		{"a token in a shared file", 0o644, nil, nil, map[string]string{"token": "file-token"}, 1},
		{"the environment over the file", 0o600, map[string]string{"AX_TOKEN": "env-token"}, nil,
			map[string]string{"token": "env-token", "executor-token": "file-exec"}, 0},
		{"a flag over the environment", 0o600, map[string]string{"AX_TOKEN": "env-token"}, []string{"-token", "flag-token", "-node", "flag"},
			map[string]string{"token": "flag-token", "node": "flag"}, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "agent.hcl")
			if err := os.WriteFile(path, []byte("node = \"file\"\ntoken = \"file-token\"\nexecutor_token = \"file-exec\"\n"), c.mode); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(path, c.mode); err != nil { // whatever the umask
				t.Fatal(err)
			}
			for _, env := range agentEnvFlags {
				t.Setenv(env, c.env[env])
			}
			var (
				cfg agent.Config
				o   agentOptions
			)
			fs := agentFlags("", &cfg, &o)
			warns, err := parseAgentFlags(fs, &o, append([]string{"-config", path}, c.args...))
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

// TestParseAgentFlags_RefusesNegativeDurations: every duration flag refuses
// a value below zero, naming the flag, as the config file does; zero stays
// allowed (it means "none" or "forever" for some).
func TestParseAgentFlags_RefusesNegativeDurations(t *testing.T) {
	var (
		cfg agent.Config
		o   agentOptions
	)
	var names []string
	agentFlags("", &cfg, &o).VisitAll(func(f *flag.Flag) {
		if g, ok := f.Value.(flag.Getter); ok {
			if _, ok := g.Get().(time.Duration); ok {
				names = append(names, f.Name)
			}
		}
	})
	if len(names) < 15 {
		t.Fatalf("found %d duration flags: %v", len(names), names)
	}
	for _, name := range names {
		for _, env := range agentEnvFlags {
			t.Setenv(env, "")
		}
		var (
			cfg agent.Config
			o   agentOptions
		)
		_, err := parseAgentFlags(agentFlags("", &cfg, &o), &o, []string{"-" + name, "-1s"})
		if err == nil || !strings.Contains(err.Error(), "-"+name+`: "-1s" is negative`) {
			t.Errorf("-%s -1s: %v", name, err)
		}
		if _, err := parseAgentFlags(agentFlags("", &cfg, &o), &o, []string{"-" + name, "0s"}); err != nil {
			t.Errorf("-%s 0s: %v", name, err)
		}
	}
}

// TestAgent_RefusesShortTokens: a management (or executor) token shorter
// than 16 bytes, from a flag or the config file, stops the agent before
// it starts, naming the flag.
func TestAgent_RefusesShortTokens(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "agent.hcl")
	if err := os.WriteFile(conf, []byte("token = \"abc\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	base := []string{"-data", filepath.Join(dir, "data"), "-http", "127.0.0.1:0", "-raft", testkit.FreeAddr(t), "-executor", "false", "-log-level", "error"}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"-token", []string{"-token", "abc"}, "-token (or -token-file) is 3 bytes"},
		{"the config file", []string{"-config", conf}, "-token (or -token-file) is 3 bytes"},
		{"-executor-token", []string{"-token", "a-long-enough-management-token", "-executor-token", "short"}, "-executor-token is 5 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, env := range agentEnvFlags {
				t.Setenv(env, "")
			}
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			defer cancel()
			err := (&agentCommand{}).Run(ctx, append(append([]string{}, base...), tc.args...))
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "at least 16") {
				t.Fatalf("got %v, want an error saying %q and at least 16", err, tc.want)
			}
		})
	}
}
