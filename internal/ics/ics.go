package ics

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"time"
	"unicode"

	ical "github.com/emersion/go-ical"
)

const (
	// MaxDates bounds the dates one file may list.
	MaxDates = 10000
	// MaxSteps bounds the work of one conversion: recurrence occurrences
	// generated (from DTSTART on, also those before From) plus the days
	// their spans visit.
	MaxSteps = 1000000
)

// Options bound the conversion.
type Options struct {
	// From and To bound the dates listed: only days in [From, To) are
	// listed, and recurrences are expanded only within it. Both required.
	From, To time.Time
	// Location is the zone of timed events and floating times; nil means
	// the calendar's X-WR-TIMEZONE, else UTC. Load it by its IANA name:
	// its String() becomes Result.Timezone.
	Location *time.Location
}

// Result is what an .ics file excludes.
type Result struct {
	// Timezone is the zone used (its IANA name): Options.Location's, else
	// the calendar's X-WR-TIMEZONE, else "UTC".
	Timezone string
	// Exclude is sorted and merged: "2026-12-25" for one day,
	// "2026-12-24/2026-12-26" for consecutive days (inclusive both ends).
	Exclude []string
	// Events is the number of VEVENTs read.
	Events int
	// Skipped notes what was ignored and why, e.g.
	// `event "Office party": STATUS:CANCELLED`.
	Skipped []string
}

// utf8BOM starts some exported files; the decoder does not expect it.
var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

// Parse reads an iCalendar file and lists the dates its events cover
// within [opt.From, opt.To) (see the package documentation for the rules).
func Parse(r io.Reader, opt Options) (*Result, error) {
	if opt.From.IsZero() || opt.To.IsZero() {
		return nil, errors.New("ics: From and To are required")
	}
	if !opt.To.After(opt.From) {
		return nil, fmt.Errorf("ics: To (%s) must be after From (%s)", opt.To.Format(time.RFC3339), opt.From.Format(time.RFC3339))
	}
	cals, err := decode(r)
	if err != nil {
		return nil, err
	}
	loc, err := zone(cals, opt.Location)
	if err != nil {
		return nil, err
	}
	c := newCollector(opt.From, opt.To, loc)
	res := &Result{Timezone: loc.String()}

	var events []ical.Event
	for _, cal := range cals {
		for _, child := range cal.Children {
			switch child.Name {
			case ical.CompEvent:
				events = append(events, ical.Event{Component: child})
			case ical.CompTimezone:
			default:
				res.Skipped = append(res.Skipped, fmt.Sprintf("%s %q: not an event", child.Name, label(child, 0)))
			}
		}
	}
	res.Events = len(events)

	overrides, err := recurrenceIDs(events, loc)
	if err != nil {
		return nil, err
	}
	for i, ev := range events {
		name := label(ev.Component, i+1)
		if st, _ := ev.Props.Text(ical.PropStatus); ical.EventStatus(upper(st)) == ical.EventCancelled {
			res.Skipped = append(res.Skipped, fmt.Sprintf("event %q: STATUS:CANCELLED", name))
			continue
		}
		var exclude []time.Time
		if ev.Props.Get(ical.PropRecurrenceID) == nil {
			exclude = overrides[uid(ev.Component)]
		}
		if err := safely(func() error { return c.event(ev, loc, exclude) }); err != nil {
			return nil, fmt.Errorf("ics: event %q: %w", name, err)
		}
	}
	res.Exclude = c.ranges()
	return res, nil
}

// decode reads every VCALENDAR of r (usually one). The decoder shares
// br (bufio.NewReader returns a large enough *bufio.Reader as is), so
// skipping blank space between calendars here tells a clean end from a
// file cut inside a component. The decoder panics on some malformed
// lines; that is an error here.
func decode(r io.Reader) ([]*ical.Calendar, error) {
	br := bufio.NewReader(r)
	if b, _ := br.Peek(len(utf8BOM)); bytes.Equal(b, utf8BOM) {
		_, _ = br.Discard(len(utf8BOM))
	}
	dec := ical.NewDecoder(br)
	var cals []*ical.Calendar
	for {
		if err := skipSpace(br); err == io.EOF && len(cals) > 0 {
			return cals, nil
		} else if err == io.EOF {
			return nil, errors.New("ics: not an iCalendar file: it is empty")
		} else if err != nil {
			return nil, fmt.Errorf("ics: %w", err)
		}
		var cal *ical.Calendar
		err := safely(func() (err error) {
			cal, err = dec.Decode()
			return err
		})
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, errors.New("ics: not an iCalendar file: it ends inside a component (an END line is missing)")
		} else if err != nil {
			return nil, fmt.Errorf("ics: not an iCalendar file: %w", err)
		}
		cals = append(cals, cal)
	}
}

// skipSpace consumes white space; io.EOF when nothing else is left.
func skipSpace(br *bufio.Reader) error {
	for {
		b, err := br.ReadByte()
		if err != nil {
			return err
		}
		if !unicode.IsSpace(rune(b)) {
			return br.UnreadByte()
		}
	}
}

// zone is the result's zone: loc, else the first X-WR-TIMEZONE, else UTC.
func zone(cals []*ical.Calendar, loc *time.Location) (*time.Location, error) {
	if loc != nil {
		return loc, nil
	}
	for _, cal := range cals {
		if p := cal.Props.Get("X-WR-TIMEZONE"); p != nil && p.Value != "" {
			l, err := time.LoadLocation(p.Value)
			if err != nil {
				return nil, fmt.Errorf("ics: X-WR-TIMEZONE %q: %w", p.Value, err)
			}
			return l, nil
		}
	}
	return time.UTC, nil
}

// recurrenceIDs maps each UID to the occurrences that events with a
// RECURRENCE-ID replace (an override without a UID replaces nothing).
func recurrenceIDs(events []ical.Event, loc *time.Location) (map[string][]time.Time, error) {
	ids := map[string][]time.Time{}
	for i, ev := range events {
		p, u := ev.Props.Get(ical.PropRecurrenceID), uid(ev.Component)
		if p == nil || u == "" {
			continue
		}
		t, err := instant(p, loc)
		if err != nil {
			return nil, fmt.Errorf("ics: event %q: RECURRENCE-ID %q: %w", label(ev.Component, i+1), p.Value, err)
		}
		ids[u] = append(ids[u], t)
	}
	return ids, nil
}

// label names a component in messages: its SUMMARY, else its UID, else
// "VEVENT #n" (n > 0) or its kind.
func label(comp *ical.Component, n int) string {
	if s, err := comp.Props.Text(ical.PropSummary); err == nil && s != "" {
		return s
	}
	if u := uid(comp); u != "" {
		return u
	}
	if n > 0 {
		return fmt.Sprintf("%s #%d", comp.Name, n)
	}
	return comp.Name
}

func uid(comp *ical.Component) string {
	if p := comp.Props.Get(ical.PropUID); p != nil {
		return p.Value
	}
	return ""
}

// safely runs f, turning a panic in the libraries into an error.
func safely(f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("malformed input: %v", r)
		}
	}()
	return f()
}
