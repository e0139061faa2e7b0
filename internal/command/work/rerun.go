package work

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/ax-scheduler/ax/internal/command"

	"github.com/ax-scheduler/ax/internal/cli"
	"github.com/ax-scheduler/ax/internal/follow"
	"github.com/ax-scheduler/ax/internal/view"
	"github.com/ax-scheduler/ax/model"
)

// instanceRerunCmd is ax instance rerun.
type instanceRerunCmd struct {
	command.ClientBase
	wait command.WaitFlags
	out  view.Output
}

// NewInstanceRerun makes ax instance rerun.
func NewInstanceRerun(io *command.IO) command.Command {
	c := &instanceRerunCmd{}
	c.Init(io, "instance rerun", InstanceUsage)
	c.wait.Register(c.FS)
	c.out.Register(c.FS)
	return c
}

func (c *instanceRerunCmd) Run(ctx context.Context, args []string) error {
	cl, id, err := c.ConnectOne(args, &c.out, "instance id")
	if err != nil {
		return err
	}
	if err := c.wait.Check(); err != nil {
		return fmt.Errorf("instance rerun: %w", err)
	}
	first := 0 // -log: the output of the attempts from the re-run's on
	if c.wait.Log {
		in, err := cl.GetInstance(ctx, id)
		if err != nil {
			return err
		}
		first = in.Attempts + 1
	}
	res, err := cl.Rerun(ctx, id)
	if err == nil {
		err = c.out.Print(c.IO.Stdout, res, func(w io.Writer) error { return view.Submitted(w, *res) })
	}
	if err != nil {
		return err
	}
	if !c.wait.Wait {
		return nil
	}
	return follow.InstanceFrom(ctx, cl, res.ID, first, c.wait.Log, c.IO.Stdout, c.IO.Stderr)
}

// taskRerunCmd is ax task rerun.
type taskRerunCmd struct {
	command.ClientBase
	from, to cli.TimeFlag
	states   cli.ListFlag
	out      view.Output
}

// NewTaskRerun makes ax task rerun.
func NewTaskRerun(io *command.IO) command.Command {
	c := &taskRerunCmd{}
	c.Init(io, "task rerun", TaskUsage)
	c.FS.Var(&c.from, "from", "first fire time (inclusive): "+cli.TimeForms)
	c.FS.Var(&c.to, "to", "last fire time (inclusive), the same forms")
	c.FS.Var(&c.states, "state", "re-run instances in this state (repeatable or a comma list; default FAILED)")
	c.out.Register(c.FS)
	return c
}

func (c *taskRerunCmd) Run(ctx context.Context, args []string) error {
	cl, name, err := c.ConnectOne(args, &c.out, "task name")
	if err != nil {
		return err
	}
	req := model.RerunRequest{From: model.Time{Time: c.from.Time}, To: model.Time{Time: c.to.Time}}
	for _, s := range c.states {
		req.States = append(req.States, strings.ToUpper(s))
	}
	res, err := cl.RerunTask(ctx, name, req)
	if err != nil {
		return err
	}
	return c.out.Print(c.IO.Stdout, res, func(w io.Writer) error {
		for _, s := range res.Instances {
			if err := view.Submitted(w, s); err != nil {
				return err
			}
		}
		_, err := fmt.Fprintf(w, "%d re-run\n", res.Rerun)
		return err
	})
}
