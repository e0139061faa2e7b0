package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/ax-scheduler/ax/model"
)

type aclCommand struct{}

func (*aclCommand) Usage() string {
	return `
Usage: ax acl <subcommand> [flags] [args]

Subcommands:
	bootstrap            create the first admin token (once per cluster); from
	                     then on every API request needs a token
	token create         create a token; its secret is printed once (before the
	                     bootstrap only agents with -token take tokens: on
	                     others it is refused, run bootstrap first)
	token list           list tokens (names, roles, bindings; never secrets)
	token revoke NAME    delete a token; once it returns no node accepts it

Roles: reader (every GET), operator (+ trigger, submit, backfill, pause,
resume, approve, reject, cancel, terminate), writer (+ task apply/delete,
secrets), admin (+ cluster membership and ACL), executor (the executor
protocol only, bound to one executor name and its labels).

Examples:
	ax acl bootstrap > bootstrap.token && chmod 600 bootstrap.token
	export AX_TOKEN=$(cat bootstrap.token)
	ax acl token create -name ci -role operator -ttl 720h
	ax acl token create -name worker-1 -role executor -executor worker-1 -labels pool=gpu
	ax acl token list
	ax acl token revoke ci
`
}

func (c *aclCommand) Run(ctx context.Context, args []string) error {
	if len(args) > 0 && args[0] == "token" {
		args = args[1:]
		if len(args) > 0 {
			args[0] = "token " + args[0]
		}
	}
	sub, args, fs, cf, err := subcommand("acl", c.Usage(), args)
	if err != nil {
		return err
	}
	var (
		req    model.ACLTokenRequest
		labels string
		ttl    time.Duration
		out    output
	)
	switch sub {
	case "token create":
		fs.StringVar(&req.Name, "name", "", "token name: the audit actor of its writes")
		fs.StringVar(&req.Role, "role", "", "reader, operator, writer, admin or executor")
		fs.StringVar(&req.Executor, "executor", "", "executor name an executor token is bound to")
		fs.StringVar(&labels, "labels", "", "labels k=v,... an executor token may claim")
		fs.DurationVar(&ttl, "ttl", 0, "the token expires this long after it is created (0 never)")
		out.register(fs)
	case "bootstrap":
		out.register(fs)
	case "token list":
		cf.registerStale(fs, false)
		out.register(fs)
	}
	if err := parseInterspersed(fs, args); err != nil {
		return err
	}
	if err := out.check(); err != nil {
		return fmt.Errorf("acl %s: %w", sub, err)
	}
	cl, err := cf.client()
	if err != nil {
		return err
	}
	switch sub {
	case "bootstrap":
		t, err := cl.ACLBootstrap(ctx)
		if err != nil {
			return err
		}
		return printToken(t, out)
	case "token create":
		if req.Labels, err = parseLabels(labels); err != nil {
			return err
		}
		req.TTL = model.Duration(ttl)
		t, err := cl.CreateToken(ctx, req)
		if err != nil {
			return err
		}
		return printToken(t, out)
	case "token list":
		l, err := cl.ListTokens(ctx)
		if err != nil {
			return err
		}
		return out.print(os.Stdout, l, func(w io.Writer) error {
			tw := newTable(w)
			row(tw, "NAME", "ROLE", "EXECUTOR", "LABELS", "CREATED", "BY", "EXPIRES")
			for _, t := range l.Tokens {
				exp := "never"
				if t.ExpiresAt != nil {
					exp = fmtTime(*t.ExpiresAt)
					if t.ExpiresAt.Before(time.Now()) {
						exp += " (expired)"
					}
				}
				row(tw, t.Name, t.Role, orDash(t.Executor), orDash(joinLabels(t.Labels)), fmtTime(t.CreatedAt), orDash(t.CreatedBy), exp)
			}
			return tw.Flush()
		})
	case "token revoke":
		if fs.NArg() != 1 {
			return fmt.Errorf("acl token revoke: want exactly one token name")
		}
		if _, err := cl.RevokeToken(ctx, fs.Arg(0)); err != nil {
			return err
		}
		fmt.Printf("revoked %s\n", fs.Arg(0))
		return nil
	default:
		return unknownSub("acl", sub)
	}
}

// printToken prints a new token: as a table, its secret alone on stdout
// (so that it can be piped into a file) and what it is on stderr.
func printToken(t *model.ACLToken, out output) error {
	if out.format != formatTable {
		return out.print(os.Stdout, t, nil)
	}
	desc := fmt.Sprintf("token %s, role %s", t.Name, t.Role)
	if t.Executor != "" {
		desc += ", executor " + t.Executor
	}
	if len(t.Labels) > 0 {
		desc += ", labels " + joinLabels(t.Labels)
	}
	if t.ExpiresAt != nil {
		desc += ", expires " + t.ExpiresAt.Format(time.RFC3339)
	}
	fmt.Fprintln(os.Stderr, desc+" (the secret below is shown once; keep it)")
	fmt.Println(t.Secret)
	return nil
}
