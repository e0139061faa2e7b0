package agent

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/api"
	"github.com/ax-scheduler/ax/fsm"
	"github.com/ax-scheduler/ax/fsm/command"
	"github.com/ax-scheduler/ax/internal/testkit"
	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/wheel"
)

// recordingNotifier records every notification.
type recordingNotifier struct {
	mu   sync.Mutex
	sent []model.AlertNotification
}

func (r *recordingNotifier) Notify(_ context.Context, n model.AlertNotification) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sent = append(r.sent, n)
	return nil
}

// count counts the notifications of an alert id and event.
func (r *recordingNotifier) count(id, event string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, s := range r.sent {
		if s.Alert.ID == id && s.Event == event {
			n++
		}
	}
	return n
}

// alertCluster is a three-node cluster on one fake clock whose agents
// share a recording notifier, at protocol 4.
func alertCluster(t *testing.T) (*testCluster, *wheel.FakeClock, *recordingNotifier) {
	t.Helper()
	clock := wheel.NewFakeClock(time.Now())
	rec := &recordingNotifier{}
	tc := startCluster(t, 3, func(c *Config) {
		c.Clock, c.testNotifier, c.NotifyInterval = clock, rec, 50*time.Millisecond
	})
	testkit.Until(t, 20*time.Second, "protocol 4", func() bool { return tc.leader() != nil && tc.leader().fsm.Proto() == command.ProtoVersion })
	return tc, clock, rec
}

// advanceUntil moves the fake clock a watchdog interval at a time until
// cond holds. The pause after each step paces the fake clock (the agents
// act on one step before the next), it waits for no condition.
func advanceUntil(t *testing.T, clock *wheel.FakeClock, what string, cond func() bool) {
	t.Helper()
	testkit.Until(t, 20*time.Second, what, func() bool {
		clock.Advance(5 * time.Second)
		time.Sleep(20 * time.Millisecond)
		return cond()
	})
}

// TestWatchdog_StuckReadySurvivesLeaderChange: an instance READY for
// longer than -stuck-after raises stuck_ready once, notified once; a new
// leader neither repeats the notification nor opens a second incident;
// once the instance is canceled the alert resolves, notified once.
func TestWatchdog_StuckReadySurvivesLeaderChange(t *testing.T) {
	tc, clock, rec := alertCluster(t)
	l := tc.leader()
	ctx := context.Background()
	if _, err := l.tasks.PutTask(ctx, api.Caller{Actor: "t"}, eventTask("job"), api.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	sub, err := l.tasks.Trigger(ctx, api.Caller{Actor: "t"}, "job", model.TriggerRequest{})
	if err != nil {
		t.Fatal(err)
	}
	const id = model.RuleStuckReady + ":job"
	clock.Advance(31 * time.Minute)
	advanceUntil(t, clock, "stuck_ready notified", func() bool { return rec.count(id, model.AlertFiring) == 1 })
	a, ok := l.fsm.FiringAlert(id)
	if !ok || a.Subject.Instance != sub.ID {
		t.Fatalf("alert %+v, want firing for instance %s", a, sub.ID)
	}

	if err := l.cl.Transfer(ctx, ""); err != nil {
		t.Fatal(err)
	}
	nl := tc.waitLeader(t, l)
	// The new leader evaluates for a while: a refresh, not a new incident.
	for i := 0; i < 20; i++ {
		clock.Advance(5 * time.Second)
		time.Sleep(20 * time.Millisecond)
	}
	if n := rec.count(id, model.AlertFiring); n != 1 {
		t.Errorf("firing notified %d times across the leader change, want 1", n)
	}
	if a2, _ := nl.fsm.FiringAlert(id); a2 == nil || !a2.FirstSeen.Equal(a.FirstSeen.Time) {
		t.Errorf("after the change: %+v, want the same incident", a2)
	}
	if _, err := nl.tasks.Decide(ctx, api.Caller{Actor: "t"}, sub.ID, "cancel", 0, ""); err != nil {
		t.Fatal(err)
	}
	advanceUntil(t, clock, "stuck_ready resolved", func() bool { return rec.count(id, model.AlertResolved) == 1 })
	if l, _ := nl.fsm.ListAlerts(fsm.AlertFilter{State: model.AlertResolved}); len(l.Alerts) != 1 {
		t.Errorf("resolved list %+v, want the one incident", l.Alerts)
	}
}
