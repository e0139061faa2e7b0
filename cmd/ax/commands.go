package main

import (
	"context"
	"flag"
	"fmt"
	"slices"
	"strings"

	"github.com/ax-scheduler/ax/client"
	"github.com/ax-scheduler/ax/internal/cli"
	"github.com/ax-scheduler/ax/internal/view"
)

// command is a leaf of the command table: a command that runs. newX(m)
// makes it for one run with its flag set built and its flags
// registered, so that help and completion read its flags without
// running it.
type command interface {
	// Flags is the command's flag set.
	Flags() *flag.FlagSet
	// Usage is the command's help with examples (-h adds the flags).
	Usage() string
	// Run runs the command with the arguments after its name.
	Run(ctx context.Context, args []string) error
}

// entry is a command of the table: a leaf (new), or a group (subs) whose
// leaves are named by one or two words after it ("ax acl token create").
type entry struct {
	name string
	// summary is the command's line in ax's usage (top-level entries).
	summary string
	// usage is a group's help: "ax task -h", "ax help task", and the
	// help of its leaves unless they have their own.
	usage  string
	hidden bool // left out of ax's usage and of completion
	new    func(m *Main) command
	subs   []entry
	// For completion: the first argument is a task name (taskArg), or
	// one of choices.
	taskArg bool
	choices []string
}

// commands is ax's command table, the one list of its commands:
// dispatch (Main.Run), ax's usage and help, completion and the test of
// the README's CLI reference all read it.
func commands() []entry {
	return []entry{
		{name: "agent", summary: "run a node (with no flags: a single-node cluster on 127.0.0.1:7070)", new: newAgentCmd},
		{name: "status", summary: "the cluster at a glance: members, executors, instances, failures, alerts, next fires", new: newStatusCmd},
		{name: "task", summary: "apply, export, list, get, pause, resume, delete tasks; show their history and events; re-run their instances", usage: taskUsage, subs: []entry{
			{name: "apply", new: newTaskApplyCmd},
			{name: "export", new: newTaskExportCmd},
			{name: "list", new: newTaskListCmd},
			{name: "get", new: newTaskReadCmd("get"), taskArg: true},
			{name: "pause", new: newTaskWriteCmd("pause"), taskArg: true},
			{name: "resume", new: newTaskWriteCmd("resume"), taskArg: true},
			{name: "delete", new: newTaskWriteCmd("delete"), taskArg: true},
			{name: "history", new: newTaskReadCmd("history"), taskArg: true},
			{name: "events", new: newTaskReadCmd("events"), taskArg: true},
			{name: "rerun", new: newTaskRerunCmd, taskArg: true},
		}},
		{name: "trigger", summary: "run a task now", new: newTriggerCmd, taskArg: true},
		{name: "submit", summary: "create a delayed instance of a task", new: newSubmitCmd, taskArg: true},
		{name: "backfill", summary: "create the instances of past fire times of a task", new: newBackfillCmd, taskArg: true},
		{name: "instance", summary: "list, get, log, approve, reject, cancel, terminate, re-run instances", usage: instanceUsage, subs: []entry{
			{name: "list", new: newInstanceListCmd},
			{name: "get", new: newInstanceGetCmd},
			{name: "log", new: newInstanceLogCmd},
			{name: "approve", new: newInstanceDecideCmd("approve")},
			{name: "reject", new: newInstanceDecideCmd("reject")},
			{name: "cancel", new: newInstanceDecideCmd("cancel")},
			{name: "terminate", new: newInstanceDecideCmd("terminate")},
			{name: "rerun", new: newInstanceRerunCmd},
		}},
		{name: "executor", summary: "run attempts handed out by the cluster", new: newExecutorCmd},
		// Started by ax executor next to itself.
		{name: "executor-supervise", hidden: true, new: newSuperviseCmd},
		{name: "approval", summary: "(inside a task) ask an operator to approve the running attempt", usage: approvalUsage, subs: []entry{
			{name: "request", new: newApprovalRequestCmd},
		}},
		{name: "cluster", summary: "show members, remove a node, transfer leadership", usage: clusterUsage, subs: []entry{
			{name: "status", new: newClusterStatusCmd},
			{name: "remove", new: newClusterRemoveCmd},
			{name: "transfer", new: newClusterTransferCmd},
		}},
		{name: "tls", summary: "create the CA and node/client certificates of a TLS cluster", usage: tlsUsage, subs: []entry{
			{name: "ca create", new: newTLSCACreateCmd},
			{name: "cert create", new: newTLSCertCreateCmd},
		}},
		{name: "acl", summary: "bootstrap ACLs; create, list and revoke tokens", usage: aclUsage, subs: []entry{
			{name: "bootstrap", new: newACLBootstrapCmd},
			{name: "token create", new: newACLTokenCreateCmd},
			{name: "token list", new: newACLTokenListCmd},
			{name: "token revoke", new: newACLTokenRevokeCmd},
		}},
		{name: "secret", summary: "put, list and delete secrets", usage: secretUsage, subs: []entry{
			{name: "put", new: newSecretPutCmd},
			{name: "list", new: newSecretListCmd},
			{name: "delete", new: newSecretDeleteCmd},
		}},
		{name: "alert", summary: "list alerts; silence and unsilence them", usage: alertUsage, subs: []entry{
			{name: "list", new: newAlertListCmd},
			{name: "silence", new: newAlertSilenceCmd},
			{name: "silences", new: newAlertSilencesCmd},
			{name: "unsilence", new: newAlertUnsilenceCmd},
		}},
		{name: "channel", summary: "apply, list, get and delete notification channels", usage: channelUsage, subs: []entry{
			{name: "apply", new: newChannelApplyCmd},
			{name: "list", new: newChannelListCmd},
			{name: "get", new: newChannelGetCmd},
			{name: "delete", new: newChannelDeleteCmd},
		}},
		{name: "keygen", summary: "make a key for -encrypt-key-file", new: newKeygenCmd},
		{name: "completion", summary: "print a bash, zsh or fish completion script", new: newCompletionCmd, choices: []string{"bash", "zsh", "fish"}},
		{name: "version", summary: "print the version", new: newVersionCmd},
		// Called by the completion scripts.
		{name: "__complete", hidden: true, new: newCompleteCmd},
	}
}

