package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/ax-scheduler/ax/internal/cli"
	"github.com/ax-scheduler/ax/internal/follow"
	"github.com/ax-scheduler/ax/internal/view"
	"github.com/ax-scheduler/ax/model"
)

// instanceRerunCmd is ax instance rerun.
type instanceRerunCmd struct {
	clientBase
	wait waitFlags
	out  view.Output
}

func newInstanceRerunCmd(m *Main) command {
	c := &instanceRerunCmd{}
	c.init(m, "instance rerun", instanceUsage)
	c.wait.register(c.fs)
	c.out.Register(c.fs)
	return c
}

func (c *instanceRerunCmd) Run(ctx context.Context, args []string) error {
	cl, id, err := c.connectOne(args, &c.out, "instance id")
	if err != nil {
		return err
	}
	if err := c.wait.check(); err != nil {
		return fmt.Errorf("instance rerun: %w", err)
	}
	first := 0 // -log: the output of the attempts from the re-run's on
	if c.wait.log {
		in, err := cl.GetInstance(ctx, id)
		if err != nil {
			return err
		}
		first = in.Attempts + 1
	}
	res, err := cl.Rerun(ctx, id)
	if err == nil {
		err = c.out.Print(c.m.Stdout, res, func(w io.Writer) error { return view.Submitted(w, *res) })
	}
	if err != nil {
		return err
	}
	if !c.wait.wait {
		return nil
	}
	return follow.InstanceFrom(ctx, cl, res.ID, first, c.wait.log, c.m.Stdout, c.m.Stderr)
}

// taskRerunCmd is ax task rerun.
type taskRerunCmd struct {
	clientBase
	from, to cli.TimeFlag
	states   cli.ListFlag
	out      view.Output
}

func newTaskRerunCmd(m *Main) command {
	c := &taskRerunCmd{}
	c.init(m, "task rerun", taskUsage)
	c.fs.Var(&c.from, "from", "first fire time (inclusive): "+cli.TimeForms)
	c.fs.Var(&c.to, "to", "last fire time (inclusive), the same forms")
	c.fs.Var(&c.states, "state", "re-run instances in this state (repeatable or a comma list; default FAILED)")
	c.out.Register(c.fs)
	return c
}

func (c *taskRerunCmd) Run(ctx context.Context, args []string) error {
	cl, name, err := c.connectOne(args, &c.out, "task name")
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
	return c.out.Print(c.m.Stdout, res, func(w io.Writer) error {
		for _, s := range res.Instances {
			if err := view.Submitted(w, s); err != nil {
				return err
			}
		}
		_, err := fmt.Fprintf(w, "%d re-run\n", res.Rerun)
		return err
	})
}
