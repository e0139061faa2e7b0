package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/ax-scheduler/ax/internal/cli"
	"github.com/ax-scheduler/ax/internal/view"
	"github.com/ax-scheduler/ax/model"
)

// alertUsage is the help of ax alert and of its subcommands.
const alertUsage = `
Usage: ax alert <subcommand> [flags] [args]

Subcommands:
	list [-state firing|resolved] [-task T] [-rule R] [-limit N]          alerts, newest first
	silence (-task T | -rule R | -label k=v ...) (-for D | -until RFC3339) [-comment C]
	                                                                      mute notifications of matching alerts
	silences                                                              the silences in force
	unsilence ID                                                          remove a silence

A silenced alert is still recorded (shown with SILENCED) but not notified.
list and silences take -o table|json|yaml (-json: -o json).

Examples:
	ax alert list -state firing
	ax alert silence -task nightly-etl -for 2h -comment "planned maintenance"
	ax alert silence -rule misfire -label team=data -for 30m
	ax alert unsilence 3f2a9c0d1e4b5a6f
`

// alertListCmd is ax alert list.
type alertListCmd struct {
	clientBase
	q   model.AlertQuery
	out view.Output
}

func newAlertListCmd(m *Main) command {
	c := &alertListCmd{}
	c.init(m, "alert list", alertUsage)
	c.fs.StringVar(&c.q.State, "state", "", "firing or resolved (default both)")
	c.fs.StringVar(&c.q.Task, "task", "", "only alerts about this task")
	c.fs.StringVar(&c.q.Rule, "rule", "", "only alerts of this rule (e.g. instance_failed)")
	c.fs.IntVar(&c.q.Limit, "limit", 100, "at most this many")
	c.cf.registerStale(c.fs, false)
	c.out.Register(c.fs)
	return c
}

func (c *alertListCmd) Run(ctx context.Context, args []string) error {
	cl, err := c.connect(args, &c.out)
	if err != nil {
		return err
	}
	l, err := cl.ListAlerts(ctx, c.q)
	if err != nil {
		return err
	}
	return c.out.Print(c.m.Stdout, l, func(w io.Writer) error { return view.Alerts(w, l.Alerts) })
}

// alertSilenceCmd is ax alert silence.
type alertSilenceCmd struct {
	clientBase
	task, rule, comment, until string
	labels                     cli.MultiFlag
	forD                       time.Duration
}

func newAlertSilenceCmd(m *Main) command {
	c := &alertSilenceCmd{}
	c.init(m, "alert silence", alertUsage)
	c.fs.StringVar(&c.task, "task", "", "silence alerts about this task")
	c.fs.StringVar(&c.rule, "rule", "", "silence alerts of this rule")
	c.fs.Var(&c.labels, "label", "silence alerts about tasks with this label k=v (repeatable)")
	c.fs.DurationVar(&c.forD, "for", 0, "for how long (e.g. 2h)")
	c.fs.StringVar(&c.until, "until", "", "until this time, instead of -for: "+cli.DateForms)
	c.fs.StringVar(&c.comment, "comment", "", "why")
	return c
}

func (c *alertSilenceCmd) Run(ctx context.Context, args []string) error {
	cl, err := c.connect(args, nil)
	if err != nil {
		return err
	}
	req := model.SilenceRequest{Task: c.task, Rule: c.rule, For: model.Duration(c.forD), Comment: c.comment}
	for _, l := range c.labels {
		k, v, ok := strings.Cut(l, "=")
		if !ok {
			return fmt.Errorf("alert silence: -label %q: want k=v", l)
		}
		if req.Labels == nil {
			req.Labels = map[string]string{}
		}
		req.Labels[k] = v
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
	fmt.Fprintf(c.m.Stdout, "silence %s until %s\n", s.ID, s.Until.Format(time.RFC3339))
	return nil
}

// alertSilencesCmd is ax alert silences.
type alertSilencesCmd struct {
	clientBase
	out view.Output
}

func newAlertSilencesCmd(m *Main) command {
	c := &alertSilencesCmd{}
	c.init(m, "alert silences", alertUsage)
	c.cf.registerStale(c.fs, false)
	c.out.Register(c.fs)
	return c
}

func (c *alertSilencesCmd) Run(ctx context.Context, args []string) error {
	cl, err := c.connect(args, &c.out)
	if err != nil {
		return err
	}
	l, err := cl.ListSilences(ctx)
	if err != nil {
		return err
	}
	return c.out.Print(c.m.Stdout, l, func(w io.Writer) error { return view.Silences(w, l.Silences) })
}

// alertUnsilenceCmd is ax alert unsilence.
type alertUnsilenceCmd struct{ clientBase }

func newAlertUnsilenceCmd(m *Main) command {
	c := &alertUnsilenceCmd{}
	c.init(m, "alert unsilence", alertUsage)
	return c
}

func (c *alertUnsilenceCmd) Run(ctx context.Context, args []string) error {
	cl, id, err := c.connectOne(args, nil, "silence id")
	if err != nil {
		return err
	}
	if err := cl.DeleteSilence(ctx, id); err != nil {
		return err
	}
	fmt.Fprintf(c.m.Stdout, "removed silence %s\n", id)
	return nil
}
