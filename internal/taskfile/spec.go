package taskfile

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/ax-scheduler/ax/api/visible"
	"github.com/ax-scheduler/ax/client"
	"github.com/ax-scheduler/ax/internal/view"
	"github.com/ax-scheduler/ax/model"
)

// Spec is what a definition file holds: a task less the fields the
// server owns (version, createdAt, updatedAt, updatedBy, nextFireTimes,
// runs, completed)
// and less paused, which is operational state. Every other field of
// model.Task must be here (TestSpec_Fields).
type Spec struct {
	Name    string                     `json:"name"`
	Trigger model.Trigger              `json:"trigger"`
	Action  model.Action               `json:"action"`
	Policy  model.Policy               `json:"policy"`
	Labels  map[string]string          `json:"labels,omitempty"`
	Params  map[string]model.ParamSpec `json:"params,omitempty"`
}

// SpecOf is the definition of t, as export writes it.
func SpecOf(t *model.Task) Spec {
	return Spec{Name: t.Name, Trigger: t.Trigger, Action: t.Action, Policy: t.Policy, Labels: t.Labels, Params: t.Params}
}

// diffSpec is a definition as apply's dry run compares it: the spec, and
// paused when it is set (a write that sets it changes it).
type diffSpec struct {
	Spec
	Paused bool `json:"paused,omitempty"`
}

// Write writes definitions to w as YAML documents (format "yaml") or a
// JSON array ("json").
func Write(w io.Writer, specs []Spec, format string) error {
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

// WriteDir writes each definition into dir (created if need be) as
// NAME.yaml or NAME.json, replacing a file of that name.
func WriteDir(dir string, specs []Spec, format string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, s := range specs {
		b, err := encode(s, format)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, s.Name+"."+format), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// encode encodes one definition as a file.
func encode(s Spec, format string) ([]byte, error) {
	if format == "json" {
		b, err := json.MarshalIndent(s, "", "  ")
		return append(b, '\n'), err
	}
	return view.YAML(s)
}

// Redacted returns the first env or header of t whose value the server
// hid from this token ("" when none): exporting it would write the mark
// in place of the value.
func Redacted(t *model.Task) string {
	for _, m := range []struct {
		field string
		vals  map[string]model.Value
	}{{"action.env", t.Action.Env}, {"action.headers", t.Action.Headers}} {
		for k, v := range m.vals {
			if v.FromSecret == "" && v.Text == visible.Redacted {
				return m.field + "." + k
			}
		}
	}
	return ""
}

// ListAll lists every task with the labels, page by page, with a
// linearizable read.
func ListAll(ctx context.Context, cl *client.Client, labels map[string]string) ([]model.Task, error) {
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

// ParseSelector reads label selectors (-l): k=v pairs, comma-separated or
// repeated; all must match.
func ParseSelector(vals []string) (map[string]string, error) {
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
