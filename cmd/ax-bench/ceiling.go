package main

import (
	"context"
	"os"

	"github.com/ax-scheduler/ax/internal/benchkit/ceiling"
	"github.com/ax-scheduler/ax/internal/benchkit/scale"
)

type ceilingCommand struct{}

func (*ceilingCommand) Usage() string {
	return `
Usage: ax-bench ceiling [-fires 500,1000 -step 1m -hold 10m] [-pollers 1000,2000] [-tasks 100000,300000] [common flags]

Where one Raft group saturates, a phase per list given: -fires (fires/s
until a step fails, then the best held), -pollers (idle executors), -tasks.

Examples:
	ax-bench ceiling -fires 500,1000,2000,4000 -step 1m -hold 10m
	ax-bench ceiling -pollers 1000,2000,5000 -tasks 100000,300000
`
}

func (c *ceilingCommand) Run(ctx context.Context, args []string) error {
	bf := newBenchFlags("ceiling", c.Usage())
	o := ceiling.Options{Log: os.Stdout}
	o.Register(bf.fs)
	if err := bf.parse(args); err != nil {
		return err
	} else if err := o.Check(bf.conn.Addr != ""); err != nil {
		return err
	}
	t, err := bf.start(ctx, "-executor", "false")
	if err != nil {
		return err
	}
	defer t.close()
	return ceiling.Run(ctx, scale.Cluster{Local: t.local, Client: t.cl, TLS: t.tls, Token: t.token}, o, os.Stdout)
}
