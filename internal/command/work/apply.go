package work

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/ax-scheduler/ax/internal/command"

	"github.com/ax-scheduler/ax/internal/cli"
	"github.com/ax-scheduler/ax/internal/taskfile"
)

// applyUsage is the help of task apply.
const applyUsage = `
Usage: ax task apply -f FILE|DIR|- [-f ...] [-dry-run] [-prune -l k=v[,k=v]] [-check-version]

Creates or updates tasks from definition files, as kubectl apply does, and
prints one line per task: NAME created|configured|unchanged (version N).

	-f FILE    a JSON file (an object or an array of them, or several
	           one after another) or a YAML file (one or more documents
	           separated by ---, each a mapping or a list of them); the
	           extension decides, else the first character
	-f DIR     the directory's *.json, *.yaml and *.yml files, in name order
	           (not its subdirectories: give them with another -f)
	-f -       stdin, JSON or YAML

Every file is read and checked before anything is written: a definition
without a valid name, a task defined twice, or a file that does not parse
stops the apply, each problem reported with its file and line. Then every
task is applied in turn; a task the server refuses is reported (file:line
of the field, when it can be found) and the others are still applied; the
exit status is 1 if any failed.

Paused is operational state, not part of the definition: a definition
without "paused" leaves the task paused or active as it is (a new task
starts active), so re-applying files never undoes ax task pause. Set
paused in a file only to pause or resume with the apply.

The fields the server owns (version, createdAt, updatedAt, updatedBy,
nextFireTimes, runs, completed) are ignored, so the output of ax task get or list -json
applies too (its paused is set, so it is applied); with -check-version a
definition's version is a precondition (the task must still be at that
version). ax task export writes files without them, and without paused.

-dry-run asks the server what each write would do and writes nothing:
created, unchanged, or configured with a unified diff of the definition as
stored (normalized, defaults filled in) against what it would become.

-prune, after applying, deletes the tasks that carry every label of -l and
are not in the files (with -dry-run: lists them). -l is required: deleting
every task that is not in the files is never the default. Nothing is
pruned when a task failed to apply (a renamed task that fails must not
lose its old name too).

Examples:
	ax task apply -f daily_report.json
	ax task apply -f tasks/ -dry-run
	ax task apply -f tasks/ -prune -l team=data
	ax task export -l team=data | ax task apply -f - -dry-run
`

// taskApplyCmd is ax task apply.
type taskApplyCmd struct {
	command.ClientBase
	files        cli.MultiFlag
	dryRun       bool
	prune        bool
	selector     cli.MultiFlag
	checkVersion bool
}

// NewTaskApply makes ax task apply.
func NewTaskApply(io *command.IO) command.Command {
	c := &taskApplyCmd{}
	c.Init(io, "task apply", applyUsage)
	c.FS.Var(&c.files, "f", "definition file, directory, or - for stdin (repeatable)")
	c.FS.BoolVar(&c.dryRun, "dry-run", false, "show what would change, with diffs, and write nothing")
	c.FS.BoolVar(&c.prune, "prune", false, "delete the tasks with the -l labels that are not in the files")
	cli.SelectorFlag(c.FS, &c.selector, "labels k=v[,k=v] of the tasks -prune may delete (repeatable)")
	c.FS.BoolVar(&c.checkVersion, "check-version", false, "treat a definition's version as a precondition")
	return c
}

func (c *taskApplyCmd) Run(ctx context.Context, args []string) error {
	if err := c.Parse(args); err != nil {
		return err
	}
	switch {
	case c.FS.NArg() > 0:
		return fmt.Errorf("task apply: unexpected argument %q (files are given with -f)", c.FS.Arg(0))
	case len(c.files) == 0:
		return errors.New("task apply: -f FILE|DIR|- is required")
	}
	labels, err := taskfile.ParseSelector(c.selector)
	if err != nil {
		return fmt.Errorf("task apply: %w", err)
	}
	switch {
	case c.prune && len(labels) == 0:
		return errors.New("task apply: -prune needs -l k=v: the labels of the tasks these files own (deleting every task not in the files is never the default)")
	case !c.prune && len(labels) > 0:
		return errors.New("task apply: -l selects the tasks -prune may delete; add -prune")
	}
	docs, err := taskfile.Load(c.files, c.IO.Stdin, taskfile.Options{KeepVersion: c.checkVersion})
	if err != nil {
		return fmt.Errorf("task apply: nothing applied:\n%w", err)
	}
	if c.dryRun {
		if err := checkDryRun(ctx, &c.CF); err != nil {
			return err
		}
	}
	cl, err := c.CF.Client()
	if err != nil {
		return err
	}
	a := &taskfile.Applier{Client: cl, Out: c.IO.Stdout, ErrOut: c.IO.Stderr, DryRun: c.dryRun}
	return a.Run(ctx, docs, c.prune, labels)
}

// dryRunProto is the first protocol whose API knows PUT ?dryRun=true.
const dryRunProto = 5

// checkDryRun makes sure that every node at -addr knows dry runs: an
// older one ignores ?dryRun=true and would write. Unreachable addresses
// are skipped (the dry run fails over only to reachable ones), but one at
// least must answer.
func checkDryRun(ctx context.Context, cf *command.ClientFlags) error {
	var lastErr error
	checked := 0
	for _, addr := range strings.Split(cf.Addr, ",") {
		one := *cf
		one.Addr = addr
		cl, err := one.Client()
		if err != nil {
			return err
		}
		h, err := cl.Health(ctx)
		if h == nil || h.Node == "" {
			lastErr = err
			continue
		}
		checked++
		if h.Proto < dryRunProto {
			return fmt.Errorf("task apply: -dry-run: node %s (%s) runs protocol %d, which ignores dry runs and would write: upgrade it, or point -addr at upgraded nodes", h.Node, addr, h.Proto)
		}
	}
	if checked == 0 {
		return fmt.Errorf("task apply: -dry-run: no node answered: %w", lastErr)
	}
	return nil
}
