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
// exist that day (a DST gap) is moved forward by the gap (02:30 on a
// spring-forward night is 03:30), as time.Date does; one that happens
// twice (a DST fall-back) is its first, which time.Date does not promise.
func (d *Deadline) At(scheduled time.Time, loc *time.Location) time.Time {
	var at time.Time
	if d.Within > 0 {
		at = scheduled.Add(d.Within.Std())
	}
	if h, m, ok := parseClock(d.By); ok {
		s := scheduled.In(loc)
		by := onWall(s.Year(), s.Month(), s.Day(), h, m, loc)
		if by.Before(s) {
			by = onWall(s.Year(), s.Month(), s.Day()+1, h, m, loc)
		}
		if at.IsZero() || by.Before(at) {
			at = by
		}
	}
	return at
}

// onWall is the instant loc's wall clock reads h:m on that day, made
// deterministic where time.Date is not: in a DST gap it is the time read
// with the offset before the gap (so it lands after it, moved forward by
// the gap), in a fall-back the first of the two.
func onWall(y int, mo time.Month, d, h, m int, loc *time.Location) time.Time {
	t := time.Date(y, mo, d, h, m, 0, 0, loc)
	if t.Hour() == h && t.Minute() == m {
		return firstInstant(t)
	}
	_, before := t.Add(-3 * time.Hour).Zone()
	return time.Date(t.Year(), t.Month(), t.Day(), h, m, 0, 0, time.UTC).Add(-time.Duration(before) * time.Second)
}

// firstInstant is the earliest instant whose wall clock in t's location
// reads as t's does: t itself, unless a DST fall-back repeats that time
// (by 30 minutes, an hour or two, the shifts time zones use).
func firstInstant(t time.Time) time.Time {
	first := t
	for _, back := range []time.Duration{30 * time.Minute, time.Hour, 2 * time.Hour} {
		e := t.Add(-back).In(t.Location())
		if e.Year() == t.Year() && e.YearDay() == t.YearDay() && e.Hour() == t.Hour() && e.Minute() == t.Minute() {
			first = e
		}
	}
	return first
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
