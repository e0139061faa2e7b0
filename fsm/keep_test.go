package fsm

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/model"
)

// TestFSM_ExpiredHistoryLimits: keepSuccessful and keepFailed keep the
// newest of each kind (by finish time), on top of retention, whichever
// deletes first; a failure whose alert is pending is kept; a task
// without limits is untouched; the limits need protocol 8.
func TestFSM_ExpiredHistoryLimits(t *testing.T) {
	tests := []struct {
		name       string
		keep       model.Policy
		retention  time.Duration // the agents' default
		wantPruned string        // outcomes pruned, oldest first: s(uccess) f(ailed)
	}{
		{"no limits", model.Policy{}, time.Hour, ""},
		{"keep 2 successes", model.Policy{KeepSuccessful: 2}, time.Hour, "ssss"},
		{"keep 1 failure", model.Policy{KeepFailed: 1}, time.Hour, "f"},
		{"both", model.Policy{KeepSuccessful: 4, KeepFailed: 2}, time.Hour, "ss"},
		{"both at 1", model.Policy{KeepSuccessful: 1, KeepFailed: 1}, time.Hour, "sssfss"},
		{"retention first", model.Policy{KeepSuccessful: 4}, time.Second, "sssfsssf"},
	}
	// Finish order, oldest first; the first failure's alert is pending.
	order := "ssfsfsssf"
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := tc.keep
			p.MaxConcurrency, p.MaxRetries = 100, 0
			fx := newExecFixture(t, p)
			var ids []uint64
			for _, o := range order {
				id := fx.trigger()
				fx.lease(id)
				fx.complete(id, o == 's', false)
				ids = append(ids, id)
			}
			// Failures raise alerts held in the alerts index until the
			// leader handles them: handled here, but the first one's.
			for i, id := range ids {
				if i != 2 {
					fx.do(CmdAlerted, Alerted{ID: id})
				}
			}
			got, err := fx.f.Expired(time.UnixMilli(fx.now).Add(2*time.Second), tc.retention, 100)
			if err != nil {
				t.Fatal(err)
			}
			slices.Sort(got)
			var pruned strings.Builder
			for i, id := range ids {
				if slices.Contains(got, id) {
					pruned.WriteByte(order[i])
				}
			}
			if pruned.String() != tc.wantPruned {
				t.Fatalf("pruned %q (ids %v of %v), want %q", pruned.String(), got, ids, tc.wantPruned)
			}
			if len(got) != len(tc.wantPruned) {
				t.Fatalf("%d ids for %d instances: one named twice", len(got), len(tc.wantPruned))
			}
		})
	}
	fx := newPolicyFixture(t, 7)
	r := fx.put(eventTask("job", model.Policy{KeepFailed: 3}))
	if r.Err == nil || r.Err.Field != "policy.keepFailed" || !strings.Contains(r.Err.Message, "needs protocol 8") {
		t.Fatalf("keepFailed at protocol 7: %v", r.Err)
	}
	bad := eventTask("job", model.Policy{KeepSuccessful: -1})
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "policy.keepSuccessful") {
		t.Fatalf("keepSuccessful -1: %v", err)
	}
}
