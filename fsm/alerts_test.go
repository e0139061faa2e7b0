package fsm

import (
	"errors"
	"testing"

	"github.com/ax-scheduler/ax/model"
)

func raise(id, key string) AlertUpdate {
	return AlertUpdate{Items: []AlertChange{{Op: AlertRaise, ID: id, Rule: model.RuleInstanceFailed, Severity: model.SeverityWarning,
		Subject: model.AlertSubject{Task: "job"}, Summary: "failing", Key: key}}}
}

func resolve(id string) AlertUpdate {
	return AlertUpdate{Items: []AlertChange{{Op: AlertResolve, ID: id}}}
}

// TestFSM_AlertLifecycle: a raise opens an incident with a pending
// notification, a refresh bumps LastSeen and Count (but the same key
// twice counts once), a resolve moves it to the history with its own
// pending notification, and alert_notified clears each exactly once.
func TestFSM_AlertLifecycle(t *testing.T) {
	fx := newExecFixture(t, model.Policy{})
	id := "instance_failed:job"
	fx.do(CmdAlertUpdate, raise(id, "1"))
	first := fx.now
	fx.do(CmdAlertUpdate, raise(id, "1")) // the same finding again: nothing
	fx.do(CmdAlertUpdate, raise(id, "2"))
	a, ok := fx.f.FiringAlert(id)
	if !ok {
		t.Fatal("alert not firing")
	}
	if a.Count != 2 || a.FirstSeen.Millis() != first || a.LastSeen.Millis() != fx.now || a.State != model.AlertFiring {
		t.Errorf("got count %d first %d last %d state %s, want 2 %d %d firing", a.Count, a.FirstSeen.Millis(), a.LastSeen.Millis(), a.State, first, fx.now)
	}
	pend, _ := fx.f.PendingNotifications(10)
	if len(pend) != 1 || pend[0].Event != model.AlertFiring || pend[0].Seq != 1 {
		t.Fatalf("pending %+v, want the firing transition 1", pend)
	}
	var out struct{ Recorded bool }
	for i, want := range []bool{true, false} {
		if err := fx.do(CmdAlertNotified, AlertNotified{ID: id, Seq: 1}).Decode(&out); err != nil || out.Recorded != want {
			t.Errorf("notified #%d: recorded %v (%v), want %v", i+1, out.Recorded, err, want)
		}
	}
	fx.do(CmdAlertUpdate, resolve(id))
	fx.do(CmdAlertUpdate, resolve(id)) // already resolved: nothing
	if _, ok := fx.f.FiringAlert(id); ok {
		t.Error("resolved alert still firing")
	}
	pend, _ = fx.f.PendingNotifications(10)
	if len(pend) != 1 || pend[0].Event != model.AlertResolved || pend[0].Alert.ResolvedAt == nil {
		t.Fatalf("pending %+v, want one resolved transition", pend)
	}
	l, err := fx.f.ListAlerts(AlertFilter{})
	if err != nil || len(l.Alerts) != 1 || l.Alerts[0].State != model.AlertResolved || l.Alerts[0].Count != 2 {
		t.Fatalf("list %+v %v, want the resolved incident", l, err)
	}
	// A new raise is a new incident.
	fx.do(CmdAlertUpdate, raise(id, "3"))
	l, _ = fx.f.ListAlerts(AlertFilter{})
	if len(l.Alerts) != 2 || l.Alerts[0].State != model.AlertFiring || l.Alerts[0].Count != 1 {
		t.Fatalf("list %+v, want the new firing incident first", l.Alerts)
	}
	if l, _ := fx.f.ListAlerts(AlertFilter{State: model.AlertResolved}); len(l.Alerts) != 1 {
		t.Errorf("resolved list has %d, want 1", len(l.Alerts))
	}
	p1, _ := fx.f.ListAlerts(AlertFilter{Limit: 1})
	if len(p1.Alerts) != 1 || p1.NextCursor == "" {
		t.Fatalf("page 1 %+v", p1)
	}
	var before uint64
	for _, c := range p1.NextCursor {
		before = before*10 + uint64(c-'0')
	}
	p2, _ := fx.f.ListAlerts(AlertFilter{Limit: 1, Before: before})
	if len(p2.Alerts) != 1 || p2.Alerts[0].State != model.AlertResolved || p2.NextCursor != "" {
		t.Errorf("page 2 %+v, want the resolved incident and no cursor", p2)
	}
}

