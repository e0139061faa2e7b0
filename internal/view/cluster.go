package view

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/ax-scheduler/ax/client"
	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/model/live"
	"github.com/ax-scheduler/ax/model/member"
)

// StatusReport is what ax status shows, as the API answers it.
type StatusReport struct {
	Overview *live.Overview `json:"overview"`
	Upcoming *live.Upcoming `json:"upcoming"`
}

// Status prints the overview section by section.
func Status(w io.Writer, r *StatusReport, now time.Time) error {
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
		if err := members(w, st.Nodes); err != nil {
			return err
		}
	}
	fmt.Fprintln(w)
	if o.ExecutorsError != "" {
		fmt.Fprintf(w, "Executors: unknown (%s)\n", o.ExecutorsError)
	} else if err := executors(w, o.Executors, now); err != nil {
		return err
	}
	c := o.Counts
	fmt.Fprintf(w, "\nInstances: SCHEDULED %d, READY %d, RUNNING %d, RETRYING %d, BLOCKED %d, WAITING_APPROVAL %d\n",
		c.Scheduled, c.Ready, c.Running, c.Retrying, c.Blocked, c.WaitingApproval)
	fmt.Fprintf(w, "Tasks: %d (%d paused)\n", o.Tasks.Total, o.Tasks.Paused)
	for _, p := range []struct {
		name string
		o    live.Outcomes
	}{{"Last hour", o.LastHour}, {"Last 24h", o.LastDay}} {
		fmt.Fprintf(w, "%s: %d fired; SUCCESS %d, FAILED %d, TERMINATED %d, CANCELED %d, SKIPPED %d\n",
			p.name, p.o.Fired, p.o.Success, p.o.Failed, p.o.Terminated, p.o.Canceled, p.o.Skipped)
	}
	var failures []live.RecentFailure
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
			row(tw, f.ID, f.Task, f.State, ago(f.FinishedAt, now), f.Attempts, orDash(Ellipsis(f.LastError, 60)))
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
			row(tw, sev, a.Rule, subject(a.Subject), age(a.FirstSeen, now), Ellipsis(a.Summary, 60))
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

// ClusterStatus prints the members, then the executors the leader knows.
func ClusterStatus(ctx context.Context, cl *client.Client, out Output, w io.Writer) error {
	st, err := cl.Cluster(ctx)
	if err != nil {
		return err
	}
	return out.Print(w, st, func(w io.Writer) error {
		if err := members(w, st.Nodes); err != nil {
			return err
		}
		fmt.Fprintf(w, "term %d, commit index %d, applied index %d, protocol %d\n", st.Term, st.CommitIndex, st.AppliedIndex, st.Protocol)
		if st.LeaderHTTP == "" {
			fmt.Fprintln(w, "no leader: executors unknown")
			return nil
		}
		// Only the leader knows the executors; any node asks it.
		el, err := cl.Executors(ctx)
		if err != nil {
			return fmt.Errorf("executors: %w", err)
		}
		fmt.Fprintln(w)
		return executors(w, el.Executors, time.Now())
	})
}

// executors prints the executors the leader heard from.
func executors(w io.Writer, execs []model.ExecutorStatus, now time.Time) error {
	if len(execs) == 0 {
		fmt.Fprintln(w, "no executors heard from in the last minute")
		return nil
	}
	tw := newTable(w)
	row(tw, "EXECUTOR", "HOST", "LABELS", "RUNNING", "FREE", "LAST SEEN")
	for _, e := range execs {
		row(tw, e.Name, orDash(e.Host), orDash(joinLabels(e.Labels)), e.Running, e.Free, ago(e.LastSeen, now))
	}
	return tw.Flush()
}

// members prints the members as a table, then what is wrong with any
// of them.
func members(w io.Writer, nodes []model.Node) error {
	tw := newTable(w)
	fmt.Fprintln(tw, "NODE\tRAFT\tHTTP\tSUFFRAGE\tROLE\tSTATUS\tLAST CONTACT\tLAG\tVERSION\tPROTO")
	var problems []string
	for _, n := range nodes {
		role, contact, lag, version := orDash(n.Role), "-", "?", orDash(n.Version)
		switch {
		case n.Status == "unreachable" && n.RaftContact > 0:
			contact = n.RaftContact.Std().String() + " (raft)"
		case n.Status == "unreachable":
			contact = "?"
		case n.Role != member.RoleLeader:
			contact = n.LastContact.Std().String()
		}
		if n.Lag != nil {
			lag = strconv.FormatUint(*n.Lag, 10)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\n", n.ID, n.RaftAddr, n.HTTPAddr, n.Suffrage, role,
			orDash(n.Status), contact, lag, version, max(n.Proto, 1))
		if n.Problem != "" {
			problems = append(problems, fmt.Sprintf("%s %s: %s", n.ID, n.Status, n.Problem))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, p := range problems {
		fmt.Fprintln(w, p)
	}
	return nil
}
