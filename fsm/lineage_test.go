package fsm

import (
	"strings"
	"testing"

	"github.com/ax-scheduler/ax/model"
)

// TestFSM_InstanceLineage: an instance's dependsOn lineage for its date:
// upstream the dependsOn task's success (its failure while it has none),
// downstream the dependent tasks' instances of that date, waiting for it,
// released by it or waiting for another task; another date's and a
// manual instance are not linked (no lineage at all when nothing is).
func TestFSM_InstanceLineage(t *testing.T) {
	fx := newPolicyFixture(t, ProtoVersion)
	fx.mustPut(cronTask("sync", "0 1 * * *"))
	fx.mustPut(cronTask("extra", "0 1 * * *"))
	report := depTask("report", "sync")
	report.Policy.MaxConcurrency = 5
	fx.mustPut(report)
	fx.mustPut(depTask("archive", "sync", "extra"))
	const day = "2026-11-30"

	rep := fx.fire("report", day)
	other := fx.fire("report", "2026-11-29") // another date: sync has no instance of it
	failed := fx.fire("sync", day)
	blockedDown := fx.lineage(failed)
	fx.run(failed, false, "")
	failedUp := fx.lineage(rep)
	up := fx.fire("sync", day)
	fx.run(up, true, "")
	arch := fx.fire("archive", day) // waits for extra, not for sync
	manual := fx.trigger("report")

	link := func(task string, id uint64, state string) string {
		return task + " " + model.FormatID(id) + " " + state
	}
	tests := []struct {
		name     string
		got      *model.Lineage
		up, down []string
	}{
		{"the upstream's fire, report waiting for it", blockedDown, nil, []string{link("report", rep, model.StateBlocked)}},
		{"report, its upstream failed", failedUp, []string{link("sync", failed, model.StateFailed)}, nil},
		{"report, released", fx.lineage(rep), []string{link("sync", up, model.StateSuccess)}, nil},
		{"the success, both dependents", fx.lineage(up), nil, []string{link("report", rep, model.StateReady), link("archive", arch, model.StateBlocked)}},
		{"archive, extra not run", fx.lineage(arch), []string{link("sync", up, model.StateSuccess)}, nil},
	}
	str := func(ls []model.LineageLink) string {
		var s []string
		for _, l := range ls {
			s = append(s, l.Task+" "+l.Instance+" "+l.State)
		}
		return strings.Join(s, ", ")
	}
	for _, tt := range tests {
		if tt.got == nil || tt.got.Date != day {
			t.Errorf("%s: lineage %+v, want one for %s", tt.name, tt.got, day)
			continue
		}
		if got, want := str(tt.got.Upstream), strings.Join(tt.up, ", "); got != want {
			t.Errorf("%s: upstream %q, want %q", tt.name, got, want)
		}
		if got, want := str(tt.got.Downstream), strings.Join(tt.down, ", "); got != want {
			t.Errorf("%s: downstream %q, want %q", tt.name, got, want)
		}
	}
	if l := fx.lineage(manual); l != nil {
		t.Errorf("a manual instance has the lineage %+v, want none (no scheduled date)", l)
	}
	if l := fx.lineage(other); l != nil {
		t.Errorf("report of a date sync never ran has the lineage %+v, want none", l)
	}
	if _, err := fx.f.InstanceLineage(1 << 40); err == nil {
		t.Error("the lineage of a missing instance: no error")
	}
}

func (fx *policyFixture) lineage(id uint64) *model.Lineage {
	fx.t.Helper()
	l, err := fx.f.InstanceLineage(id)
	if err != nil {
		fx.t.Fatal(err)
	}
	return l
}
