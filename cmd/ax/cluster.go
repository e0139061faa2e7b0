package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/ax-scheduler/ax/internal/view"
)

// clusterUsage is the help of ax cluster and of its subcommands.
const clusterUsage = `
Usage: ax cluster <subcommand> [flags] [args]

Subcommands:
	status           members: addresses, role, reachability (each member's /healthz,
	                 asked just now), last contact with the leader, replication lag
	                 (entries behind the commit index), version and protocol
	remove NODE      remove a member (e.g. one that is gone for good)
	transfer [NODE]  hand leadership to NODE (any up-to-date member if omitted)

status takes -o table|json|yaml (-json: -o json) and -w (redraw every
2s until Ctrl-C). Without a leader it fails after about a second;
-stale shows what the node itself knows (debugging a broken cluster).

Examples:
	ax cluster status -addr 127.0.0.1:7080
	ax cluster status -w
	ax cluster remove n3
	ax cluster transfer n2
`

// clusterStatusCmd is ax cluster status.
type clusterStatusCmd struct {
	clientBase
	out   view.Output
	watch bool
}

func newClusterStatusCmd(m *Main) command {
	c := &clusterStatusCmd{}
	c.init(m, "cluster status", clusterUsage)
	c.cf.registerStale(c.fs, false)
	c.out.Register(c.fs)
	c.fs.BoolVar(&c.watch, "w", false, "watch: redraw every 2s while it changes, until Ctrl-C")
	return c
}

func (c *clusterStatusCmd) Run(ctx context.Context, args []string) error {
	cl, err := c.connect(args, &c.out)
	if err != nil {
		return err
	}
	if c.watch {
		return c.m.screen().Poll(ctx, c.out, 2*time.Second, func(ctx context.Context, w io.Writer) error { return view.ClusterStatus(ctx, cl, c.out, w) })
	}
	return view.ClusterStatus(ctx, cl, c.out, c.m.Stdout)
}

// clusterRemoveCmd is ax cluster remove.
type clusterRemoveCmd struct{ clientBase }

func newClusterRemoveCmd(m *Main) command {
	c := &clusterRemoveCmd{}
	c.init(m, "cluster remove", clusterUsage)
	return c
}

func (c *clusterRemoveCmd) Run(ctx context.Context, args []string) error {
	cl, id, err := c.connectOne(args, nil, "node id")
	if err != nil {
		return err
	}
	if err := cl.RemoveNode(ctx, id); err != nil {
		return err
	}
	fmt.Fprintf(c.m.Stdout, "removed %s\n", id)
	return nil
}

// clusterTransferCmd is ax cluster transfer.
type clusterTransferCmd struct{ clientBase }

func newClusterTransferCmd(m *Main) command {
	c := &clusterTransferCmd{}
	c.init(m, "cluster transfer", clusterUsage)
	return c
}

func (c *clusterTransferCmd) Run(ctx context.Context, args []string) error {
	cl, err := c.connect(args, nil)
	if err != nil {
		return err
	}
	if c.fs.NArg() > 1 {
		return fmt.Errorf("cluster transfer: at most one node id")
	}
	if err := cl.Transfer(ctx, c.fs.Arg(0)); err != nil {
		return err
	}
	fmt.Fprintln(c.m.Stdout, "leadership transferred")
	return nil
}
