package cli

import (
	"crypto/tls"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/ax-scheduler/ax/client"
	"github.com/ax-scheduler/ax/tlsutil"
)

// NewFlagSet returns a flag set that prints its usage and flags on help
// for -h (returning flag.ErrHelp), and stays silent on a parse error: the
// error is returned for the caller to print in one line with a hint,
// instead of the whole flag list.
func NewFlagSet(name, usage string, help io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(&helpOutput{help: help})
	SetUsage(fs, usage)
	return fs
}

// SetUsage replaces the usage text of a flag set made by NewFlagSet (a
// subcommand with a help of its own): -h prints it and the flags on the
// flag set's help writer, a parse error still prints nothing.
func SetUsage(fs *flag.FlagSet, usage string) {
	fs.Usage = func() {
		w := fs.Output()
		if ho, ok := w.(*helpOutput); ok {
			if ho.failed {
				return // an error, not -h
			}
			w = ho.help
		}
		fmt.Fprint(w, strings.TrimLeft(usage, "\n"))
		n := 0
		fs.VisitAll(func(*flag.Flag) { n++ })
		if n == 0 {
			return // a command without flags (ax version)
		}
		fmt.Fprintln(w, "\nFlags:")
		orig := fs.Output()
		fs.SetOutput(w)
		fs.PrintDefaults()
		fs.SetOutput(orig)
	}
}

// helpOutput is a flag set's output: the flag package writes there only
// the error it also returns, so a write means the parse failed; help is
// where -h prints.
type helpOutput struct {
	failed bool
	help   io.Writer
}

func (h *helpOutput) Write(b []byte) (int, error) {
	h.failed = true
	return len(b), nil
}

// DefaultAddr is the address a client command talks to without -addr:
// $AX_ADDR (as getenv reads it), or 127.0.0.1:7070.
func DefaultAddr(getenv func(string) string) string {
	if a := getenv("AX_ADDR"); a != "" {
		return a
	}
	return "127.0.0.1:7070"
}

// ClientFlags are the flags every client of a cluster takes: -addr, -token,
// -token-file and the TLS ones.
type ClientFlags struct {
	Addr      string // comma-separated HTTP addresses
	Token     string
	TokenFile string // when set, the token is read from it
	TLS       TLSFlags
	// Getenv reads the environment variables the flags default to
	// (AX_TOKEN, AX_CACERT...); nil is os.Getenv.
	Getenv func(string) string
}

func (c *ClientFlags) getenv(k string) string {
	if c.Getenv == nil {
		return os.Getenv(k)
	}
	return c.Getenv(k)
}

// Register registers the flags on fs, -addr with the given default and
// usage text (the token and TLS flags default to their AX_ variables).
func (c *ClientFlags) Register(fs *flag.FlagSet, defaultAddr, addrUsage string) {
	fs.StringVar(&c.Addr, "addr", defaultAddr, addrUsage)
	// Not the flag's default: -h would print the secret. Config reads it.
	fs.StringVar(&c.Token, "token", "", "API token (default env AX_TOKEN)")
	fs.StringVar(&c.TokenFile, "token-file", "", "read the API token from this file")
	c.TLS.Register(fs, c.getenv)
}

// Config resolves the flags into a client configuration: the addresses,
// the token (read from -token-file when given, else -token or $AX_TOKEN) and the TLS configuration.
func (c *ClientFlags) Config() (client.Config, error) {
	if c.Token == "" && c.TokenFile == "" {
		c.Token = c.getenv("AX_TOKEN")
	}
	tok, err := ReadToken(c.Token, c.TokenFile)
	if err != nil {
		return client.Config{}, err
	}
	tc, err := c.TLS.Config()
	if err != nil {
		return client.Config{}, err
	}
	return client.Config{Addrs: strings.Split(c.Addr, ","), TLS: tc, Token: tok}, nil
}

// ReadToken returns tok, or the token in file when file is set. An empty
// file is an error: it would silently mean "no authentication".
func ReadToken(tok, file string) (string, error) {
	if file == "" {
		return tok, nil
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("token file: %w", err)
	}
	t := strings.TrimSpace(string(b))
	if t == "" {
		return "", fmt.Errorf("token file %s is empty", file)
	}
	return t, nil
}

// WarnIfShared returns a warning when a credential file is readable by
// others than its owner, "" otherwise.
func WarnIfShared(file string) string {
	st, err := os.Stat(file)
	if err != nil || st.Mode().Perm()&0o077 == 0 {
		return ""
	}
	return fmt.Sprintf("%s is readable by others (mode %v); chmod 600 it", file, st.Mode().Perm())
}

// TLSFlags are a client's TLS flags: -ca-cert, -client-cert and -client-key.
type TLSFlags struct {
	CACert     string
	ClientCert string
	ClientKey  string
}

// Register registers the flags on fs with their AX_ variables, as getenv
// reads them, as defaults.
func (f *TLSFlags) Register(fs *flag.FlagSet, getenv func(string) string) {
	fs.StringVar(&f.CACert, "ca-cert", getenv("AX_CACERT"), "CA certificate to verify the servers with; host:port addresses then mean https (env AX_CACERT)")
	fs.StringVar(&f.ClientCert, "client-cert", getenv("AX_CLIENT_CERT"), "client certificate to present (env AX_CLIENT_CERT)")
	fs.StringVar(&f.ClientKey, "client-key", getenv("AX_CLIENT_KEY"), "its private key (env AX_CLIENT_KEY)")
}

// Config is the client TLS configuration, nil when no flag is set
// (https:// addresses then verify against the system's roots).
func (f *TLSFlags) Config() (*tls.Config, error) {
	if f.CACert == "" && f.ClientCert == "" && f.ClientKey == "" {
		return nil, nil
	}
	c, err := tlsutil.NewClientConfig(f.CACert, f.ClientCert, f.ClientKey)
	if err != nil {
		return nil, fmt.Errorf("%w (flags -ca-cert, -client-cert, -client-key)", err)
	}
	return c, nil
}
