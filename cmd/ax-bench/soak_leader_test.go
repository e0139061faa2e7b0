package main

import (
	"testing"
	"time"
)

// TestLeaderWatch_Observe checks what the soak counts from rounds of
// (highest term, leader named with it): every term begun since the first
// round is an election, every different leader named a change (the first
// one named is none), and a round without a leader (an election under
// way) is neither.
func TestLeaderWatch_Observe(t *testing.T) {
	type round struct {
		term   uint64
		leader string
	}
	cases := []struct {
		name                      string
		rounds                    []round
		wantElections, wantChange int
		wantTerm                  uint64
		wantLeader                string
	}{
		{"steady", []round{{2, "n1"}, {2, "n1"}, {2, "n1"}}, 0, 0, 2, "n1"},
		{"re-elected after stepping down", []round{{2, "n1"}, {2, ""}, {3, "n1"}}, 1, 0, 3, "n1"},
		{"new leader", []round{{2, "n1"}, {3, ""}, {3, "n2"}, {3, "n2"}}, 1, 1, 3, "n2"},
		{"terms skipped between rounds", []round{{2, "n1"}, {5, "n3"}}, 3, 1, 5, "n3"},
		{"a lagging node's older term is ignored", []round{{4, "n2"}, {3, "n1"}, {4, "n2"}}, 0, 0, 4, "n2"},
		{"no leader at first", []round{{1, ""}, {1, "n1"}}, 0, 0, 1, "n1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var w leaderWatch
			for i, r := range c.rounds {
				w.observe(time.Duration(i)*time.Second, r.term, r.leader)
			}
			if w.elections != c.wantElections || w.changes != c.wantChange || w.term != c.wantTerm || w.leader != c.wantLeader {
				t.Errorf("got %d elections, %d changes, term %d, leader %q; want %d, %d, %d, %q\n%s",
					w.elections, w.changes, w.term, w.leader, c.wantElections, c.wantChange, c.wantTerm, c.wantLeader, w.report(time.Second))
			}
			if w.polls != len(c.rounds) {
				t.Errorf("polls %d, want %d", w.polls, len(c.rounds))
			}
		})
	}
}
