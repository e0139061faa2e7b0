package main

import (
	"flag"
	"fmt"
	"os"
	"os/user"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ax-scheduler/ax/client"
	"github.com/ax-scheduler/ax/internal/cli"
)

// newFlagSet returns a flag set that prints usage on -h and returns errors
// instead of exiting (cli.NewFlagSet, which ax-bench shares).
func newFlagSet(name, usage string) *flag.FlagSet { return cli.NewFlagSet(name, usage) }

// subcommand splits the arguments of command name into its subcommand and
// the rest, and returns a flag set for it with the client flags
// registered (run has checked the subcommand against groups).
func subcommand(name, usage string, args []string) (sub string, rest []string, fs *flag.FlagSet, cf *clientFlags, err error) {
	if len(args) == 0 {
		return "", nil, nil, nil, fmt.Errorf("%s: missing subcommand (ax %s -h lists them)", name, name)
	}
	fs = newFlagSet(name+" "+args[0], usage)
	cf = &clientFlags{}
	cf.register(fs)
	return args[0], args[1:], fs, cf, nil
}

// unknownSub is the error of a subcommand a command does not have.
func unknownSub(name, sub string) error {
	return fmt.Errorf("%s: unknown subcommand %q (ax %s -h lists them)", name, sub, name)
}

// clientFlags are the flags every client command takes (-addr defaulting
// to $AX_ADDR or 127.0.0.1:7070), and -stale for the commands that read.
type clientFlags struct {
	cli.ClientFlags
	stale bool
}

// staleHelp is the -stale flag's help.
const staleHelp = "read the node's own state without asking the leader: answered even without a leader, but it may miss recent writes (reads are linearizable by default)"

// registerStale registers -stale, which makes every read of the command
// stale (?stale=true), and -consistent when old is set: the former
// opt-in to linearizable reads, now the default, accepted for scripts.
func (c *clientFlags) registerStale(fs *flag.FlagSet, old bool) {
	fs.BoolVar(&c.stale, "stale", false, staleHelp)
	if old {
		fs.Bool("consistent", false, "ignored: reads are linearizable by default (kept for scripts)")
	}
}

func (c *clientFlags) register(fs *flag.FlagSet) {
	c.Register(fs, cli.DefaultAddr(), "server HTTP address(es), comma-separated (env AX_ADDR)")
}

// dialTimeout bounds connecting to one address: an unreachable one is
// given up this fast and the next one tried.
const dialTimeout = 2 * time.Second

// client returns a client of the flags' addresses that records this user
// as the actor of its changes. Each call tries each address once (a
// person is waiting): an unreachable address costs at most dialTimeout
// and a server's 503 is final once every address gave one.
func (c *clientFlags) client() (*client.Client, error) {
	cfg, err := c.Config()
	if err != nil {
		return nil, err
	}
	cfg.Actor, cfg.DialTimeout, cfg.FailFast, cfg.StaleReads = actor(), dialTimeout, true, c.stale
	return client.New(cfg), nil
}

// readToken is cli.ReadToken: tok, or the token in file.
func readToken(tok, file string) (string, error) { return cli.ReadToken(tok, file) }

// warnIfShared returns a warning when a credential file is readable by
// others than its owner, "" otherwise.
func warnIfShared(file string) string {
	st, err := os.Stat(file)
	if err != nil || st.Mode().Perm()&0o077 == 0 {
		return ""
	}
	return fmt.Sprintf("%s is readable by others (mode %v); chmod 600 it", file, st.Mode().Perm())
}

// actor names the person behind CLI changes in task history.
func actor() string {
	name := os.Getenv("USER")
	if u, err := user.Current(); err == nil && name == "" {
		name = u.Username
	}
	host, _ := os.Hostname()
	if name == "" {
		name = "unknown"
	}
	return name + "@" + host
}

// logLevels are the levels -log-level accepts.
var logLevels = []string{"trace", "debug", "info", "warn", "error"}

// parseLogLevel reads -log-level, refusing a level hclog does not know
// (it would silently log at info).
func parseLogLevel(s string) (hclog.Level, error) {
	for _, l := range logLevels {
		if strings.EqualFold(s, l) {
			return hclog.LevelFromString(l), nil
		}
	}
	return hclog.NoLevel, fmt.Errorf("-log-level %q: want one of %s", s, strings.Join(logLevels, ", "))
}
