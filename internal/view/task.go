package view

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/ax-scheduler/ax/client"
	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/model/live"
)

// listTaskSummaries returns every task of f with its summary (next fire,
// last run), following the cursor.
func listTaskSummaries(ctx context.Context, cl *client.Client, f model.TaskFilter) ([]live.SummarizedTask, error) {
	q := url.Values{"summary": {"true"}, "runs": {"1"}, "limit": {"1000"}}
	for k, v := range f.Labels {
		q.Add("label", k+"="+v)
	}
	if f.Paused != nil {
		q.Set("paused", strconv.FormatBool(*f.Paused))
	}
	var all []live.SummarizedTask
	for {
		var page live.TaskSummaryList
		if err := cl.Do(ctx, client.Request{Method: http.MethodGet, Path: "/v1/tasks", Query: q}, &page); err != nil {
			return nil, err
		}
		all = append(all, page.Tasks...)
		if page.NextCursor == "" {
			return all, nil
		}
		q.Set("cursor", page.NextCursor)
	}
}

// TaskList prints the tasks of f: a table, or the task definitions as
// JSON or YAML (as task apply takes them).
func TaskList(ctx context.Context, cl *client.Client, f model.TaskFilter, out Output, w io.Writer) error {
	all, err := listTaskSummaries(ctx, cl, f)
	if err != nil {
		return err
	}
	tasks := make([]model.Task, len(all))
	for i := range all {
		tasks[i] = all[i].Task
	}
	return out.Print(w, tasks, func(w io.Writer) error { return writeTaskTable(w, all, time.Now()) })
}

// writeTaskTable prints one row per task: what people scan a task list
// for.
func writeTaskTable(w io.Writer, tasks []live.SummarizedTask, now time.Time) error {
	tw := newTable(w)
	row(tw, "NAME", "TRIGGER", "NEXT FIRE", "LAST RUN", "PAUSED", "LABELS")
	for _, t := range tasks {
		next := "-"
		if t.Summary.NextFire != nil {
			next = age(*t.Summary.NextFire, now)
		} else if t.Completed != "" {
			next = "completed"
		}
		last := "-"
		if r := t.Summary.LastRun; r != nil {
			last = r.State + " " + ago(r.ScheduledAt, now)
		}
		paused := "no"
		if t.Paused {
			paused = "yes"
		}
		row(tw, t.Name, describeTrigger(t.Trigger), next, last, paused, orDash(joinLabels(t.Labels)))
	}
	if len(tasks) == 0 {
		fmt.Fprintln(tw, "(no tasks)")
	}
	return tw.Flush()
}

