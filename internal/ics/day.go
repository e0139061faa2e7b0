package ics

import (
	"fmt"
	"sort"
	"time"
)

// day is a civil date, counted in days from 1970-01-01.
type day int64

// dayOf is the date of t's wall clock in t's own location.
func dayOf(t time.Time) day {
	y, m, d := t.Date()
	return day(time.Date(y, m, d, 0, 0, 0, 0, time.UTC).Unix() / 86400)
}

// start is the first instant of d in loc.
func (d day) start(loc *time.Location) time.Time {
	t := d.civil()
	return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, loc)
}

// civil is d at midnight UTC, the form all-day occurrences take.
func (d day) civil() time.Time { return time.Unix(int64(d)*86400, 0).UTC() }

func (d day) String() string { return d.civil().Format(time.DateOnly) }

// collector gathers the days events cover within a window of days.
type collector struct {
	loc         *time.Location
	first, last day // the window's days, inclusive both
	days        map[day]struct{}
	steps       int
}

// newCollector lists the days of loc that overlap [from, to).
func newCollector(from, to time.Time, loc *time.Location) *collector {
	first, last := dayOf(from.In(loc)), dayOf(to.In(loc))
	if !last.start(loc).Before(to) {
		last--
	}
	return &collector{loc: loc, first: first, last: last, days: map[day]struct{}{}}
}

// step counts one unit of work against MaxSteps.
func (c *collector) step() error {
	c.steps++
	if c.steps > MaxSteps {
		return fmt.Errorf("more than %d recurrence steps (ics.MaxSteps); narrow From and To", MaxSteps)
	}
	return nil
}

// cover adds the days [a, b] clipped to the window.
func (c *collector) cover(a, b day) error {
	a, b = max(a, c.first), min(b, c.last)
	for d := a; d <= b; d++ {
		if err := c.step(); err != nil {
			return err
		}
		c.days[d] = struct{}{}
		if len(c.days) > MaxDates {
			return fmt.Errorf("more than %d dates (ics.MaxDates) between %s and %s; narrow From and To", MaxDates, c.first, c.last)
		}
	}
	return nil
}

// ranges formats the collected days, sorted and merged.
func (c *collector) ranges() []string {
	days := make([]day, 0, len(c.days))
	for d := range c.days {
		days = append(days, d)
	}
	sort.Slice(days, func(i, j int) bool { return days[i] < days[j] })
	out := []string{}
	for i := 0; i < len(days); {
		j := i
		for j+1 < len(days) && days[j+1] == days[j]+1 {
			j++
		}
		if i == j {
			out = append(out, days[i].String())
		} else {
			out = append(out, days[i].String()+"/"+days[j].String())
		}
		i = j + 1
	}
	return out
}
