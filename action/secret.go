package action

import (
	"fmt"
	"slices"
	"strings"

	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/model/tmpl"
)

// lookupSecret returns the value of the secret name delivered with job.
func lookupSecret(job Job, name string) (string, error) {
	s, ok := job.Secrets[name]
	if !ok {
		return "", fmt.Errorf("secret %q was not delivered with the job", name)
	}
	return s, nil
}

// valueText returns v's text: its Text, or the secret it names.
func valueText(job Job, v model.Value) (string, error) {
	if v.FromSecret == "" {
		return v.Text, nil
	}
	return lookupSecret(job, v.FromSecret)
}

// SecretRefs returns the names of the secrets a references, sorted and
// without duplicates: {{secret "name"}} in its templates (command, or url
// and body) and fromSecret values of its env and headers. The leader
// delivers those secrets (Job.Secrets) with each of the action's jobs. A
// template that does not parse names none (a valid action has none).
func SecretRefs(a *model.Action) []string {
	var names []string
	for _, f := range [...]struct{ field, text string }{{"action.command", a.Command}, {"action.url", a.URL}, {"action.body", a.Body}} {
		if !strings.Contains(f.text, "secret") {
			continue // most templates name no secret: no need to parse them
		}
		if _, refs, err := tmpl.Parse(f.field, f.text, model.ValidName); err == nil {
			names = append(names, refs...)
		}
	}
	for _, m := range []map[string]model.Value{a.Env, a.Headers} {
		for _, v := range m {
			if v.FromSecret != "" {
				names = append(names, v.FromSecret)
			}
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}
