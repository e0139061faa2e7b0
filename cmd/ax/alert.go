package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/ax-scheduler/ax/model"
)

type alertCommand struct{}

func (*alertCommand) Usage() string {
	return `
Usage: ax alert <subcommand> [flags] [args]

Subcommands:
	list [-state firing|resolved] [-task T] [-rule R] [-limit N] [-json]   alerts, newest first
	silence (-task T | -rule R | -label k=v ...) (-for D | -until RFC3339) [-comment C]
	                                                                      mute notifications of matching alerts
	silences [-json]                                                      the silences in force
	unsilence ID                                                          remove a silence

A silenced alert is still recorded (shown with SILENCED) but not notified.

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
		asJSON                            bool
	)
	switch sub {
	case "list":
		fs.StringVar(&state, "state", "", "firing or resolved (default both)")
		fs.StringVar(&task, "task", "", "only alerts about this task")
		fs.StringVar(&rule, "rule", "", "only alerts of this rule (e.g. instance_failed)")
		fs.IntVar(&limit, "limit", 100, "at most this many")
		fs.BoolVar(&asJSON, "json", false, "print JSON")
	case "silence":
		fs.StringVar(&task, "task", "", "silence alerts about this task")
		fs.StringVar(&rule, "rule", "", "silence alerts of this rule")
		fs.Var(&labels, "label", "silence alerts about tasks with this label k=v (repeatable)")
		fs.DurationVar(&forD, "for", 0, "for how long (e.g. 2h)")
		fs.StringVar(&until, "until", "", "until this time (RFC 3339), instead of -for")
		fs.StringVar(&comment, "comment", "", "why")
	case "silences":
		fs.BoolVar(&asJSON, "json", false, "print JSON")
	case "unsilence":
	default:
		return fmt.Errorf("alert: unknown subcommand %q", sub)
	}
	if err := parseInterspersed(fs, args); err != nil {
		return err
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
		if asJSON {
			return printJSON(l)
		}
		tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "STATE\tRULE\tSEVERITY\tSUBJECT\tCOUNT\tFIRST SEEN\tLAST SEEN\tSUMMARY")
		for _, a := range l.Alerts {
			st := a.State
			if a.Silenced {
				st += " (SILENCED)"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\n", st, a.Rule, a.Severity, subject(a.Subject), a.Count,
				a.FirstSeen.Format(time.RFC3339), a.LastSeen.Format(time.RFC3339), a.Summary)
		}
		return tw.Flush()
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
			t, err := time.Parse(time.RFC3339, until)
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
		if asJSON {
			return printJSON(l)
		}
		tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tTASK\tRULE\tLABELS\tUNTIL\tBY\tCOMMENT")
		for _, s := range l.Silences {
			var ls []string
			for k, v := range s.Labels {
				ls = append(ls, k+"="+v)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", s.ID, s.Task, s.Rule, strings.Join(ls, ","), s.Until.Format(time.RFC3339), s.By, s.Comment)
		}
		return tw.Flush()
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
