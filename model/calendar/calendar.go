// Package calendar holds the definitions of the time objects tasks
// share (protocol 8): exclusion calendars, which a trigger names to skip
// or move its fires on excluded days, and blackout windows, which hold
// back the fires of the tasks their selector matches. The trigger
// package evaluates them (trigger.Calendar, trigger.Blackout).
package calendar

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/trigger"
)

// Limits of a definition.
const (
	MaxEntries     = 10_000 // exclude + include entries, or ranges
	MaxDescription = 1024
	MaxSelector    = 32 // selector labels
)

// Meta is what the server sets on a definition it stores: its version
// (1 for a new one, one more on each put) and when and by whom it was
// created and last put.
type Meta struct {
	Version   uint64      `json:"version,omitempty"`
	CreatedAt *model.Time `json:"createdAt,omitempty"`
	UpdatedAt *model.Time `json:"updatedAt,omitempty"`
	UpdatedBy string      `json:"updatedBy,omitempty"`
}

// Stored returns the server's fields of a definition (a calendar's or a
// window's, through the embedding).
func (m *Meta) Stored() *Meta { return m }

// Calendar is an exclusion calendar: the days, in its timezone, on which
// the triggers that name it do not fire (docs/tasks.md, "Calendars").
// Version and the times are the server's.
type Calendar struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// Timezone is the IANA zone its dates are read in (default UTC).
	Timezone string `json:"timezone,omitempty"`
	// Exclude lists dates ("2026-12-25"), ranges of dates with both ends
	// included ("2026-12-24/2026-12-26") and weekdays ("sat", "sun").
	Exclude []string `json:"exclude"`
	// Include lists dates and ranges allowed whatever Exclude says (a
	// working Saturday).
	Include []string `json:"include,omitempty"`

	Meta
	// UsedBy lists the tasks whose trigger names the calendar (reads).
	UsedBy []string `json:"usedBy,omitempty"`
}

// List is the answer of GET /v1/calendars.
type List struct {
	Calendars []Calendar `json:"calendars"`
}

// Definition returns the calendar without what the server sets.
func (c *Calendar) Definition() Calendar {
	d := *c
	d.Meta, d.UsedBy = Meta{}, nil
	return d
}

// Normalize fills the default timezone and trims the entries.
func (c *Calendar) Normalize() {
	if c.Timezone == "" {
		c.Timezone = "UTC"
	}
	if c.Exclude == nil {
		c.Exclude = []string{}
	}
	for _, l := range [][]string{c.Exclude, c.Include} {
		for i := range l {
			l[i] = strings.TrimSpace(l[i])
		}
	}
}

// Validate checks the definition; errors name the field ("exclude[3]").
func (c *Calendar) Validate() error {
	if err := model.ValidateName("name", c.Name); err != nil {
		return err
	}
	if len(c.Description) > MaxDescription {
		return model.FieldErrorf("description", "longer than %d bytes", MaxDescription)
	}
	if n := len(c.Exclude) + len(c.Include); n > MaxEntries {
		return model.FieldErrorf("exclude", "at most %d entries in exclude and include, got %d", MaxEntries, n)
	}
	_, err := c.Compile()
	return err
}

// Compile returns the calendar as the trigger package evaluates it.
func (c *Calendar) Compile() (*trigger.Calendar, error) {
	loc, err := zone(c.Timezone)
	if err != nil {
		return nil, err
	}
	cal, err := trigger.NewCalendar(c.Name, loc, c.Exclude, c.Include)
	return cal, fieldError(err)
}

// Window is a blackout window: spans of time in which the tasks its
// selector matches do not fire; what it held back is handled by each
// task's catch-up policy when it ends (docs/tasks.md, "Blackout
// windows"). It repeats (Cron starts each span, which lasts Duration),
// lists Ranges, or both. Version and the times are the server's; Status
// is computed when it is read.
type Window struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// Timezone is the IANA zone of Cron and Ranges (default UTC).
	Timezone string `json:"timezone,omitempty"`
	// Cron starts each repeat; Duration (elapsed time) is how long it
	// lasts, at most the time to the next start.
	Cron     string         `json:"cron,omitempty"`
	Duration model.Duration `json:"duration,omitempty"`
	// Ranges lists dates, ranges of dates (both ends included) and ranges
	// of wall times ("2026-12-31T18:00/2027-01-01T06:00", the end
	// excluded).
	Ranges []string `json:"ranges,omitempty"`
	// Selector holds the labels a task must carry, all of them, to be
	// held back; an empty selector matches every task.
	Selector map[string]string `json:"selector,omitempty"`

	Meta
	Status *Status `json:"status,omitempty"`
}

