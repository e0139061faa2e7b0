package sched

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/fsm/command"
	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/model/calendar"
)

// tens returns the offsets from..to seconds in steps of ten.
func tens(from, to int) []time.Duration {
	var out []time.Duration
	for s := from; s <= to; s += 10 {
		out = append(out, secs(s))
	}
	return out
}

// TestScheduler_Run_BlackoutWindow: a window holds its tasks' fires
// from its start; at its end the task's catch-up policy decides what it
// held back: all of them late (catchup all), or none of them, a misfire
// naming the window (catchup latest: the latest is the one due at the
// end, on time; none: that one fires, on time, too).
func TestScheduler_Run_BlackoutWindow(t *testing.T) {
	for _, c := range []struct {
		catchup string
		window  time.Duration
		want    []time.Duration
		misfire string
	}{
		{"all", 2 * time.Minute, tens(10, 120), ""},
		{"latest", time.Minute, append(tens(10, 50), secs(120)), "6 fire time(s) from 2030-01-01T00:01:00.000Z to 2030-01-01T00:01:50.000Z not fired"},
		{"none", time.Minute, append(tens(10, 50), secs(120)), "6 fire time(s) from 2030-01-01T00:01:00.000Z to 2030-01-01T00:01:50.000Z not fired"},
	} {
		t.Run(c.catchup, func(t *testing.T) {
			h := newHarness(t)
			h.do(command.TypeSetProto, command.SetProto{Proto: 8})
			h.do(command.TypePutWindow, command.PutWindow{Window: calendar.Window{Name: "freeze",
				Ranges: []string{"2030-01-01T00:01/2030-01-01T00:02"}, Selector: map[string]string{"team": "a"}}})
			tk := cronTask("tick", "*/10 * * * * *", c.catchup)
			tk.Policy.CatchupWindow, tk.Labels = model.Duration(c.window), map[string]string{"team": "a"}
			h.putTask(tk)
			_, stop := h.start(Config{})
			defer stop()
			for i := 1; i <= 5; i++ {
				h.step(10*time.Second, at(secs(10*i)))
				h.waitInstances("tick", i)
			}
			h.step(10*time.Second, at(secs(60))) // t0+60s: the hold begins
			h.settle(at(secs(120)))              // armed for its end, nothing fired
			if n := len(h.instances("tick")); n != 5 {
				t.Fatalf("%d instances inside the hold, want 5", n)
			}
			h.advance(60 * time.Second)
			got := h.waitInstances("tick", len(c.want))
			if !slices.Equal(offsets(got), c.want) {
				t.Errorf("instances at %v, want %v", offsets(got), c.want)
			}
			late := got[5]
			if in := h.state(mustID(t, late.ID)); !strings.Contains(firedEvent(in), "held back by blackout window freeze") && c.catchup == "all" {
				t.Errorf("the fired event of a held fire says %q, want the window named", firedEvent(in))
			}
			mis := h.misfires("tick")
			if c.misfire == "" && len(mis) != 0 || c.misfire != "" && (len(mis) != 1 || !strings.Contains(mis[0].Message, c.misfire) ||
				!strings.Contains(mis[0].Message, "held back by blackout window freeze")) {
				t.Errorf("misfires %+v, want %q held back by freeze", mis, c.misfire)
			}
		})
	}
}

// TestScheduler_Run_CalendarMove: a fire its calendar moves to the
// previous allowed day fires there, and its instance says from where.
func TestScheduler_Run_CalendarMove(t *testing.T) {
	h := newHarness(t)
	h.do(command.TypeSetProto, command.SetProto{Proto: 8})
	h.do(command.TypePutCalendar, command.PutCalendar{Calendar: calendar.Calendar{Name: "hol", Exclude: []string{"2030-01-02"}}})
	tk := cronTask("monthly", "0 0 12 2 * *", "latest") // the 2nd at noon
	tk.Trigger.Calendars, tk.Trigger.OnExcluded = []string{"hol"}, "previous"
	h.putTask(tk)
	_, stop := h.start(Config{})
	defer stop()
	h.step(12*time.Hour, at(12*time.Hour))
	got := h.waitInstances("monthly", 1)
	if off := got[0].ScheduledAt.Sub(t0); off != 12*time.Hour {
		t.Fatalf("fired at t0+%s, want t0+12h (the 1st at noon)", off)
	}
	if msg := firedEvent(h.state(mustID(t, got[0].ID))); !strings.Contains(msg, "moved from 2030-01-02T12:00:00.000Z") {
		t.Errorf("fired event %q, want it moved from the 2nd", msg)
	}
}
