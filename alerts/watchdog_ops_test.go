package alerts

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/clock"
	"github.com/ax-scheduler/ax/dispatch"
	"github.com/ax-scheduler/ax/fsm/command"
	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/model/member"
	"github.com/ax-scheduler/ax/wheel"
)

// events returns the pending notifications of alert id, oldest first.
func (rs *ruleState) events(id string) []string {
	rs.t.Helper()
	pend, err := rs.f.PendingNotifications(1000)
	if err != nil {
		rs.t.Fatal(err)
	}
	var out []string
	for _, tr := range pend {
		if tr.Alert.ID == id {
			out = append(out, tr.Event)
		}
	}
	return out
}

// lifecycle checks an alert's life: raised once with a firing
// notification, not re-notified by later raises, resolved with a
// resolved notification.
func (rs *ruleState) wantEvents(id string, want ...string) {
	rs.t.Helper()
	got := rs.events(id)
	if len(got) != len(want) {
		rs.t.Fatalf("notifications of %s: got %v, want %v", id, got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			rs.t.Fatalf("notifications of %s: got %v, want %v", id, got, want)
		}
	}
}

// ruleMembers are the members a rule test's clock monitor asks: those
// in answers answer (their clock's offset from the node's, their latest
// step), the others do not.
type ruleMembers struct {
	mu      sync.Mutex
	clock   wheel.Clock // the node's
	answers map[string]memberAnswer
	members []clock.Peer // the configuration (default rulePeers)
}

type memberAnswer struct {
	off  time.Duration
	jump *member.ClockJump
}

func (rm *ruleMembers) peers(context.Context) ([]clock.Peer, error) {
	rm.mu.Lock()
	defer rm.mu.Unlock()
	if rm.members != nil {
		return rm.members, nil
	}
	return rulePeers, nil
}

func (rm *ruleMembers) ask(_ context.Context, addr string) (time.Time, *member.ClockJump, error) {
	rm.mu.Lock()
	defer rm.mu.Unlock()
	a, ok := rm.answers[addr]
	if !ok {
		return time.Time{}, nil, errors.New("no answer")
	}
	return rm.clock.Now().Add(a.off), a.jump, nil
}

// round is one clock-monitor round at the node's clock's time: the
// members in answers answer.
func (rm *ruleMembers) round(m *clock.Monitor, answers map[string]memberAnswer) {
	rm.mu.Lock()
	rm.answers = answers
	rm.mu.Unlock()
	m.Measure(context.Background())
}

// newRuleClock gives rs a clock monitor on a fake clock, as the leader's.
func newRuleClock(rs *ruleState) (*ruleClock, *wheel.FakeClock) {
	fc := wheel.NewFakeClock(time.UnixMilli(t0ms))
	rm := &ruleMembers{clock: fc}
	m := clock.NewMonitor(clock.MonitorConfig{Self: "n1", Raw: fc, Base: clock.NewBase(fc, time.Second, 10*time.Second),
		MaxSkew: time.Second, Interval: time.Second, Peers: rm.peers, Ask: rm.ask})
	rs.a.cfg.Clocks = m
	return &ruleClock{m: m, members: rm}, fc
}

// ruleClock is a rule test's clock monitor and the members it asks.
type ruleClock struct {
	m       *clock.Monitor
	members *ruleMembers
}

var rulePeers = []clock.Peer{{ID: "n1", HTTP: "n1", Voter: true}, {ID: "n2", HTTP: "n2", Voter: true}, {ID: "n3", HTTP: "n3", Voter: true}}

// round is one clock-monitor round at the fake clock's time: the members
// in offsets answer with those offsets.
func round(rc *ruleClock, _ *wheel.FakeClock, offsets map[string]time.Duration) {
	answers := map[string]memberAnswer{}
	for id, off := range offsets {
		answers[id] = memberAnswer{off: off}
	}
	rc.members.round(rc.m, answers)
}

