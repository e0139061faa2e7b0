package fsm

import (
	"strings"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/model/calendar"
)

func msOf(s string) int64 {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t.UnixMilli()
}

// TestFSM_Calendars: a trigger names only calendars that exist, a
// calendar a task names cannot be deleted, reads resolve a task's
// calendars into its schedule, and fire ignores a fire at an excluded
// time; below protocol 8 a task naming a calendar is refused.
func TestFSM_Calendars(t *testing.T) {
	fx := newPolicyFixture(t, 8)
	daily := cronTask("daily", "0 12 * * *")
	daily.Trigger.Calendars = []string{"holidays"}
	r := fx.put(daily)
	if r.Err == nil || r.Err.Field != "trigger.calendars[0]" || !strings.Contains(r.Err.Message, "no calendar named holidays") {
		t.Fatalf("a task naming a missing calendar: %v, want an error naming trigger.calendars[0]", r.Err)
	}
	if r := fx.do(CmdPutCalendar, "", PutCalendar{Calendar: calendar.Calendar{Name: "holidays", Exclude: []string{"2026-12-01"}}}); r.Err != nil {
		t.Fatal(r.Err)
	}
	fx.mustPut(daily)

	tk, err := fx.f.GetTask("daily")
	if err != nil {
		t.Fatal(err)
	}
	s, err := tk.Schedule()
	if err != nil {
		t.Fatalf("Schedule of a resolved task: %v", err)
	}
	if got := s.Next(time.UnixMilli(t0)); !got.Equal(time.UnixMilli(msOf("2026-12-02T12:00:00Z"))) {
		t.Errorf("next fire %s, want 2026-12-02T12:00Z (12-01 excluded)", got.UTC())
	}
	if fr := fx.fireAt("daily", msOf("2026-12-01T12:00:00Z"), 0); fr.Ignored != 1 || len(fr.Created) != 0 {
		t.Errorf("a fire on an excluded day: %+v, want ignored", fr)
	}
	if fr := fx.fireAt("daily", msOf("2026-12-02T12:00:00Z"), 0); len(fr.Created) != 1 {
		t.Errorf("a fire on an allowed day: %+v, want created", fr)
	}

	r = fx.do(CmdDeleteCalendar, "", TaskRef{Name: "holidays"})
	if r.Err == nil || r.Err.Code != model.CodePrecondition || !strings.Contains(r.Err.Message, "used by task(s) daily") {
		t.Errorf("deleting a calendar in use: %v, want failed_precondition naming daily", r.Err)
	}
	list, err := fx.f.Calendars()
	if err != nil || len(list.Calendars) != 1 || strings.Join(list.Calendars[0].UsedBy, ",") != "daily" || list.Calendars[0].Version != 1 {
		t.Errorf("Calendars() = %+v, %v", list, err)
	}

	old := newPolicyFixture(t, 7)
	if r := old.put(daily); r.Err == nil || r.Err.Field != "trigger.calendars" || r.Err.Code != model.CodePrecondition {
		t.Errorf("at protocol 7: %v, want failed_precondition naming trigger.calendars", r.Err)
	}
}

// TestFSM_WindowHold: fire ignores a fire of a task a blackout window
// holds at the leader's time when it became due inside the hold, and
// takes one due before the hold began (a fire proposed just before it);
// tasks the selector does not match fire.
func TestFSM_WindowHold(t *testing.T) {
	fx := newPolicyFixture(t, 8)
	w := calendar.Window{Name: "freeze", Ranges: []string{"2026-11-30T12:30/2026-11-30T13:00"}, Selector: map[string]string{"team": "a"}}
	if r := fx.do(CmdPutWindow, "", PutWindow{Window: w}); r.Err != nil {
		t.Fatal(r.Err)
	}
	held, free := cronTask("held", "* * * * *"), cronTask("free", "* * * * *")
	held.Labels = map[string]string{"team": "a"}
	fx.mustPut(held)
	fx.mustPut(free)
	const minute = 60_000
	fx.now = t0 + 31*minute // the leader's time: inside the hold
	if fr := fx.fireAt("held", t0+30*minute, 0); fr.Ignored != 1 {
		t.Errorf("a fire due inside the hold: %+v, want ignored", fr)
	}
	if fr := fx.fireAt("held", t0+29*minute, 40_000); len(fr.Created) != 1 {
		t.Errorf("a fire due before the hold began: %+v, want created", fr)
	}
	if fr := fx.fireAt("free", t0+30*minute, 0); len(fr.Created) != 1 {
		t.Errorf("a task the selector does not match: %+v, want created", fr)
	}
	tk, _ := fx.f.GetTask("held")
	if tk.Resolved == nil || len(tk.Resolved.Blackouts) != 1 {
		t.Errorf("GetTask did not resolve the window: %+v", tk.Resolved)
	}
	if r := fx.do(CmdDeleteWindow, "", TaskRef{Name: "freeze"}); r.Err != nil {
		t.Fatal(r.Err)
	}
	if fr := fx.fireAt("held", t0+30*minute, 0); len(fr.Created) != 1 {
		t.Errorf("after the window's deletion: %+v, want created", fr)
	}
}

// TestFSM_PriorityGate: policy.priority is refused below protocol 8
// (an older replica would drop it from the stored definition) and out
// of its range; at 8 it is stored.
func TestFSM_PriorityGate(t *testing.T) {
	old := newPolicyFixture(t, 7)
	if r := old.put(eventTask("job", model.Policy{Priority: 5})); r.Err == nil || r.Err.Field != "policy.priority" || r.Err.Code != model.CodePrecondition {
		t.Errorf("priority at protocol 7: %v, want failed_precondition naming policy.priority", r.Err)
	}
	fx := newPolicyFixture(t, 8)
	if r := fx.put(eventTask("job", model.Policy{Priority: 1001})); r.Err == nil || r.Err.Field != "policy.priority" {
		t.Errorf("priority 1001: %v, want an error naming policy.priority", r.Err)
	}
	fx.mustPut(eventTask("job", model.Policy{Priority: -7}))
	if tk, err := fx.f.GetTask("job"); err != nil || tk.Policy.Priority != -7 {
		t.Errorf("stored priority: %+v, %v", tk, err)
	}
}
