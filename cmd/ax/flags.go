package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/user"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ax-scheduler/ax/agent/config"
	"github.com/ax-scheduler/ax/client"
	"github.com/ax-scheduler/ax/internal/cli"
	"github.com/ax-scheduler/ax/internal/follow"
)

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

// register registers the client flags on fs, their defaults from the
// environment as getenv reads it.
func (c *clientFlags) register(fs *flag.FlagSet, getenv func(string) string) {
	c.Getenv = getenv
	c.Register(fs, cli.DefaultAddr(getenv), "server HTTP address(es), comma-separated (env AX_ADDR)")
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
	getenv := c.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	cfg.Actor, cfg.DialTimeout, cfg.FailFast, cfg.StaleReads = actor(getenv), dialTimeout, true, c.stale
	return client.New(cfg), nil
}

// actor names the person behind CLI changes in task history: $USER (or
// the current user) at this host.
func actor(getenv func(string) string) string {
	name := getenv("USER")
	if u, err := user.Current(); err == nil && name == "" {
		name = u.Username
	}
	host, _ := os.Hostname()
	if name == "" {
		name = "unknown"
	}
	return name + "@" + host
}

// parseLogLevel reads -log-level, refusing a level hclog does not know
// (it would silently log at info).
func parseLogLevel(s string) (hclog.Level, error) {
	for _, l := range config.LogLevels {
		if strings.EqualFold(s, l) {
			return hclog.LevelFromString(l), nil
		}
	}
	return hclog.NoLevel, fmt.Errorf("-log-level %q: want one of %s", s, strings.Join(config.LogLevels, ", "))
}

// waitHelp is the -wait flag's help, with the exit statuses.
const waitHelp = "follow the instance to its end and exit with its outcome: 0 SUCCESS, 1 FAILED, 3 TERMINATED, 4 CANCELED or SKIPPED"

// waitFlags are trigger's and submit's -wait and -log.
type waitFlags struct {
	wait, log bool
}

func (f *waitFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&f.wait, "wait", false, waitHelp)
	fs.BoolVar(&f.log, "log", false, "with -wait: print the instance's output as it comes")
}

func (f *waitFlags) check() error {
	if f.log && !f.wait {
		return fmt.Errorf("-log goes with -wait")
	}
	return nil
}

// follow follows instance id when -wait is set, on m's streams.
func (f *waitFlags) follow(ctx context.Context, m *Main, cl *client.Client, id string) error {
	if !f.wait {
		return nil
	}
	return follow.Instance(ctx, cl, id, f.log, m.Stdout, m.Stderr)
}
