package view

import (
	"fmt"
	"io"
	"strings"

	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/model/calendar"
)

// listShown is how many entries of a list a table cell shows.
const listShown = 3

// Calendars prints exclusion calendars as a table: the number of
// exclude entries with the first few, of include entries, and the tasks
// whose trigger names each.
func Calendars(w io.Writer, cals []calendar.Calendar) error {
	tw := newTable(w)
	row(tw, "NAME", "TIMEZONE", "EXCLUDE", "INCLUDE", "USED BY")
	for _, c := range cals {
		row(tw, c.Name, orDash(c.Timezone), counted(c.Exclude), len(c.Include), orDash(firstOf(c.UsedBy)))
	}
	return tw.Flush()
}

// Pools prints pools of slots as a table: their slots, the instances
// holding one and waiting for one, their rate limit and the tasks that
// use them.
func Pools(w io.Writer, pools []model.Pool) error {
	tw := newTable(w)
	row(tw, "NAME", "SLOTS", "BUSY", "QUEUED", "RATE", "TASKS")
	for _, p := range pools {
		rate := "-"
		if l := p.RateLimit; l != nil {
			rate = fmt.Sprintf("%d/%s", l.Count, l.Per.Std())
		}
		row(tw, p.Name, p.Slots, p.Busy, p.Queued, rate, orDash(firstOf(p.Tasks)))
	}
	return tw.Flush()
}

// Windows prints blackout windows as a table, with where each stands at
// the time of the read: active until when, the next span, and how many
// tasks its selector matches.
func Windows(w io.Writer, wins []calendar.Window) error {
	tw := newTable(w)
	row(tw, "NAME", "TIMEZONE", "SCHEDULE", "SELECTOR", "ACTIVE", "NEXT", "TASKS")
	for _, win := range wins {
		active, next, tasks := "-", "-", "-"
		if st := win.Status; st != nil {
			active, tasks = "no", fmt.Sprint(len(st.Tasks))
			if st.Active {
				active = "until " + fmtTimePtr(st.Until)
			}
			if st.NextFrom != nil {
				next = fmtTimePtr(st.NextFrom) + " - " + fmtTimePtr(st.NextUntil)
			}
		}
		sel := "(every task)"
		if len(win.Selector) > 0 {
			sel = joinLabels(win.Selector)
		}
		row(tw, win.Name, orDash(win.Timezone), schedule(win), sel, active, next, tasks)
	}
	return tw.Flush()
}

// schedule words when a window holds: "0 22 * * 5 for 2d12h", "3
// ranges", or both joined by " + ".
func schedule(w calendar.Window) string {
	var parts []string
	if w.Cron != "" {
		parts = append(parts, w.Cron+" for "+Human(w.Duration.Std()))
	}
	if n := len(w.Ranges); n == 1 {
		parts = append(parts, w.Ranges[0])
	} else if n > 1 {
		parts = append(parts, fmt.Sprintf("%d ranges", n))
	}
	return orDash(strings.Join(parts, " + "))
}

// counted is the length of l and its first entries: "5 (a, b, c, ...)";
// "0" for none.
func counted(l []string) string {
	if len(l) == 0 {
		return "0"
	}
	return fmt.Sprintf("%d (%s)", len(l), firstOf(l))
}

// firstOf joins the first listShown entries of l, "..." marking more.
func firstOf(l []string) string {
	if len(l) > listShown {
		return strings.Join(l[:listShown], ", ") + ", ..."
	}
	return strings.Join(l, ", ")
}

// fmtTimePtr is fmtTime of a time that may be absent.
func fmtTimePtr(t *model.Time) string {
	if t == nil {
		return "-"
	}
	return fmtTime(*t)
}
