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
)

// newFlagSet returns a flag set that prints its usage and flags on
// stdout for -h, and stays silent on a parse error: the error is returned
// and main prints it in one line with a hint.
func newFlagSet(name, usage string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	var failed parseFailure
	fs.SetOutput(&failed)
	fs.Usage = func() {
		if failed {
			return // an error, not -h
		}
		fmt.Print(strings.TrimLeft(usage, "\n"))
		fmt.Println("\nFlags:")
		fs.SetOutput(os.Stdout)
		fs.PrintDefaults()
		fs.SetOutput(&failed)
	}
	return fs
}

// parseFailure is a flag set's output: the flag package writes there only
// the error it also returns, so a write means the parse failed.
type parseFailure bool

func (p *parseFailure) Write(b []byte) (int, error) {
	*p = true
	return len(b), nil
}

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

// clientFlags are the flags every client command takes.
type clientFlags struct {
	addr      string
	token     string
	tokenFile string
	tls       tlsFlags
}

func (c *clientFlags) register(fs *flag.FlagSet) {
	addr := os.Getenv("AX_ADDR")
	if addr == "" {
		addr = "127.0.0.1:7070"
	}
	fs.StringVar(&c.addr, "addr", addr, "server HTTP address(es), comma-separated (env AX_ADDR)")
	// Not the default of the flag: -h would print the secret.
	fs.StringVar(&c.token, "token", "", "API token (default env AX_TOKEN)")
	fs.StringVar(&c.tokenFile, "token-file", "", "read the API token from this file")
	c.tls.register(fs)
}

// dialTimeout bounds connecting to one address: an unreachable one is
// given up this fast and the next one tried.
const dialTimeout = 2 * time.Second

// client returns a client of the flags' addresses. Each call tries each
// address once (a person is waiting): an unreachable address costs at
// most dialTimeout and a server's 503 is final once every address gave
// one.
func (c *clientFlags) client() (*client.Client, error) {
	if c.token == "" && c.tokenFile == "" {
		c.token = os.Getenv("AX_TOKEN")
	}
	tok, err := readToken(c.token, c.tokenFile)
	if err != nil {
		return nil, err
	}
	tc, err := c.tls.config()
	if err != nil {
		return nil, err
	}
	return client.New(client.Config{Addrs: strings.Split(c.addr, ","), TLS: tc, Token: tok, Actor: actor(),
		DialTimeout: dialTimeout, FailFast: true}), nil
}

func readToken(tok, file string) (string, error) {
	if file == "" {
		return tok, nil
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("token file: %w", err)
	}
	t := strings.TrimSpace(string(b))
	if t == "" {
		// An empty token would silently mean "no auth".
		return "", fmt.Errorf("token file %s is empty", file)
	}
	return t, nil
}

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