// lookup is the top-level command name, nil when there is none.
func lookup(name string) *entry {
	for _, e := range commands() {
		if e.name == name {
			return &e
		}
	}
	return nil
}

// sub is the leaf of group e that the first words of args name, with the
// number of words its name takes; nil when none does.
func (e *entry) sub(args []string) (*entry, int) {
	for _, s := range e.subs {
		words := strings.Fields(s.name)
		if len(args) >= len(words) && slices.Equal(args[:len(words)], words) {
			return &s, len(words)
		}
	}
	return nil, 0
}

// paths lists the command path of every leaf ("agent", "task list",
// "acl token create"), hidden ones too.
func paths() [][]string {
	var out [][]string
	for _, e := range commands() {
		if e.subs == nil {
			out = append(out, []string{e.name})
		}
		for _, s := range e.subs {
			out = append(out, append([]string{e.name}, strings.Fields(s.name)...))
		}
	}
	return out
}

const usageHead = `ax is a replicated job scheduler.

Usage:
	ax <command> [arguments]

Commands:
`

const usageTail = `
Every client command takes -addr (default $AX_ADDR or 127.0.0.1:7070),
-token (default $AX_TOKEN) and, for a TLS cluster, -ca-cert (default
$AX_CACERT). Read commands take -o table|json|yaml. Run "ax <command> -h"
for details.

Exit status: 0 success, 1 error, 2 usage, 130 interrupted (Ctrl-C);
trigger/submit/instance rerun -wait: 0 SUCCESS, 1 FAILED, 3 TERMINATED,
4 CANCELED or SKIPPED.
`

// usage is ax's usage: the commands of the table with their summaries.
func usage() string {
	var b strings.Builder
	b.WriteString(usageHead)
	for _, e := range commands() {
		if !e.hidden {
			fmt.Fprintf(&b, "\t%-8s  %s\n", e.name, e.summary)
		}
	}
	b.WriteString(usageTail)
	return b.String()
}

// base is what every command has: its Main, its flag set, its help.
type base struct {
	m     *Main
	fs    *flag.FlagSet
	usage string
}

// init makes b the command name of m with help usage: -h prints usage
// and the flags on m.Stdout.
func (b *base) init(m *Main, name, usage string) {
	b.m, b.usage = m, usage
	b.fs = cli.NewFlagSet(name, usage, m.Stdout)
}

func (b *base) Flags() *flag.FlagSet { return b.fs }
func (b *base) Usage() string        { return b.usage }

// parse parses args, flags before or after the arguments.
func (b *base) parse(args []string) error { return cli.ParseInterspersed(b.fs, args) }

// clientBase is a command that talks to a cluster: base and the client
// flags.
type clientBase struct {
	base
	cf clientFlags
}

// init is base's, with the client flags registered. The command must not
// be copied afterwards: its flags point into it.
func (c *clientBase) init(m *Main, name, usage string) {
	c.base.init(m, name, usage)
	c.cf.register(c.fs, m.Getenv)
}

// connect parses args, checks out (when the command has -o) and returns
// a client of the flags.
func (c *clientBase) connect(args []string, out *view.Output) (*client.Client, error) {
	if err := c.parse(args); err != nil {
		return nil, err
	}
	if out != nil {
		if err := out.Check(); err != nil {
			return nil, fmt.Errorf("%s: %w", c.fs.Name(), err)
		}
	}
	return c.cf.client()
}

// parseOne parses args, which hold one argument besides the flags: what
// names it in the error.
func (b *base) parseOne(args []string, what string) (string, error) {
	if err := b.parse(args); err != nil {
		return "", err
	}
	return b.arg(what)
}

// arg is the one argument the command was given, what naming it in the
// error.
func (b *base) arg(what string) (string, error) {
	if b.fs.NArg() != 1 {
		return "", fmt.Errorf("%s: want exactly one %s", b.fs.Name(), what)
	}
	return b.fs.Arg(0), nil
}

// connectOne is connect for a command of one argument: what names it in
// the error.
func (c *clientBase) connectOne(args []string, out *view.Output, what string) (*client.Client, string, error) {
	cl, err := c.connect(args, out)
	if err != nil {
		return nil, "", err
	}
	arg, err := c.arg(what)
	return cl, arg, err
}
