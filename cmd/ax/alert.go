package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/ax-scheduler/ax/model"
)

type alertCommand struct{}

func (*alertCommand) Usage() string {
	return `
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
}

func (c *alertCommand) Run(ctx context.Context, args []string) error {
	sub, args, fs, cf, err := subcommand("alert", c.Usage(), args)
	if err != nil {
		return err
	}
	var (
		state, task, rule, comment, until string
		labels                            multiFlag
		limit                             int
		forD                              time.Duration
		out                               output
	)
	switch sub {
	case "list":
		fs.StringVar(&state, "state", "", "firing or resolved (default both)")
		fs.StringVar(&task, "task", "", "only alerts about this task")
		fs.StringVar(&rule, "rule", "", "only alerts of this rule (e.g. instance_failed)")
		fs.IntVar(&limit, "limit", 100, "at most this many")
		cf.registerStale(fs, false)
		out.register(fs)
	case "silence":
		fs.StringVar(&task, "task", "", "silence alerts about this task")
		fs.StringVar(&rule, "rule", "", "silence alerts of this rule")
		fs.Var(&labels, "label", "silence alerts about tasks with this label k=v (repeatable)")
		fs.DurationVar(&forD, "for", 0, "for how long (e.g. 2h)")
		fs.StringVar(&until, "until", "", "until this time, instead of -for: "+dateForms)
		fs.StringVar(&comment, "comment", "", "why")
	case "silences":
		cf.registerStale(fs, false)
		out.register(fs)
	case "unsilence":
	default:
		return unknownSub("alert", sub)
	}
	if err := parseInterspersed(fs, args); err != nil {
		return err
	}
	if err := out.check(); err != nil {
		return fmt.Errorf("alert %s: %w", sub, err)
	}
	cl, err := cf.client()
	if err != nil {
		return err
	}
	switch sub {
	case "list":
		l, err := cl.ListAlerts(ctx, model.AlertQuery{State: state, Task: task, Rule: rule, Limit: limit})
		if err != nil {
			return err
		}
		return out.print(os.Stdout, l, func(w io.Writer) error {
			tw := newTable(w)
			row(tw, "STATE", "RULE", "SEVERITY", "SUBJECT", "COUNT", "FIRST SEEN", "LAST SEEN", "SUMMARY")
			for _, a := range l.Alerts {
				st := a.State
				if a.Silenced {
					st += " (SILENCED)"
				}
				row(tw, st, a.Rule, a.Severity, subject(a.Subject), a.Count, fmtTime(a.FirstSeen), fmtTime(a.LastSeen), a.Summary)
			}
			return tw.Flush()
		})
	case "silence":
		req := model.SilenceRequest{Task: task, Rule: rule, For: model.Duration(forD), Comment: comment}
		for _, l := range labels {
			k, v, ok := strings.Cut(l, "=")
			if !ok {
				return fmt.Errorf("alert silence: -label %q: want k=v", l)
			}
			if req.Labels == nil {
				req.Labels = map[string]string{}
			}
			req.Labels[k] = v
		}
		if until != "" {
			t, err := parseDate(until)
			if err != nil {
				return fmt.Errorf("alert silence: -until: %w", err)
			}
			req.Until = model.Time{Time: t}
		}
		s, err := cl.PutSilence(ctx, req)
		if err != nil {
			return err
		}
		fmt.Printf("silence %s until %s\n", s.ID, s.Until.Format(time.RFC3339))
		return nil
	case "silences":
		l, err := cl.ListSilences(ctx)
		if err != nil {
			return err
		}
		return out.print(os.Stdout, l, func(w io.Writer) error {
			tw := newTable(w)
			row(tw, "ID", "TASK", "RULE", "LABELS", "UNTIL", "BY", "COMMENT")
			for _, s := range l.Silences {
				row(tw, s.ID, orDash(s.Task), orDash(s.Rule), orDash(joinLabels(s.Labels)), fmtTime(s.Until), orDash(s.By), s.Comment)
			}
			return tw.Flush()
		})
	default: // unsilence
		if fs.NArg() != 1 {
			return fmt.Errorf("alert unsilence: want exactly one silence id")
		}
		if err := cl.DeleteSilence(ctx, fs.Arg(0)); err != nil {
			return err
		}
		fmt.Printf("removed silence %s\n", fs.Arg(0))
		return nil
	}
}

// subject words what an alert is about.
func subject(s model.AlertSubject) string {
	var parts []string
	for _, p := range [][2]string{{"task", s.Task}, {"instance", s.Instance}, {"node", s.Node}, {"executor", s.Executor}} {
		if p[1] != "" {
			parts = append(parts, p[0]+"="+p[1])
		}
	}
	return strings.Join(parts, " ")
}
