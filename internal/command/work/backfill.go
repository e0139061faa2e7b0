package work

import (
	"context"
	"fmt"

	"github.com/ax-scheduler/ax/internal/command"

	"github.com/ax-scheduler/ax/internal/cli"
	"github.com/ax-scheduler/ax/model"
)

// backfillCmd is ax backfill.
type backfillCmd struct {
	command.ClientBase
	from, to cli.TimeFlag
}

// NewBackfill makes ax backfill.
func NewBackfill(io *command.IO) command.Command {
	c := &backfillCmd{}
	c.Init(io, "backfill", `
Usage: ax backfill NAME -from TIME -to TIME

Creates one instance (source "backfill") per fire time of the task in
[from, to], skipping times that already have an instance, so running it
twice is harmless. TIME is RFC 3339, a date (2006-01-02, midnight UTC), a
time in UTC (2006-01-02T15:04) or a duration ago (30m, 2d); to must be in
the past. At most 10,000 fire times per call.

Examples:
	ax backfill daily_report -from 2026-11-01 -to 2026-11-29
`)
	c.FS.Var(&c.from, "from", "first fire time (inclusive): "+cli.TimeForms)
	c.FS.Var(&c.to, "to", "last fire time (inclusive), the same forms")
	return c
}

func (c *backfillCmd) Run(ctx context.Context, args []string) error {
	name, err := c.ParseOne(args, "task name")
	if err != nil {
		return err
	}
	if c.from.Time.IsZero() || c.to.Time.IsZero() {
		return fmt.Errorf("backfill: -from and -to are required")
	}
	req := model.BackfillRequest{From: model.Time{Time: c.from.Time}, To: model.Time{Time: c.to.Time}}
	cl, err := c.CF.Client()
	if err != nil {
		return err
	}
	res, err := cl.Backfill(ctx, name, req)
	if err != nil {
		return err
	}
	for _, id := range res.Created {
		fmt.Fprintln(c.IO.Stdout, id)
	}
	fmt.Fprintf(c.IO.Stdout, "%d created, %d already had an instance\n", len(res.Created), res.Existing)
	return nil
}
