package main

import (
	"flag"
	"fmt"
	"os"
	"os/user"
	"strings"

	"github.com/ax-scheduler/ax/client"
	"github.com/ax-scheduler/ax/internal/cli"
)

// newFlagSet returns a flag set that prints usage on -h and returns errors
// instead of exiting (cli.NewFlagSet, which ax-bench shares).
func newFlagSet(name, usage string) *flag.FlagSet { return cli.NewFlagSet(name, usage) }

// subcommand splits the arguments of command name into its subcommand and
// the rest, and returns a flag set for it with the client flags
// registered. A missing subcommand prints the usage and is an error.
func subcommand(name, usage string, args []string) (sub string, rest []string, fs *flag.FlagSet, cf *clientFlags, err error) {
	if len(args) == 0 {
		fmt.Fprint(os.Stderr, strings.TrimLeft(usage, "\n"))
		return "", nil, nil, nil, fmt.Errorf("%s: missing subcommand", name)
	}
	fs = newFlagSet(name+" "+args[0], usage)
	cf = &clientFlags{}
	cf.register(fs)
	return args[0], args[1:], fs, cf, nil
}

// clientFlags are the flags every client command takes (-addr defaulting
// to $AX_ADDR or 127.0.0.1:7070).
type clientFlags struct{ cli.ClientFlags }

func (c *clientFlags) register(fs *flag.FlagSet) {
	c.Register(fs, cli.DefaultAddr(), "server HTTP address(es), comma-separated (env AX_ADDR)")
}

// client returns a client of the flags' cluster that records this user
// as the actor of its changes.
func (c *clientFlags) client() (*client.Client, error) {
	cfg, err := c.Config()
	if err != nil {
		return nil, err
	}
	cfg.Actor = actor()
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
