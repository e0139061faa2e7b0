package alerts

import (
	"testing"
	"time"

	"github.com/ax-scheduler/ax/model"
)

// TestWatchdog_QuorumWatch: quorum_lost is raised after 10 s without a
// leader, notified once per outage, and resolved once.
func TestWatchdog_QuorumWatch(t *testing.T) {
	q := &quorumWatch{}
	t0 := time.Now()
	if n := q.step("n1", t0, false); n != nil {
		t.Fatal("raised at once")
	}
	if n := q.step("n1", t0.Add(5*time.Second), false); n != nil {
		t.Fatal("raised before 10 s")
	}
	n := q.step("n1", t0.Add(11*time.Second), false)
	if n == nil || n.Event != model.AlertFiring || n.Alert.Rule != model.RuleQuorumLost {
		t.Fatalf("got %+v, want quorum_lost firing", n)
	}
	if n := q.step("n1", t0.Add(30*time.Second), false); n != nil {
		t.Error("notified twice in one outage")
	}
	if al := q.alerts(); len(al) != 1 || al[0].State != model.AlertFiring {
		t.Errorf("alerts %+v", al)
	}
	n = q.step("n1", t0.Add(31*time.Second), true)
	if n == nil || n.Event != model.AlertResolved {
		t.Fatalf("got %+v, want resolved", n)
	}
	if n := q.step("n1", t0.Add(32*time.Second), true); n != nil {
		t.Error("resolved twice")
	}
}
