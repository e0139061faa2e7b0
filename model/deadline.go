package model

import (
	"fmt"
	"time"

	"github.com/ax-scheduler/ax/trigger"
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
// exist that day (a DST gap) is moved forward by the gap (02:30 on a
// spring-forward night is 03:30); one that happens twice (a DST
// fall-back) is its first (trigger.WallTime).
func (d *Deadline) At(scheduled time.Time, loc *time.Location) time.Time {
	var at time.Time
	if d.Within > 0 {
		at = scheduled.Add(d.Within.Std())
	}
	if h, m, ok := parseClock(d.By); ok {
		s := scheduled.In(loc)
		by := trigger.WallTime(s.Year(), s.Month(), s.Day(), h, m, loc)
		if by.Before(s) {
			by = trigger.WallTime(s.Year(), s.Month(), s.Day()+1, h, m, loc)
		}
		if at.IsZero() || by.Before(at) {
			at = by
		}
	}
	return at
}

// Location is the task's time zone: its cron trigger's, else UTC.
func (t *Task) Location() *time.Location { return ZoneOr(t.Trigger.Timezone) }

// ZoneOr is the location of IANA timezone name, UTC for "" or a name the
// zone database does not know (a definition is checked when written).
func ZoneOr(name string) *time.Location {
	if loc, err := trigger.Zone(name); err == nil {
		return loc
	}
	return time.UTC
}
