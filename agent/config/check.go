package config

import (
	"errors"
	"flag"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/ax-scheduler/ax/agent"
	"github.com/ax-scheduler/ax/raftnode"
)

// problem says what is wrong with text, a value of st as its flag takes
// it, or returns "": a duration is not negative, a count is at least 1,
// and a string is what st's check says (each element of a list).
func (st setting) problem(text string) string {
	switch st.kind {
	case kindDuration:
		return checkString(text, "duration")
	case kindInt:
		if n, err := strconv.Atoi(text); err == nil && n < 1 {
			return fmt.Sprintf("wants at least 1, got %d", n)
		}
	case kindString:
		switch st.form {
		case formList:
			for i, e := range splitList(text) {
				if msg := checkString(e, st.check); msg != "" {
					return fmt.Sprintf("element %d: %s", i+1, msg)
				}
			}
		case formMap:
			for _, kv := range splitList(text) {
				if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
					return fmt.Sprintf("want k=v,k=v, got %q", kv)
				}
			}
		default:
			return checkString(text, st.check)
		}
	}
	return ""
}

// flagError is st's problem with the value text as the command line (or
// the environment) gave it, naming the flag; an enumeration names its
// choices.
func (st setting) flagError(text string) error {
	if opts, ok := strings.CutPrefix(st.check, "oneof="); ok && st.problem(text) != "" {
		return fmt.Errorf("agent: -%s %q: want one of %s", st.name, text, strings.ReplaceAll(opts, "|", ", "))
	}
	if msg := st.problem(text); msg != "" {
		return fmt.Errorf("agent: -%s: %s", st.name, msg)
	}
	return nil
}

// splitList splits a comma-separated value into its non-empty elements,
// trimmed.
func splitList(s string) []string {
	var out []string
	for _, e := range strings.Split(s, ",") {
		if e = strings.TrimSpace(e); e != "" {
			out = append(out, e)
		}
	}
	return out
}

// checkString validates one string as tag says.
func checkString(s, tag string) string {
	switch {
	case tag == "duration":
		d, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Sprintf("%q is not a duration (write it as 30s, 5m, 1h30m)", s)
		}
		if d < 0 {
			return fmt.Sprintf("%q is negative", s)
		}
	case tag == "addr":
		if s != "" {
			return checkHostPort(s)
		}
	case tag == "member":
		if strings.HasPrefix(s, "http://") || strings.HasPrefix(s, "https://") {
			if u, err := url.Parse(s); err != nil || u.Host == "" {
				return fmt.Sprintf("%q is not an address (host:port or https://host:port)", s)
			}
			return ""
		}
		return checkHostPort(s)
	case tag == "url":
		if s == "" {
			return ""
		}
		if u, err := url.Parse(s); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Sprintf("%q is not an http(s):// URL", s)
		}
	case strings.HasPrefix(tag, "oneof="):
		opts := strings.Split(strings.TrimPrefix(tag, "oneof="), "|")
		for _, o := range opts {
			if strings.EqualFold(s, o) {
				return ""
			}
		}
		return fmt.Sprintf("%q is not one of %s", s, strings.Join(opts, ", "))
	}
	return ""
}

func checkHostPort(s string) string {
	_, port, err := net.SplitHostPort(s)
	if err == nil {
		_, err = strconv.ParseUint(port, 10, 16)
	}
	if err != nil {
		return fmt.Sprintf("%q is not host:port", s)
	}
	return ""
}

// check checks every setting's value in fs as the table says, then the
// rules between settings: the Raft timeouts, and the TLS files all or
// none. The listener rules (a non-loopback address needs TLS or
// -insecure; an unspecified one an advertise address) are agent.New's,
// which every embedding of an agent goes through.
func (s *Settings) check(fs *flag.FlagSet) error {
	for _, st := range s.table() {
		if err := st.flagError(fs.Lookup(st.name).Value.String()); err != nil {
			return err
		}
	}
	if err := checkRaftTiming(&s.Agent); err != nil {
		return err
	}
	set := 0
	for _, v := range []string{s.TLSCA, s.TLSCert, s.TLSKey} {
		if v != "" {
			set++
		}
	}
	if set != 0 && set != 3 {
		return errors.New("agent: -tls-ca, -tls-cert and -tls-key go together: give all three (ax tls -h shows how to make them) or none")
	}
	return nil
}

// checkRaftTiming checks the Raft timeouts against one another as
// hashicorp/raft requires, naming the flags (the config file's keys set
// them too).
func checkRaftTiming(cfg *agent.Config) error {
	for _, d := range []struct {
		flag string
		v    time.Duration
	}{{"raft-heartbeat-timeout", cfg.HeartbeatTimeout}, {"raft-election-timeout", cfg.ElectionTimeout}, {"raft-lease-timeout", cfg.LeaderLeaseTimeout}} {
		if d.v < raftnode.MinTimeout {
			return fmt.Errorf("agent: -%s %s is below the least Raft accepts, %s", d.flag, d.v, raftnode.MinTimeout)
		}
	}
	if cfg.LeaderLeaseTimeout > cfg.HeartbeatTimeout {
		return fmt.Errorf("agent: -raft-lease-timeout %s is longer than -raft-heartbeat-timeout %s; it must be at most that", cfg.LeaderLeaseTimeout, cfg.HeartbeatTimeout)
	}
	if cfg.ElectionTimeout < cfg.HeartbeatTimeout {
		return fmt.Errorf("agent: -raft-election-timeout %s is shorter than -raft-heartbeat-timeout %s; it must be at least that", cfg.ElectionTimeout, cfg.HeartbeatTimeout)
	}
	return nil
}

// minTokenLen is the least length of the static tokens an agent takes
// (-token, -executor-token): a management token opens every route.
const minTokenLen = 16

// checkTokens refuses a static token of cfg shorter than minTokenLen,
// naming its flag and the other places it may come from.
func checkTokens(cfg *agent.Config) error {
	for _, t := range []struct{ flag, env, key, v string }{
		{"-token (or -token-file)", "AX_TOKEN", "token, token_file", cfg.Token},
		{"-executor-token", "AX_EXECUTOR_TOKEN", "executor_token", cfg.ExecutorToken},
	} {
		if t.v != "" && len(t.v) < minTokenLen {
			return fmt.Errorf("agent: %s is %d bytes; a token must be at least %d, as anyone who guesses it gets its role "+
				"(it may also come from %s or the config file's %s). Make one with: ax keygen > agent.token && chmod 600 agent.token, then -token-file agent.token",
				t.flag, len(t.v), minTokenLen, t.env, t.key)
		}
	}
	return nil
}
