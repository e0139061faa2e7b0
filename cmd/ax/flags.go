package main

import (
	"flag"
	"fmt"
	"os"
	"os/user"
	"strings"

	"github.com/ax-scheduler/ax/client"
)

// newFlagSet returns a flag set that prints usage on -h and returns errors
// instead of exiting.
func newFlagSet(name, usage string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), strings.TrimLeft(usage, "\n"))
		fmt.Fprintln(fs.Output(), "\nFlags:")
		fs.PrintDefaults()
	}
	return fs
}

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
	fs.StringVar(&c.token, "token", os.Getenv("AX_TOKEN"), "API token (env AX_TOKEN)")
	fs.StringVar(&c.tokenFile, "token-file", "", "read the API token from this file")
	c.tls.register(fs)
}

func (c *clientFlags) client() (*client.Client, error) {
	tok, err := readToken(c.token, c.tokenFile)
	if err != nil {
		return nil, err
	}
	tc, err := c.tls.config()
	if err != nil {
		return nil, err
	}
	return client.New(client.Config{Addrs: strings.Split(c.addr, ","), TLS: tc, Token: tok, Actor: actor()}), nil
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
