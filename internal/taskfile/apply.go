package taskfile

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"github.com/ax-scheduler/ax/client"
	"github.com/ax-scheduler/ax/internal/view"
	"github.com/ax-scheduler/ax/model"
)

// Applier applies definitions to a cluster, as ax task apply does, and
// reports each task on Out: NAME created|configured|unchanged (version
// N), and what the server refused on ErrOut, where it is defined.
type Applier struct {
	Client *client.Client
	// Out gets a line per task (and, in a dry run, the diffs); ErrOut
	// the tasks the server refused.
	Out, ErrOut io.Writer
	// DryRun asks the server what each write would do and writes
	// nothing.
	DryRun bool
	failed int
}

// Run applies docs in turn, then, with prune, deletes the tasks that
// carry every one of labels and are not among docs (in a dry run: lists
// them; after a task failed: nothing). A task the server refuses is
// reported and the others are still applied, the error then counting
// them; any other failure stops it.
func (a *Applier) Run(ctx context.Context, docs []Doc, prune bool, labels map[string]string) error {
	for i := range docs {
		if err := a.one(ctx, &docs[i]); err != nil {
			return err
		}
	}
	n := len(docs)
	if prune {
		pruned, err := a.prune(ctx, docs, labels)
		if err != nil {
			return err
		}
		n += pruned
	}
	if a.failed > 0 {
		return fmt.Errorf("task apply: %d of %d tasks failed", a.failed, n)
	}
	return nil
}

// perTask reports whether err concerns only the task it was returned for
// (the others are still worth trying): the server refused this one.
// Anything else (unreachable, unauthorized, no leader) would fail them
// all and stops the apply.
func perTask(err error) bool {
	var me *model.Error
	if !errors.As(err, &me) {
		return false
	}
	switch me.Code {
	case model.CodeInvalid, model.CodeConflict, model.CodePrecondition, model.CodeNotFound, model.CodeTooLarge:
		return true
	}
	return false
}

// fail reports a task the server refused, where it is defined; other
// errors are returned to stop the apply.
func (a *Applier) fail(d *Doc, name string, err error) error {
	if !perTask(err) {
		return fmt.Errorf("task %s: %w", name, err)
	}
	a.failed++
	where := ""
	if d != nil {
		var me *model.Error
		errors.As(err, &me)
		where = d.fieldPos(me.Field) + ": "
	}
	fmt.Fprintf(a.ErrOut, "%stask %s: %v\n", where, name, err)
	return nil
}

// one applies (or plans) one definition and prints its line.
func (a *Applier) one(ctx context.Context, d *Doc) error {
	req := client.Request{Method: http.MethodPut, Path: "/v1/tasks/" + url.PathEscape(d.name), Body: d.body}
	if !a.DryRun {
		var res model.WriteResult
		if err := a.Client.Do(ctx, req, &res); err != nil {
			return a.fail(d, d.name, err)
		}
		state := "unchanged"
		switch {
		case res.Created:
			state = "created"
		case res.Changed:
			state = "configured"
		}
		fmt.Fprintf(a.Out, "%s %s (version %d)\n", d.name, state, res.Version)
		return nil
	}
	req.Query = url.Values{"dryRun": {"true"}}
	req.Idempotent = true // writes nothing
	var p model.TaskPlan
	if err := a.Client.Do(ctx, req, &p); err != nil {
		return a.fail(d, d.name, err)
	}
	switch p.Op {
	case model.PlanCreate:
		fmt.Fprintf(a.Out, "%s created (dry run)\n", d.name)
	case model.PlanUnchanged:
		fmt.Fprintf(a.Out, "%s unchanged (dry run, version %d)\n", d.name, p.Version)
	default:
		fmt.Fprintf(a.Out, "%s configured (dry run, version %d)\n", d.name, p.Version)
		if p.Current == nil || p.Task == nil {
			return fmt.Errorf("task %s: the server's plan has no definitions to compare", d.name)
		}
		from, err := view.YAML(diffSpec{SpecOf(p.Current), p.Current.Paused})
		if err != nil {
			return err
		}
		to, err := view.YAML(diffSpec{SpecOf(p.Task), p.Task.Paused})
		if err != nil {
			return err
		}
		diff := unifiedDiff(fmt.Sprintf("%s on the server (version %d)", d.name, p.Version), d.name+" in "+d.pos(), lines(string(from)), lines(string(to)))
		for _, l := range diff {
			fmt.Fprintln(a.Out, l)
		}
	}
	return nil
}

// prune deletes (or, in a dry run, lists) the tasks with the labels that
// are not among docs, and returns how many it tried.
func (a *Applier) prune(ctx context.Context, docs []Doc, labels map[string]string) (int, error) {
	if a.failed > 0 && !a.DryRun {
		fmt.Fprintf(a.ErrOut, "prune skipped: %d tasks failed to apply\n", a.failed)
		return 0, nil
	}
	keep := make(map[string]bool, len(docs))
	for _, d := range docs {
		keep[d.name] = true
	}
	tasks, err := ListAll(ctx, a.Client, labels)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, t := range tasks {
		if keep[t.Name] {
			continue
		}
		n++
		if a.DryRun {
			fmt.Fprintf(a.Out, "%s deleted (dry run, version %d)\n", t.Name, t.Version)
			continue
		}
		res, err := a.Client.DeleteTask(ctx, t.Name)
		if errors.Is(err, model.ErrNotFound) {
			fmt.Fprintf(a.Out, "%s deleted (already gone)\n", t.Name)
			continue
		}
		if err != nil {
			if err := a.fail(nil, t.Name, err); err != nil {
				return n, err
			}
			continue
		}
		fmt.Fprintf(a.Out, "%s deleted (version %d)\n", t.Name, res.Version)
	}
	return n, nil
}
