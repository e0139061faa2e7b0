package cli

import (
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ax-scheduler/ax/internal/testkit"
	"github.com/ax-scheduler/ax/tlsutil"
)

func TestReadToken(t *testing.T) {
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
			for _, v := range []string{"AX_TOKEN", "AX_CACERT", "AX_CLIENT_CERT", "AX_CLIENT_KEY"} {
				t.Setenv(v, "")
			}
			fs := NewFlagSet("test", "Usage: test\n")
			var c ClientFlags
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
	t.Setenv("AX_ADDR", "10.0.0.1:7070")
	t.Setenv("AX_TOKEN", "from-env")
	t.Setenv("AX_CACERT", "/ca.pem")
	fs := NewFlagSet("test", "Usage: test\n")
	var c ClientFlags
	c.Register(fs, DefaultAddr(), "address")
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
	t.Setenv("AX_ADDR", "")
	if got := DefaultAddr(); got != "127.0.0.1:7070" {
		t.Fatalf("DefaultAddr without AX_ADDR = %q", got)
	}
}

// -h prints the usage text, then the flags, and is flag.ErrHelp.
func TestNewFlagSet_Help(t *testing.T) {
	fs := NewFlagSet("test", "\nUsage: test [flags]\n")
	var out strings.Builder
	fs.SetOutput(&out)
	fs.Int("n", 3, "how many")
	if err := fs.Parse([]string{"-h"}); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("got %v, want flag.ErrHelp", err)
	}
	if got := out.String(); !strings.HasPrefix(got, "Usage: test [flags]\n\nFlags:\n") || !strings.Contains(got, "how many") {
		t.Fatalf("usage:\n%s", got)
	}
	fs.SetOutput(io.Discard)
	if err := fs.Parse([]string{"-nope"}); err == nil || errors.Is(err, flag.ErrHelp) {
		t.Fatalf("unknown flag: got %v, want an error", err)
	}
}

// With the flag set's own output (not a test's writer), -h prints the
// usage on stdout, and a replaced usage (SetUsage, a subcommand's help)
// as well; a parse error prints nothing at all.
func TestSetUsage_Stdout(t *testing.T) {
	for _, tc := range []struct {
		name    string
		replace string
		want    string
	}{
		{name: "the flag set's usage", want: "Usage: group <sub>\n"},
		{name: "a replaced usage", replace: "\nUsage: group sub -f FILE\n", want: "Usage: group sub -f FILE\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := NewFlagSet("group sub", "Usage: group <sub>\n")
			fs.Int("n", 3, "how many")
			if tc.replace != "" {
				SetUsage(fs, tc.replace)
			}
			out, err := testkit.Stdout(t, func() error { return fs.Parse([]string{"-h"}) })
			if !errors.Is(err, flag.ErrHelp) {
				t.Fatalf("got %v, want flag.ErrHelp", err)
			}
			if !strings.HasPrefix(out, tc.want+"\nFlags:\n") || !strings.Contains(out, "how many") {
				t.Fatalf("stdout:\n%s\nwant it to start with %q and list the flags", out, tc.want)
			}
			out, err = testkit.Stdout(t, func() error { return fs.Parse([]string{"-nope"}) })
			if err == nil || out != "" {
				t.Fatalf("unknown flag: got %v and stdout %q, want an error and nothing printed", err, out)
			}
		})
	}
}
