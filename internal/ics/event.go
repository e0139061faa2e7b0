package ics

import (
	"errors"
	"fmt"
	"strings"
	"time"

	ical "github.com/emersion/go-ical"
	"github.com/teambition/rrule-go"
)

// oneDay is a DURATION day as the library counts it.
const oneDay = 24 * time.Hour

// span is how long each occurrence of an event lasts: nominal days (the
// same wall time days later) plus an exact duration.
type span struct {
	days  int
	exact time.Duration
}

func (s span) end(start time.Time) time.Time { return start.AddDate(0, 0, s.days).Add(s.exact) }

// event adds the days every occurrence of ev covers. allDay events are
// read in UTC, their occurrences being civil dates at midnight UTC; timed
// ones in their TZID, or loc when floating. exclude lists occurrences that
// other VEVENTs (RECURRENCE-ID) replace.
func (c *collector) event(ev ical.Event, loc *time.Location, exclude []time.Time) error {
	dtstart := ev.Props.Get(ical.PropDateTimeStart)
	if dtstart == nil {
		return errors.New("no DTSTART")
	}
	allDay := dtstart.ValueType() == ical.ValueDate
	if allDay {
		loc = time.UTC
	}
	start, err := dtstart.DateTime(loc)
	if err != nil {
		return fmt.Errorf("DTSTART %q: %w", dtstart.Value, err)
	}
	sp, err := eventSpan(ev, start, allDay, loc)
	if err != nil {
		return err
	}
	set, err := recurrence(ev, start, allDay, loc)
	if err != nil {
		return err
	}
	for _, t := range exclude {
		set.ExDate(occurrenceOf(t, allDay))
	}
	next := set.Iterator()
	for {
		t, ok := next()
		if !ok {
			return nil
		}
		if err := c.step(); err != nil {
			return err
		}
		if first := occurrenceDay(t, c.loc, allDay); first > c.last {
			return nil
		}
		if err := c.occurrence(t, sp.end(t), allDay); err != nil {
			return err
		}
	}
}

// occurrenceDay is the date an occurrence starts on in loc (all-day
// occurrences are civil dates already).
func occurrenceDay(t time.Time, loc *time.Location, allDay bool) day {
	if allDay {
		return dayOf(t)
	}
	return dayOf(t.In(loc))
}

// occurrence adds the days [start, end) covers: civil dates for allDay
// (at least the first), else the dates it touches in the result's zone.
func (c *collector) occurrence(start, end time.Time, allDay bool) error {
	if allDay {
		return c.cover(dayOf(start), max(dayOf(start), dayOf(end)-1))
	}
	start, end = start.In(c.loc), end.In(c.loc)
	last := dayOf(start)
	if end.After(start) {
		last = dayOf(end.Add(-time.Nanosecond))
	}
	return c.cover(dayOf(start), last)
}

// eventSpan reads DTEND, else DURATION; without either an all-day event
// lasts a day and a timed one no time (RFC 5545, 3.6.1).
func eventSpan(ev ical.Event, start time.Time, allDay bool, loc *time.Location) (span, error) {
	if p := ev.Props.Get(ical.PropDateTimeEnd); p != nil {
		if (p.ValueType() == ical.ValueDate) != allDay {
			return span{}, fmt.Errorf("DTEND %q and DTSTART must both be dates or both date-times", p.Value)
		}
		end, err := p.DateTime(loc)
		if err != nil {
			return span{}, fmt.Errorf("DTEND %q: %w", p.Value, err)
		}
		if end.Before(start) {
			return span{}, fmt.Errorf("DTEND %q is before DTSTART", p.Value)
		}
		return span{exact: end.Sub(start)}, nil
	}
	if p := ev.Props.Get(ical.PropDuration); p != nil {
		sp, err := duration(p)
		if err != nil {
			return span{}, fmt.Errorf("DURATION %q: %w", p.Value, err)
		}
		return sp, nil
	}
	if allDay {
		return span{days: 1}, nil
	}
	return span{}, nil
}

