package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/ax-scheduler/ax/internal/view"
)

// secretUsage is the help of ax secret and of its subcommands.
const secretUsage = `
Usage: ax secret <subcommand> [flags] [args]

Subcommands:
	put NAME (-value-file F | -value-file -)   set a secret (a new version)
	list [-o table|json|yaml]                  names and versions (values are never shown)
	delete NAME                                delete a secret

Tasks use a secret as {{secret "NAME"}} in a shell command, URL or body,
or as {"fromSecret": "NAME"} for an env or header value. Its value is
delivered only inside the lease of an attempt that needs it, and masked
in the attempt's output. With ax agent -encrypt-key-file it is encrypted
in the Raft log, the state machine and snapshots.

Examples:
	printf %s "$DB_PASSWORD" | ax secret put db_password -value-file -
	ax secret list
	ax secret delete db_password
`

// secretPutCmd is ax secret put.
type secretPutCmd struct {
	clientBase
	valueFile string
}

func newSecretPutCmd(m *Main) command {
	c := &secretPutCmd{}
	c.init(m, "secret put", secretUsage)
	c.fs.StringVar(&c.valueFile, "value-file", "", "read the value from this file, or stdin for -; the value is taken as is, a trailing newline included")
	return c
}

func (c *secretPutCmd) Run(ctx context.Context, args []string) error {
	cl, err := c.connect(args, nil)
	if err != nil {
		return err
	}
	if c.fs.NArg() != 1 || c.valueFile == "" {
		return fmt.Errorf("secret put: want NAME and -value-file (a file, or - for stdin); values never go on the command line")
	}
	var b []byte
	if c.valueFile == "-" {
		b, err = io.ReadAll(io.LimitReader(c.m.Stdin, 1<<20))
	} else {
		b, err = os.ReadFile(c.valueFile)
	}
	if err != nil {
		return fmt.Errorf("secret put: %w", err)
	}
	s, err := cl.PutSecret(ctx, c.fs.Arg(0), string(b))
	if err != nil {
		return err
	}
	fmt.Fprintf(c.m.Stdout, "secret %s set (version %d, encrypted %v)\n", s.Name, s.Version, s.Encrypted)
	return nil
}

// secretListCmd is ax secret list.
type secretListCmd struct {
	clientBase
	out view.Output
}

func newSecretListCmd(m *Main) command {
	c := &secretListCmd{}
	c.init(m, "secret list", secretUsage)
	c.cf.registerStale(c.fs, false)
	c.out.Register(c.fs)
	return c
}

func (c *secretListCmd) Run(ctx context.Context, args []string) error {
	cl, err := c.connect(args, &c.out)
	if err != nil {
		return err
	}
	l, err := cl.ListSecrets(ctx)
	if err != nil {
		return err
	}
	return c.out.Print(c.m.Stdout, l, func(w io.Writer) error { return view.Secrets(w, l.Secrets) })
}

// secretDeleteCmd is ax secret delete.
type secretDeleteCmd struct{ clientBase }

func newSecretDeleteCmd(m *Main) command {
	c := &secretDeleteCmd{}
	c.init(m, "secret delete", secretUsage)
	return c
}

func (c *secretDeleteCmd) Run(ctx context.Context, args []string) error {
	cl, name, err := c.connectOne(args, nil, "secret name")
	if err != nil {
		return err
	}
	if _, err := cl.DeleteSecret(ctx, name); err != nil {
		return err
	}
	fmt.Fprintf(c.m.Stdout, "deleted %s\n", name)
	return nil
}