// Status is where a window stands at the time of a read.
type Status struct {
	// Active says the window holds back its tasks now, From (the start of
	// the span holding now) Until (its end, and that of spans chained to
	// it).
	Active bool        `json:"active"`
	From   *model.Time `json:"from,omitempty"`
	Until  *model.Time `json:"until,omitempty"`
	// NextFrom and NextUntil are the next span that starts after now.
	NextFrom  *model.Time `json:"nextFrom,omitempty"`
	NextUntil *model.Time `json:"nextUntil,omitempty"`
	// Tasks lists the tasks the selector matches now.
	Tasks []string `json:"tasks"`
}

// WindowList is the answer of GET /v1/windows.
type WindowList struct {
	Windows []Window `json:"windows"`
}

// Definition returns the window without what the server sets.
func (w *Window) Definition() Window {
	d := *w
	d.Meta, d.Status = Meta{}, nil
	return d
}

// Normalize fills the default timezone and trims the ranges.
func (w *Window) Normalize() {
	if w.Timezone == "" {
		w.Timezone = "UTC"
	}
	for i := range w.Ranges {
		w.Ranges[i] = strings.TrimSpace(w.Ranges[i])
	}
}

// Validate checks the definition; errors name the field.
func (w *Window) Validate() error {
	if err := model.ValidateName("name", w.Name); err != nil {
		return err
	}
	switch {
	case len(w.Description) > MaxDescription:
		return model.FieldErrorf("description", "longer than %d bytes", MaxDescription)
	case w.Cron == "" && len(w.Ranges) == 0:
		return model.FieldErrorf("cron", "a window needs cron (with duration) or ranges")
	case w.Cron == "" && w.Duration != 0:
		return model.FieldErrorf("duration", "needs cron: it is how long each repeat lasts")
	case w.Cron != "" && w.Duration == 0:
		return model.FieldErrorf("duration", "required with cron: how long each repeat lasts")
	case len(w.Ranges) > MaxEntries:
		return model.FieldErrorf("ranges", "at most %d, got %d", MaxEntries, len(w.Ranges))
	case len(w.Selector) > MaxSelector:
		return model.FieldErrorf("selector", "at most %d labels, got %d", MaxSelector, len(w.Selector))
	}
	for _, k := range slices.Sorted(maps.Keys(w.Selector)) {
		if err := model.ValidateLabel("selector", k, w.Selector[k]); err != nil {
			return err
		}
	}
	_, err := w.Compile()
	return err
}

// Compile returns the window as the trigger package evaluates it.
func (w *Window) Compile() (*trigger.Blackout, error) {
	loc, err := zone(w.Timezone)
	if err != nil {
		return nil, err
	}
	var start trigger.Schedule
	if w.Cron != "" {
		if start, err = trigger.ParseCron(w.Cron, w.Timezone); err != nil {
			var te *trigger.Error
			if errors.As(err, &te) {
				return nil, model.FieldErrorf("cron", "%s", te.Message)
			}
			return nil, model.FieldErrorf("cron", "%v", err)
		}
	}
	b, err := trigger.NewBlackout(w.Name, loc, start, w.Duration.Std(), w.Ranges)
	return b, fieldError(err)
}

// Matches reports whether a task with labels is held back by the window.
func (w *Window) Matches(labels map[string]string) bool {
	for k, v := range w.Selector {
		if got, ok := labels[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// zone loads a definition's timezone, naming "timezone" when it fails.
func zone(name string) (*time.Location, error) {
	loc, err := trigger.Zone(name)
	if err != nil {
		var te *trigger.Error
		if errors.As(err, &te) {
			return nil, model.FieldErrorf("timezone", "%s", te.Message)
		}
		return nil, model.FieldErrorf("timezone", "%q: %v", name, err)
	}
	return loc, nil
}

// fieldError turns a *trigger.Error into a model error naming its field.
func fieldError(err error) error {
	var te *trigger.Error
	if err != nil && errors.As(err, &te) {
		return model.FieldErrorf(te.Field, "%s", te.Message)
	}
	if err != nil {
		return fmt.Errorf("calendar: %w", err)
	}
	return nil
}
