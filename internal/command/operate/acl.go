package operate

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/ax-scheduler/ax/internal/command"

	"github.com/ax-scheduler/ax/internal/cli"
	"github.com/ax-scheduler/ax/internal/view"
	"github.com/ax-scheduler/ax/model"
)

// AclUsage is the help of ax acl and of its subcommands.
const AclUsage = `
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

// aclBootstrapCmd is ax acl bootstrap.
type aclBootstrapCmd struct {
	command.ClientBase
	out view.Output
}

// NewACLBootstrap makes ax acl bootstrap.
func NewACLBootstrap(io *command.IO) command.Command {
	c := &aclBootstrapCmd{}
	c.Init(io, "acl bootstrap", AclUsage)
	c.out.Register(c.FS)
	return c
}

func (c *aclBootstrapCmd) Run(ctx context.Context, args []string) error {
	cl, err := c.Connect(args, &c.out)
	if err != nil {
		return err
	}
	t, err := cl.ACLBootstrap(ctx)
	if err != nil {
		return err
	}
	return view.Token(c.IO.Stdout, c.IO.Stderr, t, c.out)
}

// aclTokenCreateCmd is ax acl token create.
type aclTokenCreateCmd struct {
	command.ClientBase
	req    model.ACLTokenRequest
	labels string
	ttl    time.Duration
	out    view.Output
}

// NewACLTokenCreate makes ax acl token create.
func NewACLTokenCreate(io *command.IO) command.Command {
	c := &aclTokenCreateCmd{}
	c.Init(io, "acl token create", AclUsage)
	c.FS.StringVar(&c.req.Name, "name", "", "token name: the audit actor of its writes")
	c.FS.StringVar(&c.req.Role, "role", "", "reader, operator, writer, admin or executor")
	c.FS.StringVar(&c.req.Executor, "executor", "", "executor name an executor token is bound to")
	c.FS.StringVar(&c.labels, "labels", "", "labels k=v,... an executor token may claim")
	c.FS.DurationVar(&c.ttl, "ttl", 0, "the token expires this long after it is created (0 never)")
	c.out.Register(c.FS)
	return c
}

func (c *aclTokenCreateCmd) Run(ctx context.Context, args []string) error {
	cl, err := c.Connect(args, &c.out)
	if err != nil {
		return err
	}
	req := c.req
	if req.Labels, err = cli.ParseLabels(c.labels); err != nil {
		return err
	}
	req.TTL = model.Duration(c.ttl)
	t, err := cl.CreateToken(ctx, req)
	if err != nil {
		return err
	}
	return view.Token(c.IO.Stdout, c.IO.Stderr, t, c.out)
}

// aclTokenListCmd is ax acl token list.
type aclTokenListCmd struct {
	command.ClientBase
	out view.Output
}

// NewACLTokenList makes ax acl token list.
func NewACLTokenList(io *command.IO) command.Command {
	c := &aclTokenListCmd{}
	c.Init(io, "acl token list", AclUsage)
	c.CF.RegisterStale(c.FS, false)
	c.out.Register(c.FS)
	return c
}

func (c *aclTokenListCmd) Run(ctx context.Context, args []string) error {
	cl, err := c.Connect(args, &c.out)
	if err != nil {
		return err
	}
	l, err := cl.ListTokens(ctx)
	if err != nil {
		return err
	}
	return c.out.Print(c.IO.Stdout, l, func(w io.Writer) error { return view.Tokens(w, l.Tokens, time.Now()) })
}

// aclTokenRevokeCmd is ax acl token revoke.
type aclTokenRevokeCmd struct{ command.ClientBase }

// NewACLTokenRevoke makes ax acl token revoke.
func NewACLTokenRevoke(io *command.IO) command.Command {
	c := &aclTokenRevokeCmd{}
	c.Init(io, "acl token revoke", AclUsage)
	return c
}

func (c *aclTokenRevokeCmd) Run(ctx context.Context, args []string) error {
	cl, name, err := c.ConnectOne(args, nil, "token name")
	if err != nil {
		return err
	}
	if _, err := cl.RevokeToken(ctx, name); err != nil {
		return err
	}
	fmt.Fprintf(c.IO.Stdout, "revoked %s\n", name)
	return nil
}
