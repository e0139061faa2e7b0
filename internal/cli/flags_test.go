package cli

import (
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ax-scheduler/ax/tlsutil"
)

func TestReadToken(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good, blank := write("good", "  s3cret\n"), write("blank", " \n")
	for _, tc := range []struct {
		name, tok, file, want, wantErr string
	}{
		{name: "flag only", tok: "abc", want: "abc"},
		{name: "no token at all", want: ""},
		{name: "file wins, trimmed", tok: "abc", file: good, want: "s3cret"},
		{name: "blank file", file: blank, wantErr: "is empty"},
		{name: "missing file", file: filepath.Join(dir, "none"), wantErr: "token file:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := ReadToken(tc.tok, tc.file)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got %q, %v, want an error containing %q", got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %q, %v, want %q", got, err, tc.want)
			}
		})
	}
}

func TestClientFlags_Config(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if _, _, err := tlsutil.CreateCA(dir, 0); err != nil {
		t.Fatal(err)
	}
	if _, _, err := tlsutil.CreateClientCert(dir, "bench", 0); err != nil {
		t.Fatal(err)
	}
	ca := filepath.Join(dir, tlsutil.CACertFile)
	cert, key := tlsutil.CertFiles(dir, "bench")
	for _, tc := range []struct {
		name    string
		args    []string
		addrs   []string
		tls     bool
		wantErr string
	}{
		{name: "default address", addrs: []string{"127.0.0.1:1"}},
		{name: "several addresses", args: []string{"-addr", "a:1,b:2"}, addrs: []string{"a:1", "b:2"}},
		{name: "CA only", args: []string{"-ca-cert", ca}, addrs: []string{"127.0.0.1:1"}, tls: true},
		{name: "CA and client certificate", args: []string{"-ca-cert", ca, "-client-cert", cert, "-client-key", key}, addrs: []string{"127.0.0.1:1"}, tls: true},
		{name: "certificate without key", args: []string{"-client-cert", cert}, wantErr: "-client-key"},
		{name: "missing CA", args: []string{"-ca-cert", filepath.Join(dir, "none.pem")}, wantErr: "-ca-cert"},
		{name: "empty token file", args: []string{"-token-file", os.DevNull}, wantErr: "is empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fs := NewFlagSet("test", "Usage: test\n", io.Discard)
			c := ClientFlags{Getenv: env(nil)}
			c.Register(fs, "127.0.0.1:1", "address")
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			cfg, err := c.Config()
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got %v, want an error naming %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(cfg.Addrs, ",") != strings.Join(tc.addrs, ",") || (cfg.TLS != nil) != tc.tls {
				t.Fatalf("got addrs %q, TLS %v; want %q, TLS %v", cfg.Addrs, cfg.TLS != nil, tc.addrs, tc.tls)
			}
		})
	}
}

// The AX_ variables are the flags' defaults; the token's is read by Config
// (a default would print the secret in -h).
func TestClientFlags_RegisterEnvDefaults(t *testing.T) {
	t.Parallel()
	getenv := env(map[string]string{"AX_ADDR": "10.0.0.1:7070", "AX_TOKEN": "from-env", "AX_CACERT": "/ca.pem"})
	fs := NewFlagSet("test", "Usage: test\n", io.Discard)
	c := ClientFlags{Getenv: getenv}
	c.Register(fs, DefaultAddr(getenv), "address")
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	if c.Addr != "10.0.0.1:7070" || c.Token != "" || c.TLS.CACert != "/ca.pem" {
		t.Fatalf("got %+v, want the AX_ variables and no token default", c)
	}
	c.TLS = TLSFlags{} // no such CA file here
	if cfg, err := c.Config(); err != nil || cfg.Token != "from-env" {
		t.Fatalf("Config: token %q, %v; want AX_TOKEN's", cfg.Token, err)
	}
	if got := DefaultAddr(env(nil)); got != "127.0.0.1:7070" {
		t.Fatalf("DefaultAddr without AX_ADDR = %q", got)
	}
}

// -h prints the usage text, then the flags, and is flag.ErrHelp.
func TestNewFlagSet_Help(t *testing.T) {
	t.Parallel()
	var out strings.Builder
	fs := NewFlagSet("test", "\nUsage: test [flags]\n", &out)
	fs.Int("n", 3, "how many")
	if err := fs.Parse([]string{"-h"}); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("got %v, want flag.ErrHelp", err)
	}
	if got := out.String(); !strings.HasPrefix(got, "Usage: test [flags]\n\nFlags:\n") || !strings.Contains(got, "how many") {
		t.Fatalf("usage:\n%s", got)
	}
	out.Reset()
	if err := fs.Parse([]string{"-nope"}); err == nil || errors.Is(err, flag.ErrHelp) || out.Len() != 0 {
		t.Fatalf("unknown flag: got %v and %q printed, want an error and nothing printed", err, out.String())
	}
}

// -h prints the usage on the flag set's help writer, a replaced usage
// (SetUsage, a subcommand's help) as well; a parse error prints nothing
// at all.
func TestSetUsage_Help(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		replace string
		want    string
	}{
		{name: "the flag set's usage", want: "Usage: group <sub>\n"},
		{name: "a replaced usage", replace: "\nUsage: group sub -f FILE\n", want: "Usage: group sub -f FILE\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var out strings.Builder
			fs := NewFlagSet("group sub", "Usage: group <sub>\n", &out)
			fs.Int("n", 3, "how many")
			if tc.replace != "" {
				SetUsage(fs, tc.replace)
			}
			if err := fs.Parse([]string{"-h"}); !errors.Is(err, flag.ErrHelp) {
				t.Fatalf("got %v, want flag.ErrHelp", err)
			}
			if got := out.String(); !strings.HasPrefix(got, tc.want+"\nFlags:\n") || !strings.Contains(got, "how many") {
				t.Fatalf("help:\n%s\nwant it to start with %q and list the flags", got, tc.want)
			}
			out.Reset()
			if err := fs.Parse([]string{"-nope"}); err == nil || out.Len() != 0 {
				t.Fatalf("unknown flag: got %v and %q printed, want an error and nothing printed", err, out.String())
			}
		})
	}
}

// env is a getenv reading vars only.
func env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

func TestWarnIfShared(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		mode os.FileMode
		warn bool
	}{{"owner only", 0o600, false}, {"group-readable", 0o640, true}, {"world-readable", 0o644, true}} {
		p := filepath.Join(dir, tc.name)
		if err := os.WriteFile(p, []byte("x"), tc.mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, tc.mode); err != nil { // whatever the umask
			t.Fatal(err)
		}
		if got := WarnIfShared(p); (got != "") != tc.warn || (tc.warn && !strings.Contains(got, "chmod 600")) {
			t.Errorf("%s: got %q, want a warning %v", tc.name, got, tc.warn)
		}
	}
	if got := WarnIfShared(filepath.Join(dir, "none")); got != "" {
		t.Errorf("a missing file: got %q, want no warning", got)
	}
}
