package view

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ax-scheduler/ax/client"
	"github.com/ax-scheduler/ax/model"
)

// instancePage is the most instances one list request asks for (the
// API's bound).
const instancePage = 1000

// listInstances returns up to limit instances of f (every one when limit
// is 0), newest first, following the cursor from f.Cursor on, and the
// cursor of the rest ("" when there is none).
func listInstances(ctx context.Context, cl *client.Client, f model.InstanceFilter, limit int, opts ...client.ReadOption) ([]model.Instance, string, error) {
	var all []model.Instance
	for {
		f.Limit = instancePage
		if limit > 0 {
			f.Limit = min(limit-len(all), instancePage)
		}
		l, err := cl.ListInstances(ctx, f, opts...)
		if err != nil {
			return nil, "", err
		}
		all = append(all, l.Instances...)
		if l.NextCursor == "" || (limit > 0 && len(all) >= limit) {
			return all, l.NextCursor, nil
		}
		f.Cursor = l.NextCursor
	}
}

// InstanceList prints instances of f: a table (with a note on notes
// when more remain, unless notes is nil), or {instances, nextCursor} as
// JSON or YAML.
func InstanceList(ctx context.Context, cl *client.Client, f model.InstanceFilter, limit int, out Output, w, notes io.Writer, opts ...client.ReadOption) error {
	ins, next, err := listInstances(ctx, cl, f, limit, opts...)
	if err != nil {
		return err
	}
	l := &model.InstanceList{Instances: ins, NextCursor: next}
	if l.Instances == nil {
		l.Instances = []model.Instance{}
	}
	return out.Print(w, l, func(w io.Writer) error {
		if err := writeInstanceTable(w, ins, time.Now()); err != nil {
			return err
		}
		if next != "" && notes != nil {
			fmt.Fprintf(notes, "(%d shown; more with -cursor %s, or -limit 0 for all)\n", len(ins), next)
		}
		return nil
	})
}

// writeInstanceTable prints one row per instance.
func writeInstanceTable(w io.Writer, ins []model.Instance, now time.Time) error {
	tw := newTable(w)
	row(tw, "ID", "TASK", "SOURCE", "STATE", "SCHEDULED", "AGE", "ATTEMPT", "TOOK", "EXECUTOR")
	for _, in := range ins {
		row(tw, in.ID, in.Task, in.Source, in.State, fmtTime(in.ScheduledAt), age(in.ScheduledAt, now), in.Attempts,
			took(in, now), orDash(in.Executor))
	}
	if len(ins) == 0 {
		fmt.Fprintln(tw, "(no instances)")
	}
	return tw.Flush()
}

// took is how long an instance's latest attempt ran, or has run so far.
func took(in model.Instance, now time.Time) string {
	switch {
	case in.StartedAt.IsZero():
		return "-"
	case !in.FinishedAt.IsZero() && !in.FinishedAt.Before(in.StartedAt.Time):
		return Human(in.FinishedAt.Sub(in.StartedAt.Time))
	case in.State == model.StateRunning:
		return Human(now.Sub(in.StartedAt.Time)) + " so far"
	}
	return "-"
}

