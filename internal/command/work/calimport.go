package work

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/ax-scheduler/ax/internal/command"
	"github.com/ax-scheduler/ax/internal/ics"
	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/model/calendar"
	"github.com/ax-scheduler/ax/trigger"
)

// maxICS bounds the iCalendar file ax calendar import reads.
const maxICS = 16 << 20

// calendarImportCmd is ax calendar import.
type calendarImportCmd struct {
	command.ClientBase
	timezone, from, to string
	dryRun             bool
	// now is the client's clock: the default -from is January 1 of its
	// year.
	now func() time.Time
}

// NewCalendarImport makes ax calendar import.
func NewCalendarImport(io *command.IO) command.Command {
	c := &calendarImportCmd{now: time.Now}
	c.Init(io, "calendar import", CalendarUsage)
	c.FS.StringVar(&c.timezone, "timezone", "", "IANA zone of the calendar and of the file's timed events (default: the file's X-WR-TIMEZONE, else UTC)")
	c.FS.StringVar(&c.from, "from", "", "first day listed, YYYY-MM-DD (default: January 1 of this year)")
	c.FS.StringVar(&c.to, "to", "", "day the list stops before, YYYY-MM-DD (default: -from plus two years)")
	c.FS.BoolVar(&c.dryRun, "dry-run", false, "print the calendar as JSON (as apply takes it) and write nothing")
	return c
}

func (c *calendarImportCmd) Run(ctx context.Context, args []string) error {
	cl, err := c.Connect(args, nil)
	if err != nil {
		return err
	}
	if c.FS.NArg() != 2 {
		return fmt.Errorf("calendar import: want a calendar name and an .ics file")
	}
	name, file := c.FS.Arg(0), c.FS.Arg(1)
	if err := model.ValidateName("name", name); err != nil {
		return fmt.Errorf("calendar import: %w", err)
	}
	res, err := c.parse(file)
	if err != nil {
		return fmt.Errorf("calendar import: %w", err)
	}
	src := filepath.Base(file)
	if file == "-" {
		src = "stdin"
	}
	cal := calendar.Calendar{Name: name, Description: "imported from " + src, Timezone: res.Timezone, Exclude: res.Exclude}
	// The include list of an existing calendar is kept.
	old, err := cl.GetCalendar(ctx, name)
	switch {
	case errors.Is(err, model.ErrNotFound):
	case err != nil:
		return err
	default:
		cal.Include = old.Include
	}
	for _, s := range res.Skipped {
		fmt.Fprintf(c.IO.Stderr, "skipped %s\n", s)
	}
	if c.dryRun {
		enc := json.NewEncoder(c.IO.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(cal)
	}
	if _, err := cl.PutCalendar(ctx, &cal); err != nil {
		return err
	}
	fmt.Fprintf(c.IO.Stdout, "calendar %s imported: %d entries from %d events (%d skipped)\n", name, len(res.Exclude), res.Events, len(res.Skipped))
	return nil
}

// parse converts file within the flags' days. Without -timezone, the
// days are those of the file's own zone, known once it is read: a file
// that names one is read again with the days in it.
func (c *calendarImportCmd) parse(file string) (*ics.Result, error) {
	data, err := c.IO.ReadFile(file, maxICS)
	if err != nil {
		return nil, err
	}
	var loc *time.Location
	if c.timezone != "" {
		if loc, err = trigger.Zone(c.timezone); err != nil {
			return nil, fmt.Errorf("-timezone: %w", err)
		}
	}
	res, err := c.parseIn(data, loc)
	if err != nil || loc != nil || res.Timezone == time.UTC.String() {
		return res, err
	}
	if loc, err = trigger.Zone(res.Timezone); err != nil {
		return nil, err
	}
	return c.parseIn(data, loc)
}

// parseIn converts data with the days of -from and -to in loc (UTC when
// nil; ics then takes the file's zone).
func (c *calendarImportCmd) parseIn(data []byte, loc *time.Location) (*ics.Result, error) {
	in := loc
	if in == nil {
		in = time.UTC
	}
	from := time.Date(c.now().In(in).Year(), time.January, 1, 0, 0, 0, 0, in)
	if c.from != "" {
		t, err := time.ParseInLocation(time.DateOnly, c.from, in)
		if err != nil {
			return nil, fmt.Errorf("-from %q: want YYYY-MM-DD", c.from)
		}
		from = t
	}
	to := from.AddDate(2, 0, 0)
	if c.to != "" {
		t, err := time.ParseInLocation(time.DateOnly, c.to, in)
		if err != nil {
			return nil, fmt.Errorf("-to %q: want YYYY-MM-DD", c.to)
		}
		to = t
	}
	return ics.Parse(bytes.NewReader(data), ics.Options{From: from, To: to, Location: loc})
}
