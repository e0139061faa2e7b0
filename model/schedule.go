package model

import (
	"strings"
	"text/template"
	"time"

	"github.com/ax-scheduler/ax/model/tmpl"
	"github.com/ax-scheduler/ax/trigger"
)

// Schedule returns the fire-time schedule of the task's trigger, bounded
// by its startAt and endAt, or nil for an event trigger (which fires only
// through the API). An interval without startAt is anchored at the Unix
// epoch, so "every 1h" fires on the hour.
//
// A trigger that names calendars fires only on the days they allow
// (trigger.Exclude, onExcluded), which needs the calendars the state
// machine resolved when it read the task: without them, the answer is an
// error naming trigger.calendars.
func (t *Task) Schedule() (trigger.Schedule, error) {
	s, err := t.Trigger.schedule()
	if err != nil || s == nil || len(t.Trigger.Calendars) == 0 {
		return trigger.Window(s, t.Trigger.StartAt.Or(), t.Trigger.EndAt.Or()), err
	}
	if t.Resolved == nil || len(t.Resolved.Calendars) != len(t.Trigger.Calendars) {
		return nil, FieldErrorf("trigger.calendars", "the task's calendars were not resolved")
	}
	s = trigger.Exclude(s, t.Resolved.Calendars, t.Trigger.OnExcluded)
	return trigger.Window(s, t.Trigger.StartAt.Or(), t.Trigger.EndAt.Or()), nil
}

func (tr *Trigger) schedule() (trigger.Schedule, error) {
	switch tr.Type {
	case TriggerCron:
		return trigger.ParseCron(tr.Expression, tr.Timezone)
	case TriggerInterval:
		start := time.Unix(0, 0).UTC()
		if tr.StartAt != nil {
			start = tr.StartAt.Time
		}
		return trigger.Interval(tr.Every.Std(), start)
	case TriggerOnce:
		if tr.At == nil {
			return nil, FieldErrorf("trigger.at", "once trigger has no resolved time")
		}
		return trigger.Once(tr.At.Time), nil
	default:
		return nil, nil
	}
}

// NextFires returns up to n fire times of the task strictly after now,
// no more than its maxRuns leaves.
func (t *Task) NextFires(now time.Time, n int) []Time {
	if left := trigger.RunsLeft(t.Trigger.MaxRuns, t.Runs); left >= 0 {
		n = min(n, left)
	}
	s, err := t.Schedule()
	if err != nil || s == nil {
		return nil
	}
	var out []Time
	for _, ft := range trigger.NextN(s, now, n) {
		out = append(out, Time{ft.UTC()})
	}
	return out
}

// KeyRenderer renders a task's idempotency key for fire times; build it
// once per task definition with (*Task).FireKeys.
type KeyRenderer struct {
	task string
	tmpl *template.Template
	tz   *time.Location
}

// FireKeys returns the renderer of the task's idempotency key:
// policy.idempotencyKey if set (a template over .Task, .ScheduledAt, .Date
// and .Yesterday in the task's timezone; any other name is an error, which
// Validate refuses), else "<task>@<scheduledAt>".
func (t *Task) FireKeys() *KeyRenderer {
	k := &KeyRenderer{task: t.Name, tz: t.Location()}
	if s := t.Policy.IdempotencyKey; s != "" {
		if kt, err := ParseTemplate("policy.idempotencyKey", s); err == nil {
			k.tmpl = kt.Option("missingkey=error")
		}
	}
	return k
}

// Key returns the idempotency key of the fire at at.
func (k *KeyRenderer) Key(at time.Time) string {
	if s, err := k.render(at); err == nil && s != "" && len(s) <= MaxFireKey {
		return s
	}
	return k.task + "@" + at.UTC().Format(TimeLayout)
}

// render expands the key template ("" without one), within the limits of
// tmpl.Funcs and tmpl.Writer (no clock: the state machine runs it when it
// validates a task).
func (k *KeyRenderer) render(at time.Time) (string, error) {
	if k.tmpl == nil {
		return "", nil
	}
	local := at.In(k.tz)
	var b tmpl.Writer
	data := map[string]any{
		"Task":        k.task,
		"ScheduledAt": at.UTC().Format(TimeLayout),
		"Date":        local.Format("2006-01-02"),
		"Yesterday":   local.AddDate(0, 0, -1).Format("2006-01-02"),
	}
	if err := tmpl.Render(k.tmpl, data, new(tmpl.Funcs), nil, &b); err != nil {
		return "", err
	}
	return b.String(), nil
}

// checkKeyTemplate expands an idempotency key template for a sample fire
// time, so that one that cannot expand, or expands to nothing, is refused
// when the task is applied rather than falling back to the default key.
func checkKeyTemplate(field, s string) error {
	k := (&Task{Name: "sample", Policy: Policy{IdempotencyKey: s}}).FireKeys()
	out, err := k.render(time.Date(2026, time.January, 2, 3, 4, 5, 0, time.UTC))
	if err != nil {
		return FieldErrorf(field, "template cannot expand: %v", err)
	}
	if strings.TrimSpace(out) == "" {
		return FieldErrorf(field, "template expands to an empty key")
	}
	return nil
}

// Date returns the fire's scheduled date (YYYY-MM-DD) in the task's
// timezone: the date dependsOn matches on.
func (k *KeyRenderer) Date(at time.Time) string { return at.In(k.tz).Format("2006-01-02") }