// Instance prints an instance for people: what it is and where it
// stands, its attempts and its events.
func Instance(w io.Writer, in *model.Instance) error {
	now := time.Now()
	tw := newTable(w)
	row(tw, "ID:", in.ID)
	canary := ""
	if in.Canary {
		canary = ", canary"
	}
	row(tw, "Task:", fmt.Sprintf("%s (version %d%s)", in.Task, in.TaskVersion, canary))
	row(tw, "Source:", in.Source)
	row(tw, "State:", in.State)
	if in.Why != "" {
		row(tw, "Why:", in.Why)
	}
	if in.Shard != nil {
		s := fmt.Sprintf("%d of %d of instance %s", in.Shard.Index, in.Shard.Total, in.Parent)
		if in.Shard.Executor != "" {
			s += ", broadcast to executor " + in.Shard.Executor
		}
		row(tw, "Shard:", s)
	}
	if in.Shards != nil {
		row(tw, "Shards:", shardCounts(in.Shards))
	}
	for _, t := range []struct {
		name string
		t    model.Time
	}{{"Created:", in.CreatedAt}, {"Scheduled:", in.ScheduledAt}, {"Fired:", in.FiredAt}, {"Started:", in.StartedAt}, {"Finished:", in.FinishedAt}, {"Retry at:", in.RetryAt}} {
		if !t.t.IsZero() {
			row(tw, t.name, fmtTime(t.t)+" ("+ago(t.t, now)+")")
		}
	}
	row(tw, "Attempts:", in.Attempts)
	if in.Executor != "" {
		row(tw, "Executor:", in.Executor)
	}
	if in.LastError != "" {
		row(tw, "Last error:", Ellipsis(in.LastError, 200))
	}
	if len(in.Params) > 0 {
		row(tw, "Params:", joinLabels(in.Params))
	}
	if len(in.Payload) > 0 {
		row(tw, "Payload:", Ellipsis(string(in.Payload), 200))
	}
	if in.IdempotencyKey != "" {
		row(tw, "Idempotency key:", in.IdempotencyKey)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(in.AttemptList) > 0 {
		fmt.Fprintln(w, "\nAttempts:")
		tw = newTable(indent(w))
		row(tw, "#", "EXECUTOR", "HOST", "STARTED", "TOOK", "OUTCOME", "EXIT", "ERROR")
		for _, a := range in.AttemptList {
			d, exit := "-", "-"
			if !a.EndedAt.IsZero() && !a.StartedAt.IsZero() {
				d = Human(a.EndedAt.Sub(a.StartedAt.Time))
			}
			if a.ExitCode != nil {
				exit = strconv.Itoa(*a.ExitCode)
			} else if a.HTTPStatus != 0 {
				exit = "HTTP " + strconv.Itoa(a.HTTPStatus)
			}
			row(tw, a.Number, a.Executor, orDash(a.Host), fmtTime(a.StartedAt), d, orDash(a.Outcome), exit, orDash(Ellipsis(a.Error, 80)))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if len(in.Events) > 0 {
		fmt.Fprintln(w, "\nEvents:")
		return Events(indent(w), in.Events)
	}
	return nil
}

// shardCounts words a shard summary: "10: 7 SUCCESS, 3 RUNNING".
func shardCounts(s *model.ShardSummary) string {
	var parts []string
	for _, st := range slices.Sorted(maps.Keys(s.ByState)) {
		parts = append(parts, fmt.Sprintf("%d %s", s.ByState[st], st))
	}
	if len(parts) == 0 {
		return strconv.Itoa(s.Total)
	}
	return strconv.Itoa(s.Total) + ": " + strings.Join(parts, ", ")
}

// shardGlyphs are the shard grid's marks, by state.
var shardGlyphs = map[string]string{
	model.StateSuccess: "#", model.StateRunning: ">", model.StateReady: ".", model.StateRetrying: "r",
	model.StateFailed: "X", model.StateTerminated: "T", model.StateCanceled: "-", model.StateSkipped: "-",
	model.StateBlocked: ".", model.StateWaitingApproval: "?",
}

// ShardGrid prints a sharded instance's shards: a grid of one mark per
// shard (50 a row, with its first index), the legend, then a table of
// the shards that did not succeed (all of them with all).
func ShardGrid(w io.Writer, l *model.ShardList, all bool) error {
	if l.Summary != nil {
		fmt.Fprintf(w, "Instance %s: %s shards\n", l.Instance, shardCounts(l.Summary))
	}
	if len(l.Shards) == 0 {
		_, err := fmt.Fprintln(w, "no shards yet: it fans out when it starts")
		return err
	}
	for i := 0; i < len(l.Shards); i += 50 {
		var b strings.Builder
		for _, s := range l.Shards[i:min(i+50, len(l.Shards))] {
			g := shardGlyphs[s.State]
			if g == "" {
				g = "?"
			}
			b.WriteString(g)
		}
		fmt.Fprintf(w, "%4d  %s\n", i, b.String())
	}
	fmt.Fprintln(w, "      # SUCCESS  > RUNNING  . READY/BLOCKED  r RETRYING  X FAILED  T TERMINATED  - CANCELED/SKIPPED  ? WAITING_APPROVAL")
	tw := newTable(w)
	row(tw, "SHARD", "ID", "STATE", "ATTEMPTS", "EXECUTOR", "LAST ERROR")
	n := 0
	for _, s := range l.Shards {
		if s.State == model.StateSuccess && !all {
			continue
		}
		n++
		idx := "-"
		if s.Shard != nil {
			idx = strconv.Itoa(s.Shard.Index)
		}
		ex := s.Executor
		if ex == "" && s.Shard != nil {
			ex = s.Shard.Executor
		}
		row(tw, idx, s.ID, s.State, s.Attempts, orDash(ex), orDash(Ellipsis(s.LastError, 80)))
	}
	if n == 0 {
		return nil
	}
	fmt.Fprintln(w)
	return tw.Flush()
}

// Submitted prints an instance a write answered with: its id, its state
// and its fire time, on one line (the id first, for cut -d' ' -f1).
func Submitted(w io.Writer, s model.Submitted) error {
	_, err := fmt.Fprintf(w, "%s %s %s\n", s.ID, s.State, s.ScheduledAt.UTC().Format(model.TimeLayout))
	return err
}
