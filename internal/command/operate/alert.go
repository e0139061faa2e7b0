package operate

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/ax-scheduler/ax/internal/command"

	"github.com/ax-scheduler/ax/internal/cli"
	"github.com/ax-scheduler/ax/internal/taskfile"
	"github.com/ax-scheduler/ax/internal/view"
	"github.com/ax-scheduler/ax/model"
)

// AlertUsage is the help of ax alert and of its subcommands.
const AlertUsage = `
Usage: ax alert <subcommand> [flags] [args]

Subcommands:
	list [-state firing|resolved] [-task T] [-rule R] [-limit N]          alerts, newest first
	silence (-task T | -rule R | -l k=v ...) (-for D | -until RFC3339) [-comment C]
	                                                                      mute notifications of matching alerts
	silences                                                              the silences in force
	unsilence ID                                                          remove a silence

A silenced alert is still recorded (shown with SILENCED) but not notified.
list and silences take -o table|json|yaml (-json: -o json).

Examples:
	ax alert list -state firing
	ax alert silence -task nightly-etl -for 2h -comment "planned maintenance"
	ax alert silence -rule misfire -l team=data -for 30m
	ax alert unsilence 3f2a9c0d1e4b5a6f
`

// alertListCmd is ax alert list.
type alertListCmd struct {
	command.ClientBase
	q   model.AlertQuery
	out view.Output
}

// NewAlertList makes ax alert list.
func NewAlertList(io *command.IO) command.Command {
	c := &alertListCmd{}
	c.Init(io, "alert list", AlertUsage)
	c.FS.StringVar(&c.q.State, "state", "", "firing or resolved (default both)")
	c.FS.StringVar(&c.q.Task, "task", "", "only alerts about this task")
	c.FS.StringVar(&c.q.Rule, "rule", "", "only alerts of this rule (e.g. instance_failed)")
	c.FS.IntVar(&c.q.Limit, "limit", 100, "at most this many")
	c.CF.RegisterStale(c.FS, false)
	c.out.Register(c.FS)
	return c
}

func (c *alertListCmd) Run(ctx context.Context, args []string) error {
	cl, err := c.Connect(args, &c.out)
	if err != nil {
		return err
	}
	l, err := cl.ListAlerts(ctx, c.q)
	if err != nil {
		return err
	}
	return c.out.Print(c.IO.Stdout, l, func(w io.Writer) error { return view.Alerts(w, l.Alerts) })
}

// alertSilenceCmd is ax alert silence.
type alertSilenceCmd struct {
	command.ClientBase
	task, rule, comment, until string
	labels                     cli.MultiFlag
	forD                       time.Duration
}

// NewAlertSilence makes ax alert silence.
func NewAlertSilence(io *command.IO) command.Command {
	c := &alertSilenceCmd{}
	c.Init(io, "alert silence", AlertUsage)
	c.FS.StringVar(&c.task, "task", "", "silence alerts about this task")
	c.FS.StringVar(&c.rule, "rule", "", "silence alerts of this rule")
	cli.SelectorFlag(c.FS, &c.labels, "silence alerts about tasks with these labels, k=v[,k=v] (repeatable)")
	c.FS.DurationVar(&c.forD, "for", 0, "for how long (e.g. 2h)")
	c.FS.StringVar(&c.until, "until", "", "until this time, instead of -for: "+cli.DateForms)
	c.FS.StringVar(&c.comment, "comment", "", "why")
	return c
}

func (c *alertSilenceCmd) Run(ctx context.Context, args []string) error {
	cl, err := c.Connect(args, nil)
	if err != nil {
		return err
	}
	req := model.SilenceRequest{Task: c.task, Rule: c.rule, For: model.Duration(c.forD), Comment: c.comment}
	if req.Labels, err = taskfile.ParseSelector(c.labels); err != nil {
		return fmt.Errorf("alert silence: %w", err)
	}
	if c.until != "" {
		t, err := cli.ParseDate(c.until)
		if err != nil {
			return fmt.Errorf("alert silence: -until: %w", err)
		}
		req.Until = model.Time{Time: t}
	}
	s, err := cl.PutSilence(ctx, req)
	if err != nil {
		return err
	}
	fmt.Fprintf(c.IO.Stdout, "silence %s until %s\n", s.ID, s.Until.Format(time.RFC3339))
	return nil
}

// alertSilencesCmd is ax alert silences.
type alertSilencesCmd struct {
	command.ClientBase
	out view.Output
}

// NewAlertSilences makes ax alert silences.
func NewAlertSilences(io *command.IO) command.Command {
	c := &alertSilencesCmd{}
	c.Init(io, "alert silences", AlertUsage)
	c.CF.RegisterStale(c.FS, false)
	c.out.Register(c.FS)
	return c
}

func (c *alertSilencesCmd) Run(ctx context.Context, args []string) error {
	cl, err := c.Connect(args, &c.out)
	if err != nil {
		return err
	}
	l, err := cl.ListSilences(ctx)
	if err != nil {
		return err
	}
	return c.out.Print(c.IO.Stdout, l, func(w io.Writer) error { return view.Silences(w, l.Silences) })
}

// alertUnsilenceCmd is ax alert unsilence.
type alertUnsilenceCmd struct{ command.ClientBase }

// NewAlertUnsilence makes ax alert unsilence.
func NewAlertUnsilence(io *command.IO) command.Command {
	c := &alertUnsilenceCmd{}
	c.Init(io, "alert unsilence", AlertUsage)
	return c
}

func (c *alertUnsilenceCmd) Run(ctx context.Context, args []string) error {
	cl, id, err := c.ConnectOne(args, nil, "silence id")
	if err != nil {
		return err
	}
	if err := cl.DeleteSilence(ctx, id); err != nil {
		return err
	}
	fmt.Fprintf(c.IO.Stdout, "removed silence %s\n", id)
	return nil
}