func TestWatchdog_ClusterRules(t *testing.T) {
	sec := int64(1000)
	t.Run("member_unreachable", func(t *testing.T) {
		rs := newRuleState(t)
		m, fc := newRuleClock(rs)
		at := func(s int64) int64 { fc.Set(time.UnixMilli(t0ms + s*sec)); return t0ms + s*sec }
		round(m, fc, map[string]time.Duration{"n2": 0, "n3": 0})
		for s := int64(10); s <= 30; s += 10 {
			now := at(s)
			round(m, fc, map[string]time.Duration{"n2": 0})
			if rs.step(now); rs.firing("member_unreachable:n3") {
				t.Fatalf("raised %ds after its last answer (grace 30s)", s)
			}
		}
		now := at(31)
		round(m, fc, map[string]time.Duration{"n2": 0})
		rs.step(now)
		al, ok := rs.f.FiringAlert("member_unreachable:n3")
		if !ok || al.Subject.Node != "n3" {
			t.Fatalf("alert %+v, firing %v", al, ok)
		}
		if items := rs.step(at(35)); len(items) != 0 {
			t.Errorf("re-proposed within the refresh period: %+v", items)
		}
		now = at(40)
		round(m, fc, map[string]time.Duration{"n2": 0, "n3": 0})
		rs.step(now)
		if rs.firing("member_unreachable:n3") {
			t.Error("not resolved after it answered")
		}
		rs.wantEvents("member_unreachable:n3", model.AlertFiring, model.AlertResolved)
	})
	t.Run("member_unreachable resolves when the member is removed", func(t *testing.T) {
		rs := newRuleState(t)
		m, fc := newRuleClock(rs)
		round(m, fc, map[string]time.Duration{"n2": 0})
		fc.Set(time.UnixMilli(t0ms + 31*sec))
		round(m, fc, map[string]time.Duration{"n2": 0})
		rs.step(t0ms + 31*sec)
		if !rs.firing("member_unreachable:n3") {
			t.Fatal("a member that never answered was not raised")
		}
		m.members.members = rulePeers[:2] // n3 is removed
		m.members.round(m.m, m.members.answers)
		rs.step(t0ms + 32*sec)
		if rs.firing("member_unreachable:n3") {
			t.Error("not resolved after its removal")
		}
	})
	t.Run("member_unreachable holds while the monitor is not running", func(t *testing.T) {
		rs := newRuleState(t)
		m, fc := newRuleClock(rs)
		round(m, fc, map[string]time.Duration{"n2": 0})
		fc.Set(time.UnixMilli(t0ms + 31*sec))
		round(m, fc, map[string]time.Duration{"n2": 0})
		rs.step(t0ms + 31*sec)
		fc.Set(time.UnixMilli(t0ms + 300*sec)) // no round since: stale
		if items := rs.step(t0ms + 300*sec); len(items) != 0 {
			t.Errorf("changed with a stale monitor: %+v", items)
		}
	})
	t.Run("clock_skew", func(t *testing.T) {
		rs := newRuleState(t)
		m, fc := newRuleClock(rs)
		round(m, fc, map[string]time.Duration{"n2": 0, "n3": 900 * time.Millisecond})
		if rs.step(t0ms); rs.firing("clock_skew:n3") {
			t.Fatal("raised within -max-clock-skew")
		}
		fc.Set(time.UnixMilli(t0ms + sec))
		round(m, fc, map[string]time.Duration{"n2": 0, "n3": 5 * time.Second})
		rs.step(t0ms + sec)
		al, ok := rs.f.FiringAlert("clock_skew:n3")
		if !ok || al.Subject.Node != "n3" || al.Details["offset"] != "5s" {
			t.Fatalf("alert %+v, firing %v", al, ok)
		}
		if items := rs.step(t0ms + 2*sec); len(items) != 0 {
			t.Errorf("re-proposed within the refresh period: %+v", items)
		}
		fc.Set(time.UnixMilli(t0ms + 3*sec))
		round(m, fc, map[string]time.Duration{"n2": 0, "n3": 10 * time.Millisecond})
		rs.step(t0ms + 3*sec)
		if rs.firing("clock_skew:n3") {
			t.Error("not resolved when back within")
		}
		rs.wantEvents("clock_skew:n3", model.AlertFiring, model.AlertResolved)
	})
	t.Run("executor_lost", func(t *testing.T) {
		rs := newRuleState(t)
		fc := wheel.NewFakeClock(time.UnixMilli(t0ms))
		d := dispatch.New(dispatch.Config{Lease: 10 * time.Second, Now: fc.Now}, rs.f, nil)
		rs.disp = d
		ctx := context.Background()
		beat := func() {
			if _, err := d.Heartbeat(ctx, model.HeartbeatRequest{Executor: "e1"}); err != nil {
				t.Fatal(err)
			}
		}
		rs.apply(t0ms, command.TypePutTask, command.PutTask{Task: *eventTask("job")})
		id := rs.trigger(t0ms, "job")
		beat()
		rs.apply(t0ms, command.TypeLease, command.Lease{Executor: "e1", IDs: []uint64{id}, LeaseMs: 3_600_000})
		fc.Set(time.UnixMilli(t0ms + 10*sec))
		if rs.step(t0ms + 10*sec); rs.firing("executor_lost:e1") {
			t.Fatal("raised within a lease of its last heartbeat")
		}
		fc.Set(time.UnixMilli(t0ms + 11*sec))
		rs.step(t0ms + 11*sec)
		al, ok := rs.f.FiringAlert("executor_lost:e1")
		if !ok || al.Subject.Executor != "e1" || al.Details["running"] != "1" {
			t.Fatalf("alert %+v, firing %v", al, ok)
		}
		if items := rs.step(t0ms + 12*sec); len(items) != 0 {
			t.Errorf("re-proposed within the refresh period: %+v", items)
		}
		// A new leader's dispatcher, which has not heard from it, keeps it.
		rs.disp = dispatch.New(dispatch.Config{Lease: 10 * time.Second, Now: fc.Now}, rs.f, nil)
		if rs.step(t0ms + 13*sec); !rs.firing("executor_lost:e1") {
			t.Fatal("resolved by a dispatcher that has not heard from it")
		}
		rs.disp = d
		beat()
		rs.step(t0ms + 14*sec)
		if rs.firing("executor_lost:e1") {
			t.Error("not resolved after it was heard from")
		}
		rs.wantEvents("executor_lost:e1", model.AlertFiring, model.AlertResolved)
	})
}

