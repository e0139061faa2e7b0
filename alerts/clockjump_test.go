package alerts

import (
	"strings"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/clock"
	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/model/member"
)

// TestWatchdog_ClockJump: clock_jump is raised for this node from its own
// step and for a member from what it answers the clock monitor, kept
// while a member does not answer, and resolved once the step is no longer
// reported (10 min after it, and nothing of it held), with a firing and
// a resolved notification each.
func TestWatchdog_ClockJump(t *testing.T) {
	rs := newRuleState(t)
	sc := clock.NewSteppingClock(time.UnixMilli(t0ms))
	base := clock.NewBase(sc, time.Second, 10*time.Second)
	rm := &ruleMembers{clock: sc}
	m := clock.NewMonitor(clock.MonitorConfig{Self: "n1", Raw: sc, Base: base, MaxSkew: time.Second, Interval: time.Second,
		Peers: rm.peers, Ask: rm.ask})
	rs.a.cfg.Clocks = m
	now := func() int64 { return sc.Now().UnixMilli() }
	answer := func(offsets map[string]*member.ClockJump) {
		answers := map[string]memberAnswer{}
		for id, j := range offsets {
			answers[id] = memberAnswer{jump: j}
		}
		rm.round(m, answers)
	}
	answer(map[string]*member.ClockJump{"n2": nil, "n3": nil})
	rs.step(now())
	if rs.firing("clock_jump:n1") {
		t.Fatal("raised with no step")
	}
	// This node's clock steps back 3m: raised at the next evaluation.
	sc.Advance(time.Second)
	sc.Step(-3 * time.Minute)
	base.Now()
	answer(map[string]*member.ClockJump{"n2": nil, "n3": nil})
	rs.step(now())
	al, ok := rs.f.FiringAlert("clock_jump:n1")
	if !ok || al.Subject.Node != "n1" || al.Severity != model.SeverityWarning || !strings.Contains(al.Summary, "stepped back by 3m0s") ||
		al.Details["step"] != "-3m0s" {
		t.Fatalf("alert %+v (firing %v), want clock_jump for n1, back 3m", al, ok)
	}
	// It steps again while the alert fires: refreshed at once to show
	// the latest step, with no second notification.
	sc.Advance(time.Second)
	sc.Step(-2 * time.Second)
	base.Now()
	answer(map[string]*member.ClockJump{"n2": nil, "n3": nil})
	rs.step(now())
	if al, _ := rs.f.FiringAlert("clock_jump:n1"); al.Details["step"] != "-2s" || al.Count != 2 {
		t.Fatalf("after a second step: alert %+v, want it refreshed with the -2s step", al)
	}
	// n2 reports a forward step.
	j := &member.ClockJump{At: model.Time{Time: sc.Now()}, Step: model.Duration(10 * time.Minute), Reason: "r"}
	answer(map[string]*member.ClockJump{"n2": j, "n3": nil})
	rs.step(now())
	if al, ok := rs.f.FiringAlert("clock_jump:n2"); !ok || al.Subject.Node != "n2" || !strings.Contains(al.Summary, "stepped forward by 10m0s") {
		t.Fatalf("alert %+v (firing %v), want clock_jump for n2, forward 10m", al, ok)
	}
	// n2 falls silent: its alert is kept.
	sc.Advance(20 * time.Second)
	answer(map[string]*member.ClockJump{"n3": nil})
	rs.step(now())
	if !rs.firing("clock_jump:n2") {
		t.Fatal("resolved while n2 did not answer")
	}
	// It answers with no step to report: resolved.
	answer(map[string]*member.ClockJump{"n2": nil, "n3": nil})
	rs.step(now())
	if rs.firing("clock_jump:n2") {
		t.Fatal("not resolved once n2 no longer reports a step")
	}
	rs.wantEvents("clock_jump:n2", model.AlertFiring, model.AlertResolved)
	// This node's step: the verdict of the members (n2, n3 measured
	// after it) ends the hold; reported for 10 min.
	sc.Advance(9 * time.Minute)
	answer(map[string]*member.ClockJump{"n2": nil, "n3": nil})
	rs.step(now())
	if !rs.firing("clock_jump:n1") {
		t.Fatal("resolved within 10 min of the step")
	}
	sc.Advance(time.Minute)
	answer(map[string]*member.ClockJump{"n2": nil, "n3": nil})
	rs.step(now())
	if rs.firing("clock_jump:n1") {
		t.Fatal("not resolved 10 min after the step")
	}
	rs.wantEvents("clock_jump:n1", model.AlertFiring, model.AlertResolved)
}
