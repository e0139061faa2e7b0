package operate

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/ax-scheduler/ax/internal/command"

	"github.com/ax-scheduler/ax/internal/view"
)

// SecretUsage is the help of ax secret and of its subcommands.
const SecretUsage = `
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
	command.ClientBase
	valueFile string
}

// NewSecretPut makes ax secret put.
func NewSecretPut(io *command.IO) command.Command {
	c := &secretPutCmd{}
	c.Init(io, "secret put", SecretUsage)
	c.FS.StringVar(&c.valueFile, "value-file", "", "read the value from this file, or stdin for -; the value is taken as is, a trailing newline included")
	return c
}

func (c *secretPutCmd) Run(ctx context.Context, args []string) error {
	cl, err := c.Connect(args, nil)
	if err != nil {
		return err
	}
	if c.FS.NArg() != 1 || c.valueFile == "" {
		return fmt.Errorf("secret put: want NAME and -value-file (a file, or - for stdin); values never go on the command line")
	}
	var b []byte
	if c.valueFile == "-" {
		b, err = io.ReadAll(io.LimitReader(c.IO.Stdin, 1<<20))
	} else {
		b, err = os.ReadFile(c.valueFile)
	}
	if err != nil {
		return fmt.Errorf("secret put: %w", err)
	}
	s, err := cl.PutSecret(ctx, c.FS.Arg(0), string(b))
	if err != nil {
		return err
	}
	fmt.Fprintf(c.IO.Stdout, "secret %s set (version %d, encrypted %v)\n", s.Name, s.Version, s.Encrypted)
	return nil
}

// secretListCmd is ax secret list.
type secretListCmd struct {
	command.ClientBase
	out view.Output
}

// NewSecretList makes ax secret list.
func NewSecretList(io *command.IO) command.Command {
	c := &secretListCmd{}
	c.Init(io, "secret list", SecretUsage)
	c.CF.RegisterStale(c.FS, false)
	c.out.Register(c.FS)
	return c
}

func (c *secretListCmd) Run(ctx context.Context, args []string) error {
	cl, err := c.Connect(args, &c.out)
	if err != nil {
		return err
	}
	l, err := cl.ListSecrets(ctx)
	if err != nil {
		return err
	}
	return c.out.Print(c.IO.Stdout, l, func(w io.Writer) error { return view.Secrets(w, l.Secrets) })
}

// secretDeleteCmd is ax secret delete.
type secretDeleteCmd struct{ command.ClientBase }

// NewSecretDelete makes ax secret delete.
func NewSecretDelete(io *command.IO) command.Command {
	c := &secretDeleteCmd{}
	c.Init(io, "secret delete", SecretUsage)
	return c
}

func (c *secretDeleteCmd) Run(ctx context.Context, args []string) error {
	cl, name, err := c.ConnectOne(args, nil, "secret name")
	if err != nil {
		return err
	}
	if _, err := cl.DeleteSecret(ctx, name); err != nil {
		return err
	}
	fmt.Fprintf(c.IO.Stdout, "deleted %s\n", name)
	return nil
}
