package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/ax-scheduler/ax/model"
)

type clusterCommand struct{}

func (*clusterCommand) Usage() string {
	return `
Usage: ax cluster <subcommand> [flags] [args]

Subcommands:
	status           members: addresses, role, reachability (each member's /healthz,
	                 asked just now), last contact with the leader, replication lag
	                 (entries behind the commit index), version and protocol
	remove NODE      remove a member (e.g. one that is gone for good)
	transfer [NODE]  hand leadership to NODE (any up-to-date member if omitted)

Examples:
	ax cluster status -addr 127.0.0.1:7080
	ax cluster remove n3
	ax cluster transfer n2
`
}

func (c *clusterCommand) Run(ctx context.Context, args []string) error {
	sub, args, fs, cf, err := subcommand("cluster", c.Usage(), args)
	if err != nil {
		return err
	}
	asJSON := fs.Bool("json", false, "print JSON (status)")
	if err := parseInterspersed(fs, args); err != nil {
		return err
	}
	cl, err := cf.client()
	if err != nil {
		return err
	}
	switch sub {
	case "status":
		st, err := cl.Cluster(ctx)
		if err != nil {
			return err
		}
		if *asJSON {
			return printJSON(st)
		}
		if err := writeMembers(os.Stdout, st.Nodes); err != nil {
			return err
		}
		fmt.Printf("term %d, commit index %d, applied index %d, protocol %d\n", st.Term, st.CommitIndex, st.AppliedIndex, st.Protocol)
		if st.LeaderHTTP == "" {
			return nil
		}
		// Only the leader knows the executors; any node asks it.
		el, err := cl.Executors(ctx)
		if err != nil {
			return fmt.Errorf("executors: %w", err)
		}
		if len(el.Executors) == 0 {
			fmt.Println("no executors heard from in the last minute")
			return nil
		}
		tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "EXECUTOR\tHOST\tLABELS\tRUNNING\tFREE\tLAST SEEN")
		for _, e := range el.Executors {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%s ago\n", e.Name, e.Host, joinLabels(e.Labels), e.Running, e.Free,
				time.Since(e.LastSeen.Time).Round(time.Second))
		}
		return tw.Flush()
	case "remove":
		if fs.NArg() != 1 {
			return fmt.Errorf("cluster remove: want exactly one node id")
		}
		if err := cl.RemoveNode(ctx, fs.Arg(0)); err != nil {
			return err
		}
		fmt.Printf("removed %s\n", fs.Arg(0))
		return nil
	case "transfer":
		if fs.NArg() > 1 {
			return fmt.Errorf("cluster transfer: at most one node id")
		}
		if err := cl.Transfer(ctx, fs.Arg(0)); err != nil {
			return err
		}
		fmt.Println("leadership transferred")
		return nil
	default:
		return fmt.Errorf("cluster: unknown subcommand %q", sub)
	}
}

// parseInterspersed parses flags that may come after positional arguments
// ("ax task get foo -addr x").
func parseInterspersed(fs *flag.FlagSet, args []string) error {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return err
		}
		args = fs.Args()
		if len(args) == 0 {
			break
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
	return fs.Parse(pos)
}

// writeMembers prints the members as a table, then what is wrong with any
// of them.
func writeMembers(w io.Writer, nodes []model.Node) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
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

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
