package model

import (
	"fmt"
	"time"
)

// Deadline is policy.deadline (protocol 8): when an instance should be
// SUCCESS at the latest, counted from its fire time (the nominal one: a
// trigger's jitter moves the fire within it). Within sets it a duration
// after the fire time, By at the first HH:MM at or after it in the task's
// time zone; with both, the earlier one. An instance that is not
// finished by then raises the deadline_missed alert (Airflow's SLA miss).
type Deadline struct {
	Within Duration `json:"within,omitempty"`
	By     string   `json:"by,omitempty"`
}

// MaxDeadline bounds deadline.within.
const MaxDeadline = 366 * 24 * time.Hour

func (d *Deadline) validate() error {
	switch {
	case d.Within == 0 && d.By == "":
		return FieldErrorf("policy.deadline", "set within (a duration after the fire time), by (HH:MM in the task's time zone) or both")
	case d.Within < 0 || d.Within.Std() > MaxDeadline:
		return FieldErrorf("policy.deadline.within", "must be between 1s and %s, got %s", MaxDeadline, d.Within.Std())
	case d.Within != 0 && d.Within.Std() < time.Second:
		return FieldErrorf("policy.deadline.within", "must be at least 1s, got %s", d.Within.Std())
	}
	if d.By != "" {
		if _, _, ok := parseClock(d.By); !ok {
			return FieldErrorf("policy.deadline.by", "%q is not a time of day HH:MM (00:00 to 23:59)", d.By)
		}
	}
	return nil
}

// parseClock reads HH:MM.
func parseClock(s string) (h, m int, ok bool) {
	if len(s) != 5 || s[2] != ':' {
		return 0, 0, false
	}
	if _, err := fmt.Sscanf(s, "%02d:%02d", &h, &m); err != nil || h > 23 || m > 59 || h < 0 || m < 0 {
		return 0, 0, false
	}
	return h, m, true
}

// At is the deadline of an instance fired for scheduled, in loc (the
// task's time zone): scheduled + Within, or the first By at or after
// scheduled on loc's wall clock, whichever is earlier. A By that does not
// exist that day (a DST gap) is the instant after the gap, as time.Date
// normalizes it; one that exists twice (a DST overlap) is its first.
func (d *Deadline) At(scheduled time.Time, loc *time.Location) time.Time {
	var at time.Time
	if d.Within > 0 {
		at = scheduled.Add(d.Within.Std())
	}
	if h, m, ok := parseClock(d.By); ok {
		s := scheduled.In(loc)
		by := time.Date(s.Year(), s.Month(), s.Day(), h, m, 0, 0, loc)
		if by.Before(s) {
			by = time.Date(s.Year(), s.Month(), s.Day()+1, h, m, 0, 0, loc)
		}
		if at.IsZero() || by.Before(at) {
			at = by
		}
	}
	return at
}

// Location is the task's time zone: its cron trigger's, else UTC.
func (t *Task) Location() *time.Location {
	if t.Trigger.Timezone != "" {
		if loc, err := time.LoadLocation(t.Trigger.Timezone); err == nil {
			return loc
		}
	}
	return time.UTC
}
