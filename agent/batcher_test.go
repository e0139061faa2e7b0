package agent

import (
	"testing"

	"github.com/ax-scheduler/ax/fsm"
	"github.com/ax-scheduler/ax/fsm/command"
)

func TestGroupFits(t *testing.T) {
	cmd := func(body, ids int) *pendingCmd {
		return &pendingCmd{cmd: &command.Command{Body: make([]byte, body)}, ids: ids}
	}
	maxIDs := fsm.MaxEntryInstances()
	cases := []struct {
		name string
		have []*pendingCmd
		next *pendingCmd
		want bool
	}{
		{"empty takes anything", nil, cmd(2*maxBatchBytes, 2*maxIDs), true},
		{"small", []*pendingCmd{cmd(10, 1)}, cmd(10, 1), true},
		{"bytes at the limit", []*pendingCmd{cmd(maxBatchBytes-10, 0)}, cmd(10, 0), true},
		{"bytes over", []*pendingCmd{cmd(maxBatchBytes-10, 0)}, cmd(11, 0), false},
		{"instances at the limit", []*pendingCmd{cmd(10, maxIDs-10_000)}, cmd(10, 10_000), true},
		{"instances over", []*pendingCmd{cmd(10, maxIDs-9_999)}, cmd(10, 10_000), false},
		{"commands over", func() []*pendingCmd {
			var cs []*pendingCmd
			for range maxBatchCmds {
				cs = append(cs, cmd(1, 0))
			}
			return cs
		}(), cmd(1, 0), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var g group
			for _, p := range tc.have {
				g.add(p)
			}
			if got := g.fits(tc.next); got != tc.want {
				t.Fatalf("fits = %v, want %v (group: %d commands, %d bytes, %d instances)", got, tc.want, len(g.cmds), g.bytes, g.ids)
			}
		})
	}
}
