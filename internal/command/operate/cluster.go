package operate

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/ax-scheduler/ax/internal/command"

	"github.com/ax-scheduler/ax/internal/view"
)

// ClusterUsage is the help of ax cluster and of its subcommands.
const ClusterUsage = `
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
	command.ClientBase
	out   view.Output
	watch bool
}

// NewClusterStatus makes ax cluster status.
func NewClusterStatus(io *command.IO) command.Command {
	c := &clusterStatusCmd{}
	c.Init(io, "cluster status", ClusterUsage)
	c.CF.RegisterStale(c.FS, false)
	c.out.Register(c.FS)
	c.FS.BoolVar(&c.watch, "w", false, "watch: redraw every 2s while it changes, until Ctrl-C")
	return c
}

func (c *clusterStatusCmd) Run(ctx context.Context, args []string) error {
	cl, err := c.Connect(args, &c.out)
	if err != nil {
		return err
	}
	if c.watch {
		return c.IO.Screen().Poll(ctx, c.out, 2*time.Second, func(ctx context.Context, w io.Writer) error { return view.ClusterStatus(ctx, cl, c.out, w) })
	}
	return view.ClusterStatus(ctx, cl, c.out, c.IO.Stdout)
}

// clusterRemoveCmd is ax cluster remove.
type clusterRemoveCmd struct{ command.ClientBase }

// NewClusterRemove makes ax cluster remove.
func NewClusterRemove(io *command.IO) command.Command {
	c := &clusterRemoveCmd{}
	c.Init(io, "cluster remove", ClusterUsage)
	return c
}

func (c *clusterRemoveCmd) Run(ctx context.Context, args []string) error {
	cl, id, err := c.ConnectOne(args, nil, "node id")
	if err != nil {
		return err
	}
	if err := cl.RemoveNode(ctx, id); err != nil {
		return err
	}
	fmt.Fprintf(c.IO.Stdout, "removed %s\n", id)
	return nil
}

// clusterTransferCmd is ax cluster transfer.
type clusterTransferCmd struct{ command.ClientBase }

// NewClusterTransfer makes ax cluster transfer.
func NewClusterTransfer(io *command.IO) command.Command {
	c := &clusterTransferCmd{}
	c.Init(io, "cluster transfer", ClusterUsage)
	return c
}

func (c *clusterTransferCmd) Run(ctx context.Context, args []string) error {
	cl, err := c.Connect(args, nil)
	if err != nil {
		return err
	}
	if c.FS.NArg() > 1 {
		return fmt.Errorf("cluster transfer: at most one node id")
	}
	if err := cl.Transfer(ctx, c.FS.Arg(0)); err != nil {
		return err
	}
	fmt.Fprintln(c.IO.Stdout, "leadership transferred")
	return nil
}
