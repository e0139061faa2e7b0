package work

import (
	"context"
	"fmt"
	"io"

	"github.com/ax-scheduler/ax/internal/command"

	"github.com/ax-scheduler/ax/internal/cli"
	"github.com/ax-scheduler/ax/internal/taskfile"
	"github.com/ax-scheduler/ax/internal/view"
	"github.com/ax-scheduler/ax/model"
)

// TaskUsage is the help of ax task and of its subcommands.
const TaskUsage = `
Usage: ax task <subcommand> [flags] [args]

Subcommands:
	apply -f FILE|DIR|-    create or update tasks from JSON or YAML files
	                       [-dry-run] [-prune -l k=v] (ax task apply -h)
	export [-l k=v] [-o yaml|json] [-d DIR]
	                       write the definitions as apply reads them
	list [-l k=v] [-paused true|false] [-w]
	                       name, trigger, next fire, last run, paused, labels
	get NAME               the definition, recent runs and next fire times
	pause NAME | resume NAME | delete NAME
	history NAME           every version: who, when, what
	events NAME            the task's events (misfires...)
	rollout NAME           its canary rollout: versions, split, progress
	promote NAME | abort NAME
	                       end its rollout: the canary becomes the task, or not
	rerun NAME -from TIME -to TIME [-state FAILED,...]
	                       run its finished instances of those fire times again

list, get, history, events, rollout and rerun take -o table|json|yaml (-json: -o json);
list -w redraws the table on every change until Ctrl-C. Reads are
linearizable (they see every acknowledged write, through any node);
-stale reads the node's own state instead, answered even without a
leader.

Examples:
	ax task apply -f daily_report.json
	ax task apply -f tasks/ -dry-run
	ax task export -l team=data -d tasks/
	echo '{"name":"hello","trigger":{"type":"cron","expression":"@every 10s"},"action":{"type":"shell","command":"echo hi"}}' | ax task apply -f -
	ax task list -l team=data
	ax task get daily_report -o yaml
	ax task history daily_report
	ax task rollout daily_report
	ax task rerun daily_report -from 2026-11-01 -to 2026-11-29 -state FAILED,TERMINATED
`

// taskListCmd is ax task list.
type taskListCmd struct {
	command.ClientBase
	labels cli.MultiFlag
	paused string
	watch  bool
	out    view.Output
}

// NewTaskList makes ax task list.
func NewTaskList(io *command.IO) command.Command {
	c := &taskListCmd{}
	c.Init(io, "task list", TaskUsage)
	cli.SelectorFlag(c.FS, &c.labels, "only tasks with these labels, k=v[,k=v] (repeatable)")
	c.FS.StringVar(&c.paused, "paused", "", "only paused (true) or active (false) tasks")
	c.FS.BoolVar(&c.watch, "w", false, "watch: redraw the table on every change, until Ctrl-C")
	c.CF.RegisterStale(c.FS, false)
	c.out.Register(c.FS)
	return c
}

func (c *taskListCmd) Run(ctx context.Context, args []string) error {
	cl, err := c.Connect(args, &c.out)
	if err != nil {
		return err
	}
	f, err := taskFilter(c.labels, c.paused)
	if err != nil {
		return err
	}
	if c.watch {
		return c.IO.Screen().Watch(ctx, cl, c.out, nil, func(ctx context.Context, w io.Writer) error { return view.TaskList(ctx, cl, f, c.out, w) })
	}
	return view.TaskList(ctx, cl, f, c.out, c.IO.Stdout)
}

// taskReadCmd is ax task get, history and events: a read of one task.
type taskReadCmd struct {
	command.ClientBase
	sub string
	out view.Output
}

// NewTaskRead makes ax task SUB for the subcommand sub.
func NewTaskRead(sub string) func(*command.IO) command.Command {
	return func(io *command.IO) command.Command {
		c := &taskReadCmd{sub: sub}
		c.Init(io, "task "+sub, TaskUsage)
		c.CF.RegisterStale(c.FS, true)
		c.out.Register(c.FS)
		return c
	}
}

func (c *taskReadCmd) Run(ctx context.Context, args []string) error {
	cl, name, err := c.ConnectOne(args, &c.out, "task name")
	if err != nil {
		return err
	}
	w := c.IO.Stdout
	switch c.sub {
	case "get":
		t, err := cl.GetTask(ctx, name)
		if err != nil {
			return err
		}
		return c.out.Print(w, t, func(w io.Writer) error { return view.Task(ctx, cl, w, t) })
	case "rollout":
		ro, err := cl.Rollout(ctx, name)
		if err != nil {
			return err
		}
		return c.out.Print(w, ro, func(w io.Writer) error { return view.Rollout(w, ro) })
	case "events":
		ev, err := cl.TaskEvents(ctx, name)
		if err != nil {
			return err
		}
		return c.out.Print(w, ev, func(w io.Writer) error { return view.Events(w, ev.Events) })
	default: // history
		h, err := cl.TaskHistory(ctx, name)
		if err != nil {
			return err
		}
		return c.out.Print(w, h, func(w io.Writer) error { return view.History(w, h) })
	}
}

// taskWriteCmd is ax task pause, resume, delete, promote and abort.
type taskWriteCmd struct {
	command.ClientBase
	sub string
}

// NewTaskWrite makes ax task SUB for the subcommand sub.
func NewTaskWrite(sub string) func(*command.IO) command.Command {
	return func(io *command.IO) command.Command {
		c := &taskWriteCmd{sub: sub}
		c.Init(io, "task "+sub, TaskUsage)
		return c
	}
}

func (c *taskWriteCmd) Run(ctx context.Context, args []string) error {
	cl, name, err := c.ConnectOne(args, nil, "task name")
	if err != nil {
		return err
	}
	var res *model.WriteResult
	switch c.sub {
	case "pause":
		res, err = cl.PauseTask(ctx, name)
	case "resume":
		res, err = cl.ResumeTask(ctx, name)
	case "promote":
		res, err = cl.PromoteRollout(ctx, name)
	case "abort":
		res, err = cl.AbortRollout(ctx, name)
	default: // delete
		res, err = cl.DeleteTask(ctx, name)
	}
	if err != nil {
		return err
	}
	done := map[string]string{"promote": "promoted", "abort": "rollout aborted"}[c.sub]
	if done == "" {
		done = c.sub + "d"
	}
	fmt.Fprintf(c.IO.Stdout, "%s %s (version %d)\n", name, done, res.Version)
	return nil
}

// taskFilter reads task list's -l and -paused.
func taskFilter(labels cli.MultiFlag, paused string) (model.TaskFilter, error) {
	f := model.TaskFilter{}
	var err error
	if f.Labels, err = taskfile.ParseSelector(labels); err != nil {
		return f, fmt.Errorf("task list: %w", err)
	}
	switch paused {
	case "":
	case "true", "false":
		b := paused == "true"
		f.Paused = &b
	default:
		return f, fmt.Errorf("task list: -paused wants true or false")
	}
	return f, nil
}
