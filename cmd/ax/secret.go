package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/ax-scheduler/ax/agent"
)

type secretCommand struct{}

func (*secretCommand) Usage() string {
	return `
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
}

func (c *secretCommand) Run(ctx context.Context, args []string) error {
	sub, args, fs, cf, err := subcommand("secret", c.Usage(), args)
	if err != nil {
		return err
	}
	var (
		valueFile string
		out       output
	)
	switch sub {
	case "put":
		fs.StringVar(&valueFile, "value-file", "", "read the value from this file, or stdin for -; the value is taken as is, a trailing newline included")
	case "list":
		cf.registerStale(fs, false)
		out.register(fs)
	}
	if err := parseInterspersed(fs, args); err != nil {
		return err
	}
	if err := out.check(); err != nil {
		return fmt.Errorf("secret %s: %w", sub, err)
	}
	cl, err := cf.client()
	if err != nil {
		return err
	}
	switch sub {
	case "put":
		if fs.NArg() != 1 || valueFile == "" {
			return fmt.Errorf("secret put: want NAME and -value-file (a file, or - for stdin); values never go on the command line")
		}
		var b []byte
		if valueFile == "-" {
			b, err = io.ReadAll(io.LimitReader(os.Stdin, 1<<20))
		} else {
			b, err = os.ReadFile(valueFile)
		}
		if err != nil {
			return fmt.Errorf("secret put: %w", err)
		}
		s, err := cl.PutSecret(ctx, fs.Arg(0), string(b))
		if err != nil {
			return err
		}
		fmt.Printf("secret %s set (version %d, encrypted %v)\n", s.Name, s.Version, s.Encrypted)
		return nil
	case "list":
		l, err := cl.ListSecrets(ctx)
		if err != nil {
			return err
		}
		return out.print(os.Stdout, l, func(w io.Writer) error {
			tw := newTable(w)
			row(tw, "NAME", "VERSION", "ENCRYPTED", "UPDATED", "BY")
			for _, s := range l.Secrets {
				row(tw, s.Name, s.Version, s.Encrypted, fmtTime(s.UpdatedAt), orDash(s.UpdatedBy))
			}
			return tw.Flush()
		})
	case "delete":
		if fs.NArg() != 1 {
			return fmt.Errorf("secret delete: want exactly one secret name")
		}
		if _, err := cl.DeleteSecret(ctx, fs.Arg(0)); err != nil {
			return err
		}
		fmt.Printf("deleted %s\n", fs.Arg(0))
		return nil
	default:
		return unknownSub("secret", sub)
	}
}

type keygenCommand struct{}

func (*keygenCommand) Usage() string {
	return `
Usage: ax keygen

Prints a new random AES-256 key (base64) for ax agent -encrypt-key-file.
Every node of a cluster needs the same key.

Example:
	ax keygen > /etc/ax/encrypt.key && chmod 600 /etc/ax/encrypt.key
`
}

func (c *keygenCommand) Run(ctx context.Context, args []string) error {
	fs := newFlagSet("keygen", c.Usage())
	if err := fs.Parse(args); err != nil {
		return err
	}
	fmt.Println(agent.NewEncryptKey())
	return nil
}