// duration splits a DURATION into its nominal days and weeks and its
// exact hours, minutes and seconds (RFC 5545, 3.3.6); the library parses
// each part.
func duration(p *ical.Prop) (span, error) {
	all, err := p.Duration()
	if err != nil {
		return span{}, err
	}
	if all < 0 {
		return span{}, errors.New("negative")
	}
	v := strings.ToUpper(p.Value)
	i := strings.IndexByte(v, 'T')
	if i < 0 {
		return span{days: int(all / oneDay)}, nil
	}
	if strings.HasSuffix(v[:i], "P") {
		return span{exact: all}, nil
	}
	datePart := ical.Prop{Name: p.Name, Params: ical.Params{}, Value: v[:i]}
	days, err := datePart.Duration()
	if err != nil {
		return span{}, err
	}
	return span{days: int(days / oneDay), exact: all - days}, nil
}

// recurrence is the event's recurrence set: DTSTART, its RRULE, RDATEs,
// less its EXDATEs.
func recurrence(ev ical.Event, start time.Time, allDay bool, loc *time.Location) (*rrule.Set, error) {
	set := &rrule.Set{}
	set.DTStart(start)
	set.RDate(start)
	switch rules := ev.Props.Values(ical.PropRecurrenceRule); len(rules) {
	case 0:
	case 1:
		opt, err := rrule.StrToROptionInLocation(rules[0].Value, start.Location())
		if err != nil {
			return nil, fmt.Errorf("RRULE %q: %w", rules[0].Value, err)
		}
		opt.Dtstart = start
		rule, err := rrule.NewRRule(*opt)
		if err != nil {
			return nil, fmt.Errorf("RRULE %q: %w", rules[0].Value, err)
		}
		set.RRule(rule)
	default:
		return nil, fmt.Errorf("%d RRULE lines; one is supported", len(rules))
	}
	for _, p := range ev.Props.Values(ical.PropRecurrenceDates) {
		if p.ValueType() == ical.ValuePeriod {
			return nil, fmt.Errorf("RDATE %q: VALUE=PERIOD is not supported", p.Value)
		}
		ts, err := instants(p, loc)
		if err != nil {
			return nil, fmt.Errorf("RDATE %q: %w", p.Value, err)
		}
		for _, t := range ts {
			set.RDate(occurrenceOf(t, allDay))
		}
	}
	for _, p := range ev.Props.Values(ical.PropExceptionDates) {
		ts, err := instants(p, loc)
		if err != nil {
			return nil, fmt.Errorf("EXDATE %q: %w", p.Value, err)
		}
		for _, t := range ts {
			set.ExDate(occurrenceOf(t, allDay))
		}
	}
	return set, nil
}

// occurrenceOf is t as an occurrence of an event: for an all-day event
// the date of t's wall clock at midnight UTC.
func occurrenceOf(t time.Time, allDay bool) time.Time {
	if allDay {
		return dayOf(t).civil()
	}
	return t
}

// instants reads a list-valued date or date-time property (RDATE and
// EXDATE may hold several values separated by commas).
func instants(p ical.Prop, loc *time.Location) ([]time.Time, error) {
	var ts []time.Time
	for _, v := range strings.Split(p.Value, ",") {
		one := p
		one.Value = strings.TrimSpace(v)
		t, err := instant(&one, loc)
		if err != nil {
			return nil, err
		}
		ts = append(ts, t)
	}
	return ts, nil
}

// instant reads one date or date-time: dates in UTC (civil), date-times
// in their TZID, UTC with Z, else loc.
func instant(p *ical.Prop, loc *time.Location) (time.Time, error) {
	if p.ValueType() == ical.ValueDate {
		loc = time.UTC
	}
	return p.DateTime(loc)
}

func upper(s string) string { return strings.ToUpper(strings.TrimSpace(s)) }
