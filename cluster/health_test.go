package cluster

import (
	"testing"

	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/model/member"
)

// TestMemberHealth: a member is ok, or unhealthy with its own problem, or
// unhealthy with its lag when it is beyond the bound but does not say so
// (an older member judges only by its own commit index).
func TestMemberHealth(t *testing.T) {
	cases := []struct {
		name        string
		h           member.Health
		commit      uint64
		wantStatus  string
		wantProblem string
		wantLag     uint64
	}{
		{"caught up", member.Health{AppliedIndex: 100}, 100, "ok", "", 0},
		{"within the bound", member.Health{AppliedIndex: 100}, 100 + MaxLag, "ok", "", MaxLag},
		{"beyond the bound, unaware", member.Health{AppliedIndex: 15}, 1110, "unhealthy",
			"applied index 15 lags the commit index 1110 by 1095 entries (bound 1000)", 1095},
		{"its own problem first", member.Health{AppliedIndex: 15, Problem: "cannot append to the Raft log: disk full"}, 1110, "unhealthy",
			"cannot append to the Raft log: disk full", 1095},
		{"ahead of what others reported", member.Health{AppliedIndex: 120}, 100, "ok", "", 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var n model.Node
			memberHealth(&n, &c.h, c.commit)
			if n.Status != c.wantStatus || n.Problem != c.wantProblem || n.Lag == nil || *n.Lag != c.wantLag {
				t.Fatalf("got %s %q lag %v, want %s %q lag %d", n.Status, n.Problem, n.Lag, c.wantStatus, c.wantProblem, c.wantLag)
			}
		})
	}
}
