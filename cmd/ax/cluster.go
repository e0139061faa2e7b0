package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/ax-scheduler/ax/client"
	"github.com/ax-scheduler/ax/model"
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
	out   output
	watch bool
}

func newClusterStatusCmd(m *Main) command {
	c := &clusterStatusCmd{}
	c.init(m, "cluster status", clusterUsage)
	c.cf.registerStale(c.fs, false)
	c.out.register(c.fs)
	c.fs.BoolVar(&c.watch, "w", false, "watch: redraw every 2s while it changes, until Ctrl-C")
	return c
}

func (c *clusterStatusCmd) Run(ctx context.Context, args []string) error {
	cl, err := c.connect(args, &c.out)
	if err != nil {
		return err
	}
	if c.watch {
		return c.m.watchPoll(ctx, c.out, 2*time.Second, func(ctx context.Context, w io.Writer) error { return clusterStatus(ctx, cl, c.out, w) })
	}
	return clusterStatus(ctx, cl, c.out, c.m.Stdout)
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

// clusterStatus prints the members, then the executors the leader knows.
func clusterStatus(ctx context.Context, cl *client.Client, out output, w io.Writer) error {
	st, err := cl.Cluster(ctx)
	if err != nil {
		return err
	}
	return out.print(w, st, func(w io.Writer) error {
		if err := writeMembers(w, st.Nodes); err != nil {
			return err
		}
		fmt.Fprintf(w, "term %d, commit index %d, applied index %d, protocol %d\n", st.Term, st.CommitIndex, st.AppliedIndex, st.Protocol)
		if st.LeaderHTTP == "" {
			fmt.Fprintln(w, "no leader: executors unknown")
			return nil
		}
		// Only the leader knows the executors; any node asks it.
		el, err := cl.Executors(ctx)
		if err != nil {
			return fmt.Errorf("executors: %w", err)
		}
		fmt.Fprintln(w)
		return writeExecutors(w, el.Executors, time.Now())
	})
}

// writeExecutors prints the executors the leader heard from.
func writeExecutors(w io.Writer, execs []model.ExecutorStatus, now time.Time) error {
	if len(execs) == 0 {
		fmt.Fprintln(w, "no executors heard from in the last minute")
		return nil
	}
	tw := newTable(w)
	row(tw, "EXECUTOR", "HOST", "LABELS", "RUNNING", "FREE", "LAST SEEN")
	for _, e := range execs {
		row(tw, e.Name, orDash(e.Host), orDash(joinLabels(e.Labels)), e.Running, e.Free, ago(e.LastSeen, now))
	}
	return tw.Flush()
}

// writeMembers prints the members as a table, then what is wrong with any
// of them.
func writeMembers(w io.Writer, nodes []model.Node) error {
	tw := newTable(w)
	fmt.Fprintln(tw, "NODE\tRAFT\tHTTP\tSUFFRAGE\tROLE\tSTATUS\tLAST CONTACT\tLAG\tVERSION\tPROTO")
	var problems []string
	for _, n := range nodes {
		role, contact, lag, version := orDash(n.Role), "-", "?", orDash(n.Version)
		switch {
		case n.Status == "unreachable" && n.RaftContact > 0:
			contact = n.RaftContact.Std().String() + " (raft)"
		case n.Status == "unreachable":
			contact = "?"
		case n.Role != model.RoleLeader:
			contact = n.LastContact.Std().String()
		}
		if n.Lag != nil {
			lag = strconv.FormatUint(*n.Lag, 10)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\n", n.ID, n.RaftAddr, n.HTTPAddr, n.Suffrage, role,
			orDash(n.Status), contact, lag, version, max(n.Proto, 1))
		if n.Problem != "" {
			problems = append(problems, fmt.Sprintf("%s %s: %s", n.ID, n.Status, n.Problem))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, p := range problems {
		fmt.Fprintln(w, p)
	}
	return nil
}