// TestFSM_AlertSilence: a matching silence records the alert as silenced
// with no pending notification, neither for firing nor for resolving; an
// expired silence does not match; delete_silence removes it.
func TestFSM_AlertSilence(t *testing.T) {
	fx := newExecFixture(t, model.Policy{})
	until := model.UnixMilli(fx.now + 60_000)
	if err := fx.do(CmdPutSilence, PutSilence{Silence: model.Silence{ID: "s1", Task: "job", Until: until, Comment: "deploy"}}).Decode(nil); err != nil {
		t.Fatal(err)
	}
	ss, _ := fx.f.Silences(fx.now)
	if len(ss) != 1 || ss[0].Created.Millis() != fx.now || ss[0].Comment != "deploy" {
		t.Fatalf("silences %+v", ss)
	}
	fx.do(CmdAlertUpdate, raise("instance_failed:job", "1"))
	if a, _ := fx.f.FiringAlert("instance_failed:job"); a == nil || !a.Silenced {
		t.Errorf("alert %+v, want silenced", a)
	}
	fx.do(CmdAlertUpdate, resolve("instance_failed:job"))
	if pend, _ := fx.f.PendingNotifications(10); len(pend) != 0 {
		t.Errorf("pending %+v, want none", pend)
	}
	// Labels: the task has none, so a label silence does not match.
	fx.do(CmdPutSilence, PutSilence{Silence: model.Silence{ID: "s2", Labels: map[string]string{"team": "x"}, Until: until}})
	fx.do(CmdDeleteSilence, SilenceRef{ID: "s1"})
	if err := fx.do(CmdDeleteSilence, SilenceRef{ID: "s1"}).Decode(nil); !errors.Is(err, model.ErrNotFound) {
		t.Errorf("second delete: %v, want not found", err)
	}
	fx.do(CmdAlertUpdate, raise("instance_failed:job", "2"))
	if pend, _ := fx.f.PendingNotifications(10); len(pend) != 1 {
		t.Errorf("pending %d, want 1 after unsilencing", len(pend))
	}
	fx.now += 120_000 // s2 expires
	if ss, _ := fx.f.Silences(fx.now); len(ss) != 0 {
		t.Errorf("silences %+v after expiry, want none", ss)
	}
}

func TestAlertCommands_validate(t *testing.T) {
	until := model.UnixMilli(t0 + 60_000)
	tests := []struct {
		name string
		typ  CommandType
		body any
	}{
		{"update: no items", CmdAlertUpdate, AlertUpdate{}},
		{"update: bad op", CmdAlertUpdate, AlertUpdate{Items: []AlertChange{{Op: "x", ID: "a", Rule: "r"}}}},
		{"update: no id", CmdAlertUpdate, AlertUpdate{Items: []AlertChange{{Op: AlertRaise, Rule: "r"}}}},
		{"update: raise without rule", CmdAlertUpdate, AlertUpdate{Items: []AlertChange{{Op: AlertRaise, ID: "a"}}}},
		{"notified: seq 0", CmdAlertNotified, AlertNotified{ID: "a"}},
		{"notified: no id", CmdAlertNotified, AlertNotified{Seq: 1}},
		{"silence: no matcher", CmdPutSilence, PutSilence{Silence: model.Silence{ID: "s", Until: until}}},
		{"silence: no id", CmdPutSilence, PutSilence{Silence: model.Silence{Task: "job", Until: until}}},
		{"silence: no until", CmdPutSilence, PutSilence{Silence: model.Silence{ID: "s", Task: "job"}}},
		{"silence: bad task", CmdPutSilence, PutSilence{Silence: model.Silence{ID: "s", Task: "a b/", Until: until}}},
		{"delete silence: no id", CmdDeleteSilence, SilenceRef{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fx := newExecFixture(t, model.Policy{})
			if err := fx.do(tc.typ, tc.body).Decode(nil); !errors.Is(err, model.ErrInvalid) {
				t.Errorf("got %v, want invalid_argument", err)
			}
		})
	}
	fx := newExecFixture(t, model.Policy{})
	c := cmd(t, CmdAlertUpdate, "", t0, nil)
	c.Body = []byte("{not json")
	if err := fx.a.apply(c).Decode(nil); !errors.Is(err, model.ErrInvalid) {
		t.Errorf("undecodable body: %v, want invalid_argument", err)
	}
}
