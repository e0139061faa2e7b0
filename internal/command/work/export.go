package work

import (
	"context"
	"fmt"

	"github.com/ax-scheduler/ax/api/visible"
	"github.com/ax-scheduler/ax/internal/command"

	"github.com/ax-scheduler/ax/internal/cli"
	"github.com/ax-scheduler/ax/internal/taskfile"
)

// exportUsage is the help of task export.
const exportUsage = `
Usage: ax task export [-l k=v[,k=v]] [-o yaml|json] [-d DIR]

Writes task definitions as ax task apply reads them: without the fields the
server owns (version, createdAt, updatedAt, updatedBy, nextFireTimes, runs,
completed) and without paused, which is operational state (pause and resume change it;
apply keeps it). Applying the export again answers "unchanged" for every
task, and leaves paused tasks paused. Needs a writer token: below writer
the server hides literal env and header values, and an export of them
would overwrite the real values when applied, so it is refused.

To stdout: YAML documents separated by --- (default), or one JSON array
(-o json). With -d DIR: one file per task, DIR/NAME.yaml or DIR/NAME.json
(DIR is created; files of the same names are replaced, others are left).

Examples:
	ax task export -l team=data > data-tasks.yaml
	ax task export -d tasks/ && git -C tasks diff
	ax task export -o json -l team=data,env=prod
`

// taskExportCmd is ax task export.
type taskExportCmd struct {
	command.ClientBase
	sel         cli.MultiFlag
	format, dir string
}

// NewTaskExport makes ax task export.
func NewTaskExport(io *command.IO) command.Command {
	c := &taskExportCmd{}
	c.Init(io, "task export", exportUsage)
	cli.SelectorFlag(c.FS, &c.sel, "only tasks with these labels, k=v[,k=v] (repeatable)")
	c.FS.StringVar(&c.format, "o", "yaml", "yaml or json")
	c.FS.StringVar(&c.dir, "d", "", "write one file per task into this directory")
	return c
}

func (c *taskExportCmd) Run(ctx context.Context, args []string) error {
	if err := c.Parse(args); err != nil {
		return err
	}
	if c.FS.NArg() > 0 {
		return fmt.Errorf("task export: unexpected argument %q (select tasks with -l)", c.FS.Arg(0))
	}
	format, dir := c.format, c.dir
	if format != "yaml" && format != "json" {
		return fmt.Errorf("task export: -o wants yaml or json, got %q", format)
	}
	labels, err := taskfile.ParseSelector(c.sel)
	if err != nil {
		return fmt.Errorf("task export: %w", err)
	}
	cl, err := c.CF.Client()
	if err != nil {
		return err
	}
	tasks, err := taskfile.ListAll(ctx, cl, labels)
	if err != nil {
		return err
	}
	specs := make([]taskfile.Spec, 0, len(tasks))
	for i := range tasks {
		if f := taskfile.Redacted(&tasks[i]); f != "" {
			return fmt.Errorf("task export: task %s: %s is hidden from this token (%s): export with a writer token (-token or AX_TOKEN), or re-applying the export would overwrite the value",
				tasks[i].Name, f, visible.Redacted)
		}
		specs = append(specs, taskfile.SpecOf(&tasks[i]))
	}
	if dir == "" {
		return taskfile.Write(c.IO.Stdout, specs, format)
	}
	if err := taskfile.WriteDir(dir, specs, format); err != nil {
		return err
	}
	fmt.Fprintf(c.IO.Stderr, "exported %d tasks to %s\n", len(specs), dir)
	return nil
}
