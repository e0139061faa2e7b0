// Command ax-bench load-tests an ax cluster: write, submission, firing,
// dispatch, failover, soak and console scenarios, each against the cluster
// at -addr or a temporary loopback cluster of real ax agents that it
// starts and removes. It is kept out of the ax binary, as Litestream keeps
// litestream-test out of litestream.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/ax-scheduler/ax/internal/cli"
)

// commands are the scenarios, Litestream style: one file each.
func commands() map[string]cli.Command {
	return map[string]cli.Command{
		"tasks":    &tasksCommand{},
		"submit":   &submitCommand{},
		"fire":     &fireCommand{},
		"run":      &runCommand{},
		"failover": &failoverCommand{},
		"soak":     &soakCommand{},
		"console":  &consoleCommand{},
		"read":     &readCommand{},
		"shards":   &shardsCommand{},
		"scale":    &scaleCommand{},
		"ceiling":  &ceilingCommand{},
	}
}

const usage = `ax-bench load-tests an ax cluster.

Usage:
	ax-bench <scenario> [flags]

Scenarios:
	tasks     task writes/s (each a Raft commit) and latency per client count
	submit    delayed submissions/s, batched and single, and what HTTP alone costs
	fire      firing lateness (firedAt - scheduledAt) at given rates
	run       end to end through executors, and dispatch latency at a paced rate
	failover  a leader's loss: election, wheel reload, or dispatch (-dispatch)
	soak      a mixed load for minutes, sampling every node's memory, fds and disk
	console   the operator console's requests on a cluster filled like a busy one
	read      linearizable (default) vs stale reads, through the leader and a follower
	shards    one sharded instance over executors: until fanned out, all shards started, finished
	scale     fill to millions pending in steps: rate, lateness, disk, memory; then kill, restart, join
	ceiling   where one group saturates: fires/s held, idle executors, tasks; CPU, memory, fds

Without -addr a scenario starts a temporary loopback cluster (-nodes, 3 by
default; -tls for TLS on HTTP and Raft) in a temporary directory and
removes it afterwards. Its agents run the ax binary given with -ax; without
-ax, ax-bench builds github.com/ax-scheduler/ax/cmd/ax from the source
tree it runs in (go run ./cmd/ax-bench does), so it measures that tree.
With -addr it measures the cluster there (-token, -token-file, -ca-cert as
for ax). Run "ax-bench <scenario> -h" for its flags and examples.
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() { <-ctx.Done(); stop() }() // a second Ctrl-C kills at once
	err := run(ctx, os.Args[1:])
	switch {
	case ctx.Err() != nil:
		// The scenario has stopped and removed its temporary cluster.
		fmt.Fprintln(os.Stderr, "ax-bench: interrupted")
		os.Exit(130)
	case errors.Is(err, flag.ErrHelp):
		os.Exit(2)
	case err != nil:
		fmt.Fprintln(os.Stderr, "ax-bench:", err)
		os.Exit(1)
	}
}

// run runs the scenario args name. A usage request without a scenario is
// flag.ErrHelp, as a scenario's -h is.
func run(ctx context.Context, args []string) error {
	if len(args) == 0 {
		fmt.Fprint(os.Stderr, usage)
		return flag.ErrHelp
	}
	if cli.IsHelp(args[0]) { // ax-bench help, ax-bench help submit
		return cli.Help(os.Stdout, usage, commands(), args[1:], unknownScenario)
	}
	cmd, ok := commands()[args[0]]
	if !ok {
		return unknownScenario(args[0])
	}
	return cmd.Run(ctx, args[1:])
}

func unknownScenario(name string) error {
	return fmt.Errorf("unknown scenario %q (ax-bench help lists them)", name)
}
