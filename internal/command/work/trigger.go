package work

import (
	"context"
	"fmt"

	"github.com/ax-scheduler/ax/internal/command"

	"github.com/ax-scheduler/ax/internal/cli"
	"github.com/ax-scheduler/ax/model"
)

// triggerCmd is ax trigger.
type triggerCmd struct {
	command.ClientBase
	params cli.MultiFlag
	key    string
	wait   command.WaitFlags
}

// NewTrigger makes ax trigger.
func NewTrigger(io *command.IO) command.Command {
	c := &triggerCmd{}
	c.Init(io, "trigger", `
Usage: ax trigger NAME [-p key=value]... [-key IDEMPOTENCY_KEY] [-wait [-log]]

Runs a task now (an instance with source "api") and prints its id and
state. With -wait it follows the instance to its end (through leader
changes) and exits with its outcome: 0 SUCCESS, 1 FAILED, 3 TERMINATED,
4 CANCELED or SKIPPED; -log prints its output meanwhile.

Examples:
	ax trigger daily_report -p date=2026-11-29
	ax trigger daily_report -wait -log && echo done
`)
	c.FS.Var(&c.params, "p", "parameter key=value (repeatable)")
	c.FS.StringVar(&c.key, "key", "", "idempotency key: a repeated trigger with it returns the first instance")
	c.wait.Register(c.FS)
	return c
}

func (c *triggerCmd) Run(ctx context.Context, args []string) error {
	name, err := c.ParseOne(args, "task name")
	if err != nil {
		return err
	}
	if err := c.wait.Check(); err != nil {
		return fmt.Errorf("trigger: %w", err)
	}
	req := model.TriggerRequest{IdempotencyKey: c.key}
	if req.Params, err = c.params.Pairs("trigger: -p"); err != nil {
		return err
	}
	cl, err := c.CF.Client()
	if err != nil {
		return err
	}
	res, err := cl.Trigger(ctx, name, req)
	if err != nil {
		return err
	}
	fmt.Fprintf(c.IO.Stdout, "%s %s\n", res.ID, res.State)
	return c.wait.Follow(ctx, c.IO, cl, res.ID)
}
