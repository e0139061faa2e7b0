package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/ax-scheduler/ax/internal/command"
	"github.com/ax-scheduler/ax/internal/command/operate"
	"github.com/ax-scheduler/ax/internal/command/work"
)

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
	new    func(io *command.IO) command.Command
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
		{name: "status", summary: "the cluster at a glance: members, executors, instances, failures, alerts, next fires", new: operate.NewStatus},
		{name: "task", summary: "apply, export, list, get, pause, resume, delete tasks; show their history and events; follow, promote and abort canary rollouts; re-run their instances", usage: work.TaskUsage, subs: []entry{
			{name: "apply", new: work.NewTaskApply},
			{name: "export", new: work.NewTaskExport},
			{name: "list", new: work.NewTaskList},
			{name: "get", new: work.NewTaskRead("get"), taskArg: true},
			{name: "pause", new: work.NewTaskWrite("pause"), taskArg: true},
			{name: "resume", new: work.NewTaskWrite("resume"), taskArg: true},
			{name: "delete", new: work.NewTaskWrite("delete"), taskArg: true},
			{name: "history", new: work.NewTaskRead("history"), taskArg: true},
			{name: "events", new: work.NewTaskRead("events"), taskArg: true},
			{name: "rollout", new: work.NewTaskRead("rollout"), taskArg: true},
			{name: "promote", new: work.NewTaskWrite("promote"), taskArg: true},
			{name: "abort", new: work.NewTaskWrite("abort"), taskArg: true},
			{name: "rerun", new: work.NewTaskRerun, taskArg: true},
		}},
		{name: "trigger", summary: "run a task now", new: work.NewTrigger, taskArg: true},
		{name: "submit", summary: "create a delayed instance of a task", new: work.NewSubmit, taskArg: true},
		{name: "backfill", summary: "create the instances of past fire times of a task", new: work.NewBackfill, taskArg: true},
		{name: "instance", summary: "list, get, log, shards, approve, reject, cancel, terminate, re-run instances; their results", usage: work.InstanceUsage, subs: []entry{
			{name: "list", new: work.NewInstanceList},
			{name: "get", new: work.NewInstanceGet},
			{name: "log", new: work.NewInstanceLog},
			{name: "shards", new: work.NewInstanceShards},
			{name: "result", new: work.NewInstanceResult},
			{name: "approve", new: work.NewInstanceDecide("approve")},
			{name: "reject", new: work.NewInstanceDecide("reject")},
			{name: "cancel", new: work.NewInstanceDecide("cancel")},
			{name: "terminate", new: work.NewInstanceDecide("terminate")},
			{name: "rerun", new: work.NewInstanceRerun},
		}},
		{name: "executor", summary: "run attempts handed out by the cluster", new: newExecutorCmd},
		// Started by ax executor next to itself.
		{name: "executor-supervise", hidden: true, new: newSuperviseCmd},
		{name: "approval", summary: "(inside a task) ask an operator to approve the running attempt", usage: work.ApprovalUsage, subs: []entry{
			{name: "request", new: work.NewApprovalRequest},
		}},
		{name: "cluster", summary: "show members, remove a node, transfer leadership", usage: operate.ClusterUsage, subs: []entry{
			{name: "status", new: operate.NewClusterStatus},
			{name: "remove", new: operate.NewClusterRemove},
			{name: "transfer", new: operate.NewClusterTransfer},
		}},
		{name: "snapshot", summary: "save the cluster's state to a file, inspect one, restore it", usage: operate.SnapshotUsage, subs: []entry{
			{name: "save", new: operate.NewSnapshotSave},
			{name: "inspect", new: operate.NewSnapshotInspect},
			{name: "restore", new: operate.NewSnapshotRestore},
		}},
		{name: "tls", summary: "create the CA and node/client certificates of a TLS cluster", usage: operate.TlsUsage, subs: []entry{
			{name: "ca create", new: operate.NewTLSCACreate},
			{name: "cert create", new: operate.NewTLSCertCreate},
		}},
		{name: "acl", summary: "bootstrap ACLs; create, list and revoke tokens", usage: operate.AclUsage, subs: []entry{
			{name: "bootstrap", new: operate.NewACLBootstrap},
			{name: "token create", new: operate.NewACLTokenCreate},
			{name: "token list", new: operate.NewACLTokenList},
			{name: "token revoke", new: operate.NewACLTokenRevoke},
		}},
		{name: "secret", summary: "put, list and delete secrets", usage: operate.SecretUsage, subs: []entry{
			{name: "put", new: operate.NewSecretPut},
			{name: "list", new: operate.NewSecretList},
			{name: "delete", new: operate.NewSecretDelete},
		}},
		{name: "alert", summary: "list alerts; silence and unsilence them", usage: operate.AlertUsage, subs: []entry{
			{name: "list", new: operate.NewAlertList},
			{name: "silence", new: operate.NewAlertSilence},
			{name: "silences", new: operate.NewAlertSilences},
			{name: "unsilence", new: operate.NewAlertUnsilence},
		}},
		{name: "channel", summary: "apply, list, get and delete notification channels", usage: operate.ChannelUsage, subs: []entry{
			{name: "apply", new: operate.NewChannelApply},
			{name: "list", new: operate.NewChannelList},
			{name: "get", new: operate.NewChannelGet},
			{name: "delete", new: operate.NewChannelDelete},
		}},
		{name: "calendar", summary: "apply, import (.ics), list, get and delete exclusion calendars", usage: work.CalendarUsage, subs: []entry{
			{name: "apply", new: work.NewCalendarApply},
			{name: "import", new: work.NewCalendarImport},
			{name: "list", new: work.NewCalendarList},
			{name: "get", new: work.NewCalendarGet},
			{name: "delete", new: work.NewCalendarDelete},
		}},
		{name: "window", summary: "apply, list, get and delete blackout windows", usage: work.WindowUsage, subs: []entry{
			{name: "apply", new: work.NewWindowApply},
			{name: "list", new: work.NewWindowList},
			{name: "get", new: work.NewWindowGet},
			{name: "delete", new: work.NewWindowDelete},
		}},
		{name: "pool", summary: "apply, list, get and delete shared pools of slots", usage: work.PoolUsage, subs: []entry{
			{name: "apply", new: work.NewPoolApply},
			{name: "list", new: work.NewPoolList},
			{name: "get", new: work.NewPoolGet},
			{name: "delete", new: work.NewPoolDelete},
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

// prefix is how many first words of args name a group inside group e
// ("token" of "acl token create"), 0 when they name none.
func (e *entry) prefix(args []string) int {
	best := 0
	for _, s := range e.subs {
		words := strings.Fields(s.name)
		n := 0
		for n < len(words)-1 && n < len(args) && args[n] == words[n] {
			n++
		}
		best = max(best, n)
	}
	return best
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