func TestWatchdog_TaskRules(t *testing.T) {
	min := int64(60_000)
	t.Run("queue_full", func(t *testing.T) {
		rs := newRuleState(t)
		tk := eventTask("job")
		tk.Policy.MaxQueued = 1
		rs.apply(t0ms, command.TypePutTask, command.PutTask{Task: *tk})
		first := rs.trigger(t0ms, "job")
		rs.apply(t0ms, command.TypeLease, command.Lease{Executor: "e1", IDs: []uint64{first}, LeaseMs: 3_600_000})
		rs.trigger(t0ms, "job") // queued
		if rs.step(t0ms + 1000); rs.firing("queue_full:job") {
			t.Fatal("raised without an overflow")
		}
		skipped := rs.trigger(t0ms+2000, "job")
		if in, _ := rs.f.GetInstance(skipped); in.State != model.StateSkipped {
			t.Fatalf("third instance %s, want SKIPPED", in.State)
		}
		rs.step(t0ms + 3000)
		al, ok := rs.f.FiringAlert("queue_full:job")
		if !ok || al.Subject.Instance != model.FormatID(skipped) || al.Severity != model.SeverityWarning {
			t.Fatalf("alert %+v, firing %v", al, ok)
		}
		if items := rs.step(t0ms + 4000); len(items) != 0 {
			t.Errorf("re-proposed within the refresh period: %+v", items)
		}
		if rs.step(t0ms + 10*min); !rs.firing("queue_full:job") {
			t.Fatal("resolved within the quiet period")
		}
		rs.step(t0ms + 2000 + 10*min + 1000)
		if rs.firing("queue_full:job") {
			t.Error("not resolved after the quiet period")
		}
		rs.wantEvents("queue_full:job", model.AlertFiring, model.AlertResolved)
	})
	t.Run("frequency_anomaly", func(t *testing.T) {
		rs := newRuleState(t)
		tk := &model.Task{Name: "hourly", Trigger: model.Trigger{Type: model.TriggerCron, Expression: "0 * * * *"},
			Action: model.Action{Type: model.ActionShell, Command: "true"}}
		rs.apply(t0ms-min, command.TypePutTask, command.PutTask{Task: *tk}) // its first fire is t0
		fire := func(at int64) {
			rs.apply(at, command.TypeFire, command.Fire{Tasks: []command.TaskFire{{Task: "hourly", Version: 1, At: at}}})
		}
		fire(t0ms)
		fire(t0ms + min) // one more than the schedule: within the slack
		if rs.step(t0ms + 2*min); rs.firing("frequency_anomaly:hourly") {
			t.Fatal("raised within the slack")
		}
		fire(t0ms + 2*min)
		rs.step(t0ms + 3*min)
		al, ok := rs.f.FiringAlert("frequency_anomaly:hourly")
		if !ok || al.Severity != model.SeverityCritical || al.Details["instances"] != "3" || al.Details["allowed"] != "1" {
			t.Fatalf("alert %+v, firing %v", al, ok)
		}
		if items := rs.step(t0ms + 3*min + 5000); len(items) != 0 {
			t.Errorf("re-proposed within the refresh period: %+v", items)
		}
		// The window passes the duplicates.
		if rs.step(t0ms + 59*min); !rs.firing("frequency_anomaly:hourly") {
			t.Fatal("resolved while the window holds 3 instances")
		}
		fire(t0ms + 60*min)
		rs.step(t0ms + 62*min + 1000)
		if rs.firing("frequency_anomaly:hourly") {
			t.Error("not resolved when the window was back within bounds")
		}
		rs.wantEvents("frequency_anomaly:hourly", model.AlertFiring, model.AlertResolved)
	})
	t.Run("cluster_silence", func(t *testing.T) {
		rs := newRuleState(t)
		tk := &model.Task{Name: "cron", Trigger: model.Trigger{Type: model.TriggerCron, Expression: "*/15 * * * *"},
			Action: model.Action{Type: model.ActionShell, Command: "true"}}
		rs.apply(t0ms, command.TypePutTask, command.PutTask{Task: *tk})
		rs.apply(t0ms, command.TypeFire, command.Fire{Tasks: []command.TaskFire{{Task: "cron", Version: 1, At: t0ms}}})
		// Silent for 14 min, but nothing was due (next at t0+15m).
		if rs.step(t0ms + 14*min); rs.firing(clusterSilenceID) {
			t.Fatal("raised while nothing was due")
		}
		if rs.step(t0ms + 16*min - 1000); rs.firing(clusterSilenceID) {
			t.Fatal("raised within the grace after the due time")
		}
		rs.step(t0ms + 16*min + 1000)
		al, ok := rs.f.FiringAlert(clusterSilenceID)
		if !ok || al.Severity != model.SeverityCritical || al.Details["dueTask"] != "cron" {
			t.Fatalf("alert %+v, firing %v", al, ok)
		}
		if items := rs.step(t0ms + 16*min + 2000); len(items) != 0 {
			t.Errorf("re-proposed within the refresh period: %+v", items)
		}
		rs.apply(t0ms+17*min, command.TypeFire, command.Fire{Tasks: []command.TaskFire{{Task: "cron", Version: 1, At: t0ms + 15*min}}})
		rs.step(t0ms + 17*min)
		if rs.firing(clusterSilenceID) {
			t.Error("not resolved on the next fire")
		}
		rs.wantEvents(clusterSilenceID, model.AlertFiring, model.AlertResolved)
	})
}
