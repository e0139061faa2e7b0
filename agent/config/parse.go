package config

import (
	"flag"
	"fmt"
	"strings"

	"github.com/ax-scheduler/ax/agent"
	"github.com/ax-scheduler/ax/internal/cli"
	"github.com/ax-scheduler/ax/tlsutil"
)

// Parse fills s from ax agent's arguments: fs (on which s.Register
// defined the flags) parses args, then the -config file sets what they
// left unset, then the environment variables of the table (AX_TOKEN,
// AX_EXECUTOR_TOKEN) do, unless the command line set their flag: the
// defaults < the file < the environment < the command line. Every value
// is then checked as the table says, whatever it came from. getenv reads
// the environment. The warnings are the file's (a token in a file
// others may read).
func (s *Settings) Parse(fs *flag.FlagSet, args []string, getenv func(string) string) (warnings []string, err error) {
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("agent: unexpected arguments %q", fs.Args())
	}
	explicit := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { explicit[f.Name] = true })
	var fromEnv []setting
	for _, st := range s.table() {
		if st.env != "" && getenv(st.env) != "" {
			fromEnv = append(fromEnv, st)
		}
	}
	if s.ConfigFile != "" {
		f, err := Load(s.ConfigFile)
		if err != nil {
			return nil, err
		}
		keep := make([]string, len(fromEnv))
		for i, st := range fromEnv {
			keep[i] = st.name
		}
		if err := f.Apply(fs, keep...); err != nil {
			return nil, err
		}
		if f.Set("token") || f.Set("executor_token") {
			if w := cli.WarnIfShared(s.ConfigFile); w != "" {
				warnings = append(warnings, "config file holds a token and "+w)
			}
		}
	}
	for _, st := range fromEnv {
		if !explicit[st.name] {
			if err := fs.Set(st.name, getenv(st.env)); err != nil {
				return nil, fmt.Errorf("agent: %s: %w", st.env, err)
			}
		}
	}
	return warnings, s.check(fs)
}

// Config is the agent.Config of the settings, with what they name read:
// the TLS certificates, the token file, the encryption key; and the
// settings that need parsing parsed (-join, -executor, -executor-labels,
// -ui). It refuses a static token shorter than 16 bytes. The warnings
// are about files others may read. Call it after Parse, which checked
// the values; Logger, Clock, ExecutorReaper and Version are the
// caller's to set.
func (s *Settings) Config() (cfg agent.Config, warnings []string, err error) {
	cfg = s.Agent
	if s.TLSCA != "" {
		if cfg.TLS, err = tlsutil.Load(tlsutil.Config{CAFile: s.TLSCA, CertFile: s.TLSCert, KeyFile: s.TLSKey}); err != nil {
			return cfg, nil, fmt.Errorf("agent: %w", err)
		}
	}
	cfg.NoUI = !s.UI
	if cfg.Token, err = cli.ReadToken(cfg.Token, s.TokenFile); err != nil {
		return cfg, nil, err
	}
	if err := checkTokens(&cfg); err != nil {
		return cfg, nil, err
	}
	if s.TokenFile != "" {
		if w := cli.WarnIfShared(s.TokenFile); w != "" {
			warnings = append(warnings, "token file "+w)
		}
	}
	if s.EncryptKeyFile != "" {
		key, w, err := agent.ReadEncryptKey(s.EncryptKeyFile)
		if err != nil {
			return cfg, nil, err
		}
		if w != "" {
			warnings = append(warnings, w)
		}
		cfg.EncryptKey = key
	}
	cfg.Join = splitList(s.Join)
	switch strings.ToLower(s.Executor) {
	case "auto":
		cfg.Executor = len(cfg.Join) == 0
	default:
		cfg.Executor = strings.EqualFold(s.Executor, "true")
	}
	for _, kv := range splitList(s.ExecutorLabels) {
		k, v, _ := strings.Cut(kv, "=")
		if cfg.ExecutorLabels == nil {
			cfg.ExecutorLabels = map[string]string{}
		}
		cfg.ExecutorLabels[k] = v
	}
	return cfg, warnings, nil
}
