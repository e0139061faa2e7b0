package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/ax-scheduler/ax/internal/command"

	"github.com/ax-scheduler/ax/internal/cli"
	"github.com/ax-scheduler/ax/internal/complete"
	"github.com/ax-scheduler/ax/internal/view"
	"github.com/ax-scheduler/ax/model"
)

// completionCmd is ax completion.
type completionCmd struct{ command.Base }

func newCompletionCmd(io *command.IO) command.Command {
	c := &completionCmd{}
	c.Init(io, "completion", `
Usage: ax completion bash|zsh|fish

Prints a shell completion script: commands, subcommands, flags, some
flag values (-o, -state, -source, -paused, -role) and, for trigger,
submit, backfill and task get|pause|resume|delete|history|events, the
task names of the cluster (-addr / AX_ADDR, asked with a 1s timeout).
The script asks the ax on the PATH (ax __complete), so completions
follow the binary's own commands and flags.

Examples:
	source <(ax completion bash)                          # in ~/.bashrc
	ax completion zsh > "${fpath[1]}/_ax"                 # then restart zsh
	ax completion fish > ~/.config/fish/completions/ax.fish
`)
	return c
}

func (c *completionCmd) Run(ctx context.Context, args []string) error {
	if err := c.FS.Parse(args); err != nil {
		return err
	}
	if c.FS.NArg() != 1 {
		return fmt.Errorf("completion: want one shell: bash, zsh or fish")
	}
	script, ok := complete.Script(c.FS.Arg(0))
	if !ok {
		return fmt.Errorf("completion: unknown shell %q: want bash, zsh or fish", c.FS.Arg(0))
	}
	fmt.Fprint(c.IO.Stdout, script)
	return nil
}

// completeCmd is ax __complete, which the completion scripts call.
type completeCmd struct{ command.Base }

func newCompleteCmd(io *command.IO) command.Command {
	c := &completeCmd{}
	c.Init(io, "__complete", "Usage: ax __complete -- WORDS...\n\nPrints the completions of the last word (called by the completion scripts).\n")
	return c
}

// Run prints the candidates for the last of the words after "--", one
// a line. The words are not parsed as its flags: they are a command line
// being typed.
func (c *completeCmd) Run(ctx context.Context, args []string) error {
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	if len(args) == 0 {
		args = []string{""}
	}
	cp := completer{io: c.IO, tasks: func(ctx context.Context, args []string) []string { return clusterTasks(ctx, c.IO, args) }}
	for _, cand := range cp.complete(ctx, args) {
		fmt.Fprintln(c.IO.Stdout, cand)
	}
	return nil
}

// completer finds the candidates for the last of words (the words after
// "ax"): commands and subcommands from the command table, flags from the
// named command's own flag set, and some flag and argument values.
type completer struct {
	io *command.IO
	// tasks lists the cluster's task names; args are the command's
	// arguments so far (their -addr, -token...).
	tasks func(ctx context.Context, args []string) []string
}

// flagValues are the values offered for flags that take one of a few.
var flagValues = map[string][]string{
	"o":      {view.FormatTable, view.FormatJSON, view.FormatYAML},
	"state":  {model.StateScheduled, model.StateReady, model.StateRunning, model.StateRetrying, model.StateBlocked, model.StateWaitingApproval, model.StateSuccess, model.StateFailed, model.StateTerminated, model.StateSkipped, model.StateCanceled},
	"source": model.Sources,
	"paused": {"true", "false"},
	"role":   {model.RoleReader, model.RoleOperator, model.RoleWriter, model.RoleAdmin, model.RoleExecutor},
}

func (c completer) complete(ctx context.Context, words []string) []string {
	return complete.Completer{Commands: c.tree(commands()), Values: c.values}.Complete(ctx, words)
}

// tree is the command table es as completion walks it: -task and the
// task argument of a command offer the cluster's task names.
func (c completer) tree(es []entry) []complete.Command {
	var out []complete.Command
	for _, e := range es {
		cc := complete.Command{Name: e.name, Hidden: e.hidden, Subs: c.tree(e.subs)}
		if e.new != nil {
			cc.Flags = func() *flag.FlagSet { return e.new(c.io).Flags() }
		}
		switch {
		case e.taskArg:
			cc.Args = c.tasks
		case e.choices != nil:
			cc.Args = func(context.Context, []string) []string { return e.choices }
		}
		out = append(out, cc)
	}
	return out
}

// values offers the values of flag name: the cluster's task names for
// -task, else those of flagValues.
func (c completer) values(ctx context.Context, name string, args []string) []string {
	if name == "task" {
		return c.tasks(ctx, args)
	}
	return flagValues[name]
}

// clusterTasks lists the task names of the cluster that args (-addr,
// -token... or their environment variables) name, within a second (or
// AX_COMPLETE_TIMEOUT); none on any failure.
func clusterTasks(ctx context.Context, cio *command.IO, args []string) []string {
	fs := cli.NewFlagSet("complete", "", io.Discard)
	var cf command.ClientFlags
	cf.Register(fs, cio.Getenv)
	// Only the client flags (and their values) of the line.
	var mine []string
	for i := 0; i < len(args); i++ {
		f := fs.Lookup(complete.FlagName(args[i]))
		if f == nil {
			continue
		}
		mine = append(mine, args[i])
		if !strings.Contains(args[i], "=") && i+1 < len(args) {
			mine = append(mine, args[i+1])
			i++
		}
	}
	if fs.Parse(mine) != nil {
		return nil
	}
	cl, err := cf.Client()
	if err != nil {
		return nil
	}
	lctx, cancel := context.WithTimeout(ctx, completeWithin(cio, time.Second))
	defer cancel()
	l, err := cl.ListTasks(lctx, model.TaskFilter{Limit: 1000})
	if err != nil {
		return nil
	}
	names := make([]string, len(l.Tasks))
	for i, t := range l.Tasks {
		names[i] = t.Name
	}
	return names
}

// completeWithin is how long asking the cluster may take: def, so that a
// Tab never hangs, unless AX_COMPLETE_TIMEOUT sets it (a slow or busy
// machine; the tests set it so that CPU contention does not fail them).
func completeWithin(cio *command.IO, def time.Duration) time.Duration {
	if d, err := time.ParseDuration(cio.Getenv("AX_COMPLETE_TIMEOUT")); err == nil && d > 0 {
		return d
	}
	return def
}
