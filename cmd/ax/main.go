// Command ax is a replicated job scheduler: one binary for the agent (a
// Raft member that schedules and serves the API) and the CLI that talks to
// it.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

// command is one subcommand, Litestream style.
type command interface {
	Run(ctx context.Context, args []string) error
	Usage() string
}

func commands() map[string]command {
	return map[string]command{
		"agent":    &agentCommand{},
		"task":     &taskCommand{},
		"cluster":  &clusterCommand{},
		"trigger":  &triggerCommand{},
		"submit":   &submitCommand{},
		"backfill": &backfillCommand{},
		"instance": &instanceCommand{},
		"executor": &executorCommand{},
		// Started by ax executor next to itself; not listed.
		"executor-supervise": &superviseCommand{},
		"approval":           &approvalCommand{},
		"bench":              &benchCommand{},
		"tls":                &tlsCommand{},
		"version":            &versionCommand{},
		"acl":                &aclCommand{},
		"secret":             &secretCommand{},
		"alert":              &alertCommand{},
		"channel":            &channelCommand{},
		"keygen":             &keygenCommand{},
	}
}

const usage = `ax is a replicated job scheduler.

Usage:
	ax <command> [arguments]

Commands:
	agent     run a node (with no flags: a single-node cluster on 127.0.0.1:7070)
	task      apply, list, get, pause, resume, delete tasks; show their history and events
	trigger   run a task now
	submit    create a delayed instance of a task
	backfill  create the instances of past fire times of a task
	instance  list, get, log, approve, reject, cancel, terminate instances
	executor  run attempts handed out by the cluster
	approval  (inside a task) ask an operator to approve the running attempt
	cluster   show members, remove a node, transfer leadership
	tls       create the CA and node/client certificates of a TLS cluster
	acl       bootstrap ACLs; create, list and revoke tokens
	secret    put, list and delete secrets
	alert     list alerts; silence and unsilence them
	channel   apply, list, get and delete notification channels
	keygen    make a key for -encrypt-key-file
	bench     load-test a cluster
	version   print the version

Every client command takes -addr (default $AX_ADDR or 127.0.0.1:7070),
-token (default $AX_TOKEN) and, for a TLS cluster, -ca-cert (default
$AX_CACERT). Run "ax <command> -h" for details.
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(2)
		}
		fmt.Fprintln(os.Stderr, "ax:", err)
		if hint := tlsHint(err); hint != "" {
			fmt.Fprintln(os.Stderr, "ax: hint:", hint)
		}
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Print(usage)
		if len(args) == 0 {
			return flag.ErrHelp
		}
		return nil
	}
	cmd, ok := commands()[args[0]]
	if !ok {
		fmt.Fprint(os.Stderr, usage)
		return fmt.Errorf("unknown command %q", args[0])
	}
	return cmd.Run(ctx, args[1:])
}

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

type versionCommand struct{}

func (*versionCommand) Run(ctx context.Context, args []string) error {
	fmt.Println("ax", version)
	return nil
}

func (*versionCommand) Usage() string { return "ax version" }
