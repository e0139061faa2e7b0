package replica

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
)

// Collectors are the replica's metrics: Raft's state, the group commit
// and the reads.
func (r *Replica) Collectors() []prometheus.Collector {
	gauge := func(name, help string, f func() float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, f)
	}
	counter := func(name, help string, f func() float64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, f)
	}
	cs := []prometheus.Collector{
		counter("ax_group_commit_entries_total", "Raft entries this node proposed as leader through group commit.",
			func() float64 { return float64(r.entries.Load()) }),
		counter("ax_group_commit_commands_total", "Commands carried by those entries (divided by the entries: the mean group size).",
			func() float64 { return float64(r.commands.Load()) }),
		gauge("ax_is_leader", "1 if this node is the Raft leader.", func() float64 {
			if r.node.IsLeader() {
				return 1
			}
			return 0
		}),
		gauge("ax_raft_applied_index", "Last log index applied to the state machine.", func() float64 { return float64(r.fsm.AppliedIndex()) }),
		gauge("ax_raft_commit_index", "Latest committed log index known to this node: its own Raft's, or the highest the leader sent it.", func() float64 { return float64(r.node.KnownCommitIndex()) }),
		counter("ax_raft_log_append_failures_total", "Appends to this node's Raft log that failed (a full disk, an I/O error).",
			func() float64 { return float64(r.node.AppendFailures()) }),
		gauge("ax_raft_log_append_failing", "1 while this node's latest append to its Raft log failed (its /healthz answers 503); 0 once one succeeds.", func() float64 {
			if r.node.AppendFailure() != nil {
				return 1
			}
			return 0
		}),
		gauge("ax_raft_term", "Current Raft term.", func() float64 { return float64(r.node.Term()) }),
	}
	return append(cs, r.reads.collectors()...)
}

// Member is a member of the Raft configuration with its recorded HTTP
// address.
type Member struct {
	ID    string
	HTTP  string
	Voter bool
}

// Members lists the Raft configuration with the members' HTTP addresses.
func (r *Replica) Members(ctx context.Context) ([]Member, error) {
	servers, err := r.node.Servers(ctx)
	if err != nil {
		return nil, err
	}
	nodes, err := r.fsm.Nodes()
	if err != nil {
		return nil, err
	}
	out := make([]Member, 0, len(servers))
	for _, s := range servers {
		out = append(out, Member{ID: s.ID, HTTP: nodes[s.ID].HTTPAddr, Voter: s.Voter})
	}
	return out, nil
}
