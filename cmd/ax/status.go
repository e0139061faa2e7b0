package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/ax-scheduler/ax/client"
	"github.com/ax-scheduler/ax/model"
)

// statusCmd is ax status.
type statusCmd struct {
	clientBase
	out   output
	fires int
}

func newStatusCmd(m *Main) command {
	c := &statusCmd{}
	c.init(m, "status", `
Usage: ax status [-o table|json|yaml] [-fires N] [-stale]

The cluster at a glance, from GET /v1/overview and GET /v1/upcoming: the
leader and the members with their health and version, the executors
(slots, labels, last heartbeat), unfinished instances by state, fires
and outcomes in the last hour and day, the latest failures, the firing
alerts and the next fire times (within 24h). -o json|yaml prints
{"overview": ..., "upcoming": ...} as the API answers them. Without a
leader it fails after about a second: -stale shows what the node itself
knows (its state as applied, the members as it sees them).

Examples:
	ax status
	ax status -addr 10.0.0.1:7070,10.0.0.2:7070 -o yaml
	ax status -stale -addr 10.0.0.2:7070
`)
	c.cf.registerStale(c.fs, false)
	c.out.register(c.fs)
	c.fs.IntVar(&c.fires, "fires", 10, "how many of the next fire times to show (1 to 5000)")
	return c
}

// statusReport is what ax status shows, as the API answers it.
type statusReport struct {
	Overview *model.Overview `json:"overview"`
	Upcoming *model.Upcoming `json:"upcoming"`
}

func (c *statusCmd) Run(ctx context.Context, args []string) error {
	cl, err := c.connect(args, &c.out)
	if err != nil {
		return err
	}
	if c.fs.NArg() > 0 {
		return fmt.Errorf("status: unexpected arguments %q", c.fs.Args())
	}
	var r statusReport
	if err := cl.Do(ctx, client.Request{Method: http.MethodGet, Path: "/v1/overview"}, &r.Overview); err != nil {
		return err
	}
	q := url.Values{"within": {"24h"}, "limit": {strconv.Itoa(c.fires)}}
	if err := cl.Do(ctx, client.Request{Method: http.MethodGet, Path: "/v1/upcoming", Query: q}, &r.Upcoming); err != nil {
		return err
	}
	return c.out.print(c.m.Stdout, r, func(w io.Writer) error { return writeStatus(w, &r, time.Now()) })
}

// writeStatus prints the overview section by section.
func writeStatus(w io.Writer, r *statusReport, now time.Time) error {
	o := r.Overview
	switch st := o.Cluster; {
	case st == nil:
		fmt.Fprintf(w, "Cluster: unknown (%s)\n", o.ClusterError)
	default:
		leader := "none (no quorum?)"
		if st.Leader != "" {
			leader = st.Leader
			if st.LeaderHTTP != "" {
				leader += " at " + st.LeaderHTTP
			}
		}
		fmt.Fprintf(w, "Cluster: leader %s, %d member(s), term %d, protocol %d\n\n", leader, len(st.Nodes), st.Term, st.Protocol)
		if err := writeMembers(w, st.Nodes); err != nil {
			return err
		}
	}
	fmt.Fprintln(w)
	if o.ExecutorsError != "" {
		fmt.Fprintf(w, "Executors: unknown (%s)\n", o.ExecutorsError)
	} else if err := writeExecutors(w, o.Executors, now); err != nil {
		return err
	}
	c := o.Counts
	fmt.Fprintf(w, "\nInstances: SCHEDULED %d, READY %d, RUNNING %d, RETRYING %d, BLOCKED %d, WAITING_APPROVAL %d\n",
		c.Scheduled, c.Ready, c.Running, c.Retrying, c.Blocked, c.WaitingApproval)
	fmt.Fprintf(w, "Tasks: %d (%d paused)\n", o.Tasks.Total, o.Tasks.Paused)
	for _, p := range []struct {
		name string
		o    model.Outcomes
	}{{"Last hour", o.LastHour}, {"Last 24h", o.LastDay}} {
		fmt.Fprintf(w, "%s: %d fired; SUCCESS %d, FAILED %d, TERMINATED %d, CANCELED %d, SKIPPED %d\n",
			p.name, p.o.Fired, p.o.Success, p.o.Failed, p.o.Terminated, p.o.Canceled, p.o.Skipped)
	}
	var failures []model.RecentFailure
	for _, f := range o.RecentFailures {
		if now.Sub(f.FinishedAt.Time) <= 24*time.Hour && len(failures) < 5 {
			failures = append(failures, f)
		}
	}
	if len(failures) > 0 {
		fmt.Fprintln(w, "\nLatest failures (24h):")
		tw := newTable(indent(w))
		row(tw, "ID", "TASK", "STATE", "FINISHED", "ATTEMPTS", "ERROR")
		for _, f := range failures {
			row(tw, f.ID, f.Task, f.State, ago(f.FinishedAt, now), f.Attempts, orDash(ellipsis(f.LastError, 60)))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	fmt.Fprintf(w, "\nAlerts: %d firing\n", o.AlertsFiring)
	if len(o.Alerts) > 0 {
		tw := newTable(indent(w))
		row(tw, "SEVERITY", "RULE", "SUBJECT", "SINCE", "SUMMARY")
		for _, a := range o.Alerts {
			sev := a.Severity
			if a.Silenced {
				sev += " (silenced)"
			}
			row(tw, sev, a.Rule, subject(a.Subject), age(a.FirstSeen, now), ellipsis(a.Summary, 60))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	fmt.Fprintln(w, "\nNext fires (24h):")
	if r.Upcoming == nil || len(r.Upcoming.Fires) == 0 {
		fmt.Fprintln(w, "  (none)")
		return nil
	}
	tw := newTable(indent(w))
	for _, f := range r.Upcoming.Fires {
		row(tw, fmtTime(f.Time), age(f.Time, now), f.Task)
	}
	if r.Upcoming.Truncated {
		fmt.Fprintln(tw, "...")
	}
	return tw.Flush()
}