// Task prints a task for people: what it is, its recent runs and its
// next fire times.
func Task(ctx context.Context, cl *client.Client, w io.Writer, t *model.Task) error {
	now := time.Now()
	tw := newTable(w)
	row(tw, "Name:", t.Name)
	updated := fmtTime(t.UpdatedAt) + " (" + ago(t.UpdatedAt, now) + ")"
	if t.UpdatedBy != "" {
		updated += " by " + t.UpdatedBy
	}
	row(tw, "Version:", fmt.Sprintf("%d, updated %s", t.Version, updated))
	row(tw, "Trigger:", describeTrigger(t.Trigger))
	row(tw, "Action:", describeAction(t.Action))
	writePolicy(tw, t.Policy)
	row(tw, "Labels:", orDash(joinLabels(t.Labels)))
	if len(t.Params) > 0 {
		row(tw, "Params:", describeParams(t.Params))
	}
	paused := "no"
	if t.Paused {
		paused = "yes: it does not fire (ax task resume " + t.Name + ")"
	}
	row(tw, "Paused:", paused)
	if t.Trigger.MaxRuns > 0 || t.Runs > 0 {
		runs := strconv.FormatUint(t.Runs, 10)
		if t.Trigger.MaxRuns > 0 {
			runs += " of maxRuns " + strconv.FormatInt(t.Trigger.MaxRuns, 10)
		}
		row(tw, "Runs:", runs)
	}
	if t.Completed != "" {
		row(tw, "Completed:", t.Completed+": the trigger fires no more")
	}
	// A rollout in progress (a second read; a node without rollouts, or
	// a task that never had one, answers 404: no line).
	if ro, err := cl.Rollout(ctx, t.Name); err == nil && ro.Active() {
		row(tw, "Rollout:", fmt.Sprintf("canary version %d on %d%% of the fires, %d of %d canary successes (ax task rollout %s)",
			ro.Canary, ro.Percent, ro.Successes, ro.PromoteAfter, t.Name))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	// The recent runs are a second read; a task without any says so.
	l, err := cl.ListInstances(ctx, model.InstanceFilter{Task: t.Name, Limit: 5})
	if err != nil {
		return err
	}
	fmt.Fprintln(w, "\nRecent runs:")
	if len(l.Instances) == 0 {
		fmt.Fprintln(w, "  (none)")
	} else if err := writeInstanceTable(indent(w), l.Instances, now); err != nil {
		return err
	}
	fmt.Fprintln(w, "\nNext fires:")
	if len(t.NextFireTimes) == 0 {
		fmt.Fprintln(w, "  (none)")
		return nil
	}
	loc, _ := time.LoadLocation(t.Trigger.Timezone)
	tw = newTable(indent(w))
	for _, f := range t.NextFireTimes {
		local := "-"
		if loc != nil && loc != time.UTC {
			local = f.In(loc).Format("2006-01-02 15:04:05 MST")
		}
		row(tw, fmtTime(f), local, age(f, now))
	}
	return tw.Flush()
}

// describeTrigger words when a task fires: its schedule, then its
// window, maxRuns and jitter when set.
func describeTrigger(t model.Trigger) string {
	s := t.Type
	switch t.Type {
	case model.TriggerCron:
		s = fmt.Sprintf("cron %q %s", t.Expression, t.Timezone)
	case model.TriggerInterval:
		s = "every " + t.Every.Std().String()
	case model.TriggerOnce:
		if t.At != nil {
			s = "once at " + t.At.UTC().Format(model.TimeLayout)
		}
	}
	if t.StartAt != nil {
		s += ", from " + t.StartAt.UTC().Format(model.TimeLayout)
	}
	if t.EndAt != nil {
		s += ", until " + t.EndAt.UTC().Format(model.TimeLayout)
	}
	if t.MaxRuns > 0 {
		s += fmt.Sprintf(", at most %d runs", t.MaxRuns)
	}
	if t.Jitter > 0 {
		s += ", jitter " + t.Jitter.Std().String()
	}
	return s
}

// describeAction words what an attempt runs.
func describeAction(a model.Action) string {
	s := a.Type
	switch a.Type {
	case model.ActionShell:
		s += ": " + a.Command
	case model.ActionHTTP:
		s += ": " + strings.TrimSpace(a.Method+" "+a.URL)
	default:
		if a.Handler != "" {
			s += ": " + a.Handler
		}
	}
	if a.Timeout > 0 {
		s += " (timeout " + a.Timeout.Std().String() + ")"
	}
	return s
}

// Events prints events as a table.
func Events(w io.Writer, events []model.Event) error {
	tw := newTable(w)
	row(tw, "TIME", "TYPE", "NODE", "ACTOR", "MESSAGE")
	for _, e := range events {
		row(tw, fmtTime(e.Time), e.Type, orDash(e.Node), orDash(e.Actor), e.Message)
	}
	if len(events) == 0 {
		fmt.Fprintln(tw, "(no events)")
	}
	return tw.Flush()
}

// History prints a task's versions, oldest first.
func History(w io.Writer, h *model.TaskHistory) error {
	now := time.Now()
	tw := newTable(w)
	row(tw, "VERSION", "OP", "ACTOR", "TIME", "AGE")
	for _, v := range h.Versions {
		row(tw, v.Version, v.Op, orDash(v.Actor), fmtTime(v.Time), age(v.Time, now))
	}
	return tw.Flush()
}

// Rollout prints a task's canary rollout for people: the versions, the
// split and the progress, and how it ended.
func Rollout(w io.Writer, ro *model.Rollout) error {
	tw := newTable(w)
	row(tw, "Task:", ro.Task)
	row(tw, "Phase:", ro.Phase)
	stable := strconv.FormatUint(ro.Stable, 10)
	if ro.Stable == 0 {
		stable = "- (a new task: every fire is a canary)"
	}
	row(tw, "Stable version:", stable)
	row(tw, "Canary version:", fmt.Sprintf("%d, %d%% of the fires", ro.Canary, ro.Percent))
	if len(ro.TestLabels) > 0 {
		keys := slices.Sorted(maps.Keys(ro.TestLabels))
		for i, k := range keys {
			keys[i] = k + "=" + ro.TestLabels[k]
		}
		row(tw, "Test labels:", strings.Join(keys, ","))
	}
	row(tw, "Progress:", fmt.Sprintf("%d of %d canary successes, %d failed, %d canary fires", ro.Successes, ro.PromoteAfter, ro.Failures, ro.Fires))
	onFail := "roll back"
	if !ro.AbortOnFailure {
		onFail = "counted, the rollout goes on"
	}
	row(tw, "On a canary failure:", onFail)
	row(tw, "Started:", fmt.Sprintf("%s by %s", fmtTime(ro.StartedAt), orDash(ro.StartedBy)))
	if ro.EndedAt != nil {
		row(tw, "Ended:", fmt.Sprintf("%s: %s", fmtTime(*ro.EndedAt), ro.Reason))
	}
	if ro.Promoted != 0 {
		row(tw, "Promoted as:", fmt.Sprintf("version %d", ro.Promoted))
	}
	return tw.Flush()
}

// describeParams words a task's parameter declarations, one after the
// other in name order: "count (integer, required), region (eu|us,
// default eu)".
func describeParams(ps map[string]model.ParamSpec) string {
	var out []string
	for _, name := range slices.Sorted(maps.Keys(ps)) {
		p := ps[name]
		var what []string
		switch {
		case len(p.Enum) > 0:
			what = append(what, strings.Join(p.Enum, "|"))
		case p.Type != "":
			what = append(what, p.Type)
		}
		if p.Pattern != "" {
			what = append(what, "matching "+p.Pattern)
		}
		if p.Required {
			what = append(what, "required")
		}
		if p.Default != nil {
			what = append(what, "default "+strconv.Quote(*p.Default))
		}
		if len(what) > 0 {
			name += " (" + strings.Join(what, ", ") + ")"
		}
		out = append(out, name)
	}
	return strings.Join(out, ", ")
}

// writePolicy writes a task's policy for people, as kubectl describe
// would: a "Policy:" row, then one indented row per field that is set,
// in the API's order and spelling, its value inline (lists as "a, b",
// objects as "k=v, k=v"). Nothing when no field is set.
func writePolicy(w io.Writer, p model.Policy) {
	j, err := json.Marshal(p)
	if err != nil {
		return
	}
	n, err := yamlFromJSON(j)
	if err != nil || n.Kind != yaml.MappingNode || len(n.Content) == 0 {
		return
	}
	row(w, "Policy:")
	for i := 0; i+1 < len(n.Content); i += 2 {
		row(w, "  "+n.Content[i].Value+":", inline(n.Content[i+1]))
	}
}

// inline is a YAML node of JSON's making on one line: a scalar as is, a
// list as "a, b", an object as "k=v, k=v", nested ones in brackets.
func inline(n *yaml.Node) string {
	var parts []string
	switch n.Kind {
	case yaml.SequenceNode:
		for _, c := range n.Content {
			parts = append(parts, nested(c))
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			parts = append(parts, n.Content[i].Value+"="+nested(n.Content[i+1]))
		}
	default:
		return n.Value
	}
	return strings.Join(parts, ", ")
}

// nested is inline for a value inside a list or an object: bracketed
// when it is a list or an object itself.
func nested(n *yaml.Node) string {
	switch n.Kind {
	case yaml.SequenceNode:
		return "[" + inline(n) + "]"
	case yaml.MappingNode:
		return "{" + inline(n) + "}"
	}
	return n.Value
}
