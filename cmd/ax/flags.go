package main

import (
	"flag"
	"fmt"
	"os"
	"os/user"
	"strings"

	"ax/client"
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
	return strings.TrimSpace(string(b)), nil
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
