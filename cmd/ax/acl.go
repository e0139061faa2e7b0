package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/ax-scheduler/ax/internal/cli"
	"github.com/ax-scheduler/ax/internal/view"
	"github.com/ax-scheduler/ax/model"
)

// aclUsage is the help of ax acl and of its subcommands.
const aclUsage = `
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
	clientBase
	out view.Output
}

func newACLBootstrapCmd(m *Main) command {
	c := &aclBootstrapCmd{}
	c.init(m, "acl bootstrap", aclUsage)
	c.out.Register(c.fs)
	return c
}

func (c *aclBootstrapCmd) Run(ctx context.Context, args []string) error {
	cl, err := c.connect(args, &c.out)
	if err != nil {
		return err
	}
	t, err := cl.ACLBootstrap(ctx)
	if err != nil {
		return err
	}
	return view.Token(c.m.Stdout, c.m.Stderr, t, c.out)
}

// aclTokenCreateCmd is ax acl token create.
type aclTokenCreateCmd struct {
	clientBase
	req    model.ACLTokenRequest
	labels string
	ttl    time.Duration
	out    view.Output
}

func newACLTokenCreateCmd(m *Main) command {
	c := &aclTokenCreateCmd{}
	c.init(m, "acl token create", aclUsage)
	c.fs.StringVar(&c.req.Name, "name", "", "token name: the audit actor of its writes")
	c.fs.StringVar(&c.req.Role, "role", "", "reader, operator, writer, admin or executor")
	c.fs.StringVar(&c.req.Executor, "executor", "", "executor name an executor token is bound to")
	c.fs.StringVar(&c.labels, "labels", "", "labels k=v,... an executor token may claim")
	c.fs.DurationVar(&c.ttl, "ttl", 0, "the token expires this long after it is created (0 never)")
	c.out.Register(c.fs)
	return c
}

func (c *aclTokenCreateCmd) Run(ctx context.Context, args []string) error {
	cl, err := c.connect(args, &c.out)
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
	return view.Token(c.m.Stdout, c.m.Stderr, t, c.out)
}

// aclTokenListCmd is ax acl token list.
type aclTokenListCmd struct {
	clientBase
	out view.Output
}

func newACLTokenListCmd(m *Main) command {
	c := &aclTokenListCmd{}
	c.init(m, "acl token list", aclUsage)
	c.cf.registerStale(c.fs, false)
	c.out.Register(c.fs)
	return c
}

func (c *aclTokenListCmd) Run(ctx context.Context, args []string) error {
	cl, err := c.connect(args, &c.out)
	if err != nil {
		return err
	}
	l, err := cl.ListTokens(ctx)
	if err != nil {
		return err
	}
	return c.out.Print(c.m.Stdout, l, func(w io.Writer) error { return view.Tokens(w, l.Tokens, time.Now()) })
}

// aclTokenRevokeCmd is ax acl token revoke.
type aclTokenRevokeCmd struct{ clientBase }

func newACLTokenRevokeCmd(m *Main) command {
	c := &aclTokenRevokeCmd{}
	c.init(m, "acl token revoke", aclUsage)
	return c
}

func (c *aclTokenRevokeCmd) Run(ctx context.Context, args []string) error {
	cl, name, err := c.connectOne(args, nil, "token name")
	if err != nil {
		return err
	}
	if _, err := cl.RevokeToken(ctx, name); err != nil {
		return err
	}
	fmt.Fprintf(c.m.Stdout, "revoked %s\n", name)
	return nil
}
