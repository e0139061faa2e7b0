package model

import (
	"time"

	"ax/trigger"
)

// Schedule returns the fire-time schedule of the task's trigger, or nil for
// an event trigger (which fires only through the API). An interval without
// startAt is anchored at the Unix epoch, so "every 1h" fires on the hour.
func (t *Task) Schedule() (trigger.Schedule, error) {
	tr := t.Trigger
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

// NextFires returns up to n fire times of the task strictly after now.
func (t *Task) NextFires(now time.Time, n int) []Time {
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
