package view

import (
	"strings"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/model/calendar"
)

// TestWindows: the SCHEDULE, SELECTOR, ACTIVE, NEXT and TASKS cells.
func TestWindows(t *testing.T) {
	at := func(h int) *model.Time { return &model.Time{Time: time.Date(2026, 12, 24, h, 0, 0, 0, time.UTC)} }
	wins := []calendar.Window{
		{Name: "freeze", Timezone: "Europe/Berlin", Cron: "0 18 * * 5", Duration: model.Duration(60 * time.Hour), Selector: map[string]string{"team": "billing"},
			Status: &calendar.Status{Active: true, From: at(1), Until: at(9), NextFrom: at(18), NextUntil: at(20), Tasks: []string{"a", "b"}}},
		{Name: "xmas", Ranges: []string{"2026-12-24/2026-12-26", "2026-12-31"}, Status: &calendar.Status{Tasks: []string{}}},
		{Name: "one", Ranges: []string{"2026-12-24"}},
	}
	var b strings.Builder
	if err := Windows(&b, wins); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"freeze Europe/Berlin 0 18 * * 5 for 2d12h team=billing until 2026-12-24T09:00:00Z 2026-12-24T18:00:00Z - 2026-12-24T20:00:00Z 2",
		"xmas - 2 ranges (every task) no - 0",
		"one - 2026-12-24 (every task) - - -",
	} {
		if !strings.Contains(squeeze(b.String()), want) {
			t.Errorf("got\n%s\nwant a line with %q", b.String(), want)
		}
	}
}

// TestCalendars: EXCLUDE counts and shows the first three entries.
func TestCalendars(t *testing.T) {
	var b strings.Builder
	cals := []calendar.Calendar{{Name: "us", Timezone: "America/New_York", Exclude: []string{"sat", "sun", "2026-12-25", "2026-12-31"}, Include: []string{"2026-10-10"}, UsedBy: []string{"payroll"}},
		{Name: "none", Exclude: []string{}}}
	if err := Calendars(&b, cals); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"us America/New_York 4 (sat, sun, 2026-12-25, ...) 1 payroll", "none - 0 0 -"} {
		if !strings.Contains(squeeze(b.String()), want) {
			t.Errorf("got\n%s\nwant a line with %q", b.String(), want)
		}
	}
}

// squeeze is a table with each run of spaces made one.
func squeeze(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.Join(strings.Fields(l), " ")
	}
	return strings.Join(lines, "\n")
}

// TestPools: the RATE cell shows a pool's rate limit, "-" without one.
func TestPools(t *testing.T) {
	var b strings.Builder
	pools := []model.Pool{{Name: "api", Slots: 8, Busy: 3, Queued: 1, RateLimit: &model.RateLimit{Count: 10, Per: model.Duration(time.Minute)}, Tasks: []string{"a", "b"}},
		{Name: "db", Slots: 2}}
	if err := Pools(&b, pools); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"NAME SLOTS BUSY QUEUED RATE TASKS", "api 8 3 1 10/1m0s a", "db 2 0 0 - -"} {
		if !strings.Contains(squeeze(b.String()), want) {
			t.Errorf("got\n%s\nwant a line with %q", b.String(), want)
		}
	}
}
