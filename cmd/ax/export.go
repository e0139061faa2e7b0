package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/ax-scheduler/ax/api"
	"github.com/ax-scheduler/ax/client"
	"github.com/ax-scheduler/ax/internal/view"
	"github.com/ax-scheduler/ax/model"
)

// taskSpec is what a definition file holds: a task less the fields the
// server owns (version, createdAt, updatedAt, updatedBy, nextFireTimes)
// and less paused, which is operational state. Every other field of
// model.Task must be here (TestTaskSpec_Fields).
type taskSpec struct {
	Name    string            `json:"name"`
	Trigger model.Trigger     `json:"trigger"`
	Action  model.Action      `json:"action"`
	Policy  model.Policy      `json:"policy"`
	Labels  map[string]string `json:"labels,omitempty"`
}

func specOf(t *model.Task) taskSpec {
	return taskSpec{Name: t.Name, Trigger: t.Trigger, Action: t.Action, Policy: t.Policy, Labels: t.Labels}
}

// diffSpec is a definition as apply's dry run compares it: the spec, and
// paused when it is set (a write that sets it changes it).
type diffSpec struct {
	taskSpec
	Paused bool `json:"paused,omitempty"`
}

// exportUsage is the help of task export.
const exportUsage = `
Usage: ax task export [-l k=v[,k=v]] [-o yaml|json] [-d DIR]

Writes task definitions as ax task apply reads them: without the fields the
server owns (version, createdAt, updatedAt, updatedBy, nextFireTimes) and
without paused, which is operational state (pause and resume change it;
apply keeps it). Applying the export again answers "unchanged" for every
task, and leaves paused tasks paused. Needs a writer token: below writer
the server hides literal env and header values, and an export of them
would overwrite the real values when applied, so it is refused.

To stdout: YAML documents separated by --- (default), or one JSON array
(-o json). With -d DIR: one file per task, DIR/NAME.yaml or DIR/NAME.json
(DIR is created; files of the same names are replaced, others are left).

Examples:
	ax task export -l team=data > data-tasks.yaml
	ax task export -d tasks/ && git -C tasks diff
	ax task export -o json -l team=data,env=prod
`

// taskExportCmd is ax task export.
type taskExportCmd struct {
	clientBase
	sel         multiFlag
	format, dir string
}

func newTaskExportCmd(m *Main) command {
	c := &taskExportCmd{}
	c.init(m, "task export", exportUsage)
	c.fs.Var(&c.sel, "l", "only tasks with these labels, k=v[,k=v] (repeatable)")
	c.fs.StringVar(&c.format, "o", "yaml", "yaml or json")
	c.fs.StringVar(&c.dir, "d", "", "write one file per task into this directory")
	return c
}

func (c *taskExportCmd) Run(ctx context.Context, args []string) error {
	if err := c.parse(args); err != nil {
		return err
	}
	if c.fs.NArg() > 0 {
		return fmt.Errorf("task export: unexpected argument %q (select tasks with -l)", c.fs.Arg(0))
	}
	format, dir := c.format, c.dir
	if format != "yaml" && format != "json" {
		return fmt.Errorf("task export: -o wants yaml or json, got %q", format)
	}
	labels, err := parseSelector(c.sel)
	if err != nil {
		return fmt.Errorf("task export: %w", err)
	}
	cl, err := c.cf.client()
	if err != nil {
		return err
	}
	tasks, err := listAllTasks(ctx, cl, labels)
	if err != nil {
		return err
	}
	specs := make([]taskSpec, 0, len(tasks))
	for i := range tasks {
		if f := redactedField(&tasks[i]); f != "" {
			return fmt.Errorf("task export: task %s: %s is hidden from this token (%s): export with a writer token (-token or AX_TOKEN), or re-applying the export would overwrite the value",
				tasks[i].Name, f, api.Redacted)
		}
		specs = append(specs, specOf(&tasks[i]))
	}
	if dir == "" {
		return writeSpecs(c.m.Stdout, specs, format)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, s := range specs {
		b, err := encodeSpec(s, format)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, s.Name+"."+format), b, 0o644); err != nil {
			return err
		}
	}
	fmt.Fprintf(c.m.Stderr, "exported %d tasks to %s\n", len(specs), dir)
	return nil
}

// writeSpecs writes definitions as YAML documents or a JSON array.
func writeSpecs(w io.Writer, specs []taskSpec, format string) error {
	if format == "json" {
		b, err := json.MarshalIndent(specs, "", "  ")
		if err != nil {
			return err
		}
		_, err = w.Write(append(b, '\n'))
		return err
	}
	for i, s := range specs {
		b, err := view.YAML(s)
		if err != nil {
			return err
		}
		if i > 0 {
			if _, err := io.WriteString(w, "---\n"); err != nil {
				return err
			}
		}
		if _, err := w.Write(b); err != nil {
			return err
		}
	}
	return nil
}

// encodeSpec encodes one definition as a file.
func encodeSpec(s taskSpec, format string) ([]byte, error) {
	if format == "json" {
		b, err := json.MarshalIndent(s, "", "  ")
		return append(b, '\n'), err
	}
	return view.YAML(s)
}

// redactedField returns the first env or header of t whose value the
// server hid from this token ("" when none).
func redactedField(t *model.Task) string {
	for _, m := range []struct {
		field string
		vals  map[string]model.Value
	}{{"action.env", t.Action.Env}, {"action.headers", t.Action.Headers}} {
		for k, v := range m.vals {
			if v.FromSecret == "" && v.Text == api.Redacted {
				return m.field + "." + k
			}
		}
	}
	return ""
}

// listAllTasks lists every task with the labels, page by page, with a
// linearizable read.
func listAllTasks(ctx context.Context, cl *client.Client, labels map[string]string) ([]model.Task, error) {
	f := model.TaskFilter{Labels: labels, Limit: 1000}
	var all []model.Task
	for {
		page, err := cl.ListTasks(ctx, f)
		if err != nil {
			return nil, err
		}
		all = append(all, page.Tasks...)
		if page.NextCursor == "" {
			return all, nil
		}
		f.Cursor = page.NextCursor
	}
}

// parseSelector reads label selectors: k=v pairs, comma-separated or
// repeated; all must match.
func parseSelector(vals []string) (map[string]string, error) {
	var out map[string]string
	for _, v := range vals {
		for _, p := range strings.Split(v, ",") {
			p = strings.TrimSpace(p)
			if p == "" {
				continue
			}
			k, val, ok := strings.Cut(p, "=")
			if !ok || k == "" {
				return nil, fmt.Errorf("-l wants key=value, got %q", p)
			}
			if old, dup := out[k]; dup && old != val {
				return nil, errors.New("-l: label " + k + " given twice with different values")
			}
			if out == nil {
				out = map[string]string{}
			}
			out[k] = val
		}
	}
	return out, nil
}
