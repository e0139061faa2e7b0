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
	"runtime"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/ax-scheduler/ax/internal/cli"
)

func commands() map[string]cli.Command {
	return map[string]cli.Command{
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
	version   print the version

Every client command takes -addr (default $AX_ADDR or 127.0.0.1:7070),
-token (default $AX_TOKEN) and, for a TLS cluster, -ca-cert (default
$AX_CACERT). Run "ax <command> -h" for details.
`

func main() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	var got atomic.Value // the signal that stopped the command
	go func() {
		s := <-sigs
		got.Store(s)
		signal.Stop(sigs) // a second Ctrl-C kills at once
		cancel()
	}()
	err := run(ctx, os.Args[1:])
	sig, _ := got.Load().(os.Signal)
	code := exitCode(err, sig)
	if err != nil && code != 2 && !(sig == os.Interrupt && errors.Is(err, context.Canceled)) {
		fmt.Fprintln(os.Stderr, "ax:", err)
		if hint := tlsHint(err); hint != "" {
			fmt.Fprintln(os.Stderr, "ax: hint:", hint)
		}
	}
	os.Exit(code)
}

// exitCode is the process's exit status: 130 after Ctrl-C (SIGINT, as
// shells report it), whatever the command made of it; 2 for a usage
// request without a command; 1 for an error; 0 otherwise (also after
// SIGTERM, which asks an agent or executor to stop cleanly).
func exitCode(err error, sig os.Signal) int {
	switch {
	case sig == os.Interrupt:
		return 130
	case errors.Is(err, flag.ErrHelp):
		return 2
	case err != nil:
		return 1
	}
	return 0
}

// groups are the commands made of subcommands: "ax task -h" and "ax help
// task" print their usage (a command with flags prints its flags itself).
var groups = map[string]bool{"task": true, "cluster": true, "instance": true, "approval": true, "tls": true,
	"acl": true, "secret": true, "alert": true, "channel": true}

func run(ctx context.Context, args []string) error {
	if len(args) == 0 {
		fmt.Print(usage)
		return flag.ErrHelp
	}
	if args[0] == "--version" || args[0] == "-version" {
		args = []string{"version"}
	}
	if cli.IsHelp(args[0]) { // ax help, ax help task
		return cli.Help(os.Stdout, usage, commands(), args[1:], unknownCommand)
	}
	cmd, ok := commands()[args[0]]
	if !ok {
		return unknownCommand(args[0])
	}
	if groups[args[0]] && len(args) == 2 && cli.IsHelp(args[1]) {
		fmt.Print(strings.TrimLeft(cmd.Usage(), "\n"))
		return nil
	}
	return cmd.Run(ctx, args[1:])
}

// unknownCommand is the one-line answer to a command ax does not have; the
// benchmarks, which ax had as "ax bench", are in ax-bench.
func unknownCommand(name string) error {
	if name == "bench" {
		return fmt.Errorf("unknown command %q: the benchmarks are in ax-bench (go run ./cmd/ax-bench -h)", name)
	}
	return fmt.Errorf("unknown command %q (ax help lists them)", name)
}

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

type versionCommand struct{}

func (*versionCommand) Run(ctx context.Context, args []string) error {
	fmt.Println(versionLine())
	return nil
}

func (*versionCommand) Usage() string {
	return "Usage: ax version\n\nPrints the version, the commit it was built from and the Go version.\n"
}

// versionLine says what this binary is: the version set with -ldflags (or
// the module version go install recorded), the VCS commit and time, and
// the Go version, from the build information.
func versionLine() string {
	v, commit, when, dirty, goVersion := version, "", "", false, runtime.Version()
	if bi, ok := debug.ReadBuildInfo(); ok {
		if v == "dev" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			v = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				commit = s.Value
			case "vcs.time":
				when = s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
	}
	line := "ax " + v
	if commit != "" {
		line += " commit " + commit[:min(len(commit), 12)]
		if dirty {
			line += "+dirty"
		}
		if when != "" {
			line += " (" + when + ")"
		}
	}
	return line + " " + goVersion + " " + runtime.GOOS + "/" + runtime.GOARCH
}
