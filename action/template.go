package action

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"text/template"
	"time"

	"ax/model"
)

// templateData is what {{...}} in a command, url or body sees. V is string
// for HTTP templates and shellValue for shell commands, so that caller
// values are quoted there.
type templateData[V ~string] struct {
	// ScheduledAt is the fire time, RFC 3339 in UTC with milliseconds.
	ScheduledAt string
	Task        string
	InstanceID  string
	ExecutionID string
	Attempt     int
	Params      map[string]V
	Payload     V

	scheduled time.Time
	timezone  string
}

// Date is the scheduled date, YYYY-MM-DD, in the job's timezone.
func (d templateData[V]) Date() (string, error) {
	t, err := d.local()
	if err != nil {
		return "", err
	}
	return t.Format(time.DateOnly), nil
}

// Yesterday is the day before Date, YYYY-MM-DD.
func (d templateData[V]) Yesterday() (string, error) {
	t, err := d.local()
	if err != nil {
		return "", err
	}
	y, m, day := t.Date()
	// Noon, so that a DST change can't move the result to another day.
	return time.Date(y, m, day-1, 12, 0, 0, 0, t.Location()).Format(time.DateOnly), nil
}

func (d templateData[V]) local() (time.Time, error) {
	loc, err := time.LoadLocation(d.timezone)
	if err != nil {
		return time.Time{}, fmt.Errorf("timezone %q: %w", d.timezone, err)
	}
	return d.scheduled.In(loc), nil
}

func newTemplateData[V ~string](job Job) templateData[V] {
	params := make(map[string]V, len(job.Params))
	for k, v := range job.Params {
		params[k] = V(v)
	}
	return templateData[V]{
		ScheduledAt: job.ScheduledAt.UTC().Format(model.TimeLayout),
		Task:        job.Task,
		InstanceID:  job.InstanceID,
		ExecutionID: job.ExecutionID,
		Attempt:     job.Attempt,
		Params:      params,
		Payload:     V(payloadText(job.Payload)),
		scheduled:   job.ScheduledAt,
		timezone:    job.Timezone,
	}
}

// payloadText is the payload as templates and AX_PAYLOAD see it: a JSON
// string as its value, anything else as its JSON text, "" for none.
func payloadText(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return ""
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err == nil {
			return s
		}
	}
	return string(raw)
}

// execute parses and executes one template with missing keys as zero
// values.
func execute(name, text string, data any) (string, error) {
	if !strings.Contains(text, "{{") {
		return text, nil
	}
	t, err := template.New(name).Option("missingkey=zero").Parse(text)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	if err := t.Execute(&b, data); err != nil {
		return "", err
	}
	return b.String(), nil
}

// expandText expands a template of an HTTP action: values as they are.
func expandText(name, text string, job Job) (string, error) {
	s, err := execute(name, text, newTemplateData[string](job))
	if err != nil {
		return "", fmt.Errorf("bad %s template: %w", name, err)
	}
	return s, nil
}

// expandCommand expands a shell command template. Caller values (Params and
// Payload) are quoted for where they land in the command; see quoteShell.
func expandCommand(text string, job Job) (string, error) {
	s, err := execute("command", text, newTemplateData[shellValue](job))
	if err != nil {
		return "", fmt.Errorf("bad command template: %w", err)
	}
	s, err = quoteShell(s)
	if err != nil {
		return "", fmt.Errorf("bad command template: %w", err)
	}
	return s, nil
}

// shellValue is a caller value in a shell template. It compares as its
// string (so {{if eq .Params.mode "full"}} works) but prints as a marker,
// NUL + hex + NUL, that quoteShell replaces by the value quoted for its
// place in the command.
type shellValue string

// String returns the marker of v.
func (v shellValue) String() string {
	return "\x00" + hex.EncodeToString([]byte(v)) + "\x00"
}
