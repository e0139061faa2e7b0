package agent

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/ax-scheduler/ax/api"
	"github.com/ax-scheduler/ax/fsm/command"
	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/raftnode"
	"github.com/ax-scheduler/ax/replica"
)

// A node is healthy (GET /healthz answers 200) when its latest append to
// its Raft log succeeded, it knows a leader, has heard from it within
// healthMaxContact (a follower) and has applied all but at most
// healthMaxLag of the entries it knows are committed: by its own Raft, or
// by what the leader last sent it (raftnode.KnownCommitIndex), since a
// follower whose log cannot keep up learns no further commit index from
// its own Raft.
const (
	healthMaxLag     = 1000
	healthMaxContact = 5 * time.Second
)

// memberProbeTimeout bounds asking one member's /healthz for the cluster
// status.
const memberProbeTimeout = time.Second

// Health implements api.ClusterBackend.
func (a *Agent) Health(ctx context.Context) *model.Health {
	leaderID, _ := a.node.Leader()
	h := &model.Health{
		Node: a.cfg.NodeID, Role: a.node.State(), Leader: leaderID,
		Time: model.Time{Time: a.now().UTC()}, AppliedIndex: a.fsm.AppliedIndex(),
		CommitIndex: a.node.KnownCommitIndex(), Term: a.node.Term(), Tasks: a.fsm.CountTasks(),
		Pending: a.fsm.Pending(), Active: a.fsm.ActiveCount(), LastFired: a.fsm.LastFired(),
		Version: a.cfg.Version, Proto: command.ProtoVersion, Protocol: a.fsm.Proto(),
		Alerts: a.quorum.alerts(),
	}
	if s := a.scheduler(); s != nil {
		st := s.Stats()
		h.WheelSize, h.WheelLoad = st.WheelSize, model.Duration(st.Loaded)
	}
	if d := a.dispatcher(); d != nil {
		h.Executors = len(d.Executors())
	}
	if leaderID == a.cfg.NodeID {
		h.LeaderHTTP = a.advertisedHTTP()
	} else if nodes, err := a.fsm.Nodes(); err == nil {
		h.LeaderHTTP = nodes[leaderID].HTTPAddr
	}
	var contact time.Duration
	if leaderID != a.cfg.NodeID {
		if last := a.node.LastContact(); !last.IsZero() {
			contact = time.Since(last)
			h.LastContact = model.Duration(contact.Round(time.Millisecond))
		}
	}
	var problems []string
	if f := a.node.AppendFailure(); f != nil {
		problems = append(problems, appendProblem(f))
	}
	// The no-op and barriers Raft commits are never applied: counted to
	// the last entry that is, an idle node lags nothing.
	switch lag := int64(a.node.StateIndex(h.CommitIndex)) - int64(h.AppliedIndex); {
	case a.fsm.Failed() != nil:
		problems = append(problems, "state machine unusable until a snapshot restores: "+a.fsm.Failed().Error())
	case leaderID == "":
		problems = append(problems, "no leader")
	case leaderID != a.cfg.NodeID && contact > healthMaxContact:
		problems = append(problems, fmt.Sprintf("no contact with the leader for %s (bound %s)", contact.Round(time.Second), healthMaxContact))
	case lag > healthMaxLag:
		problems = append(problems, lagProblem(h.AppliedIndex, h.CommitIndex, lag))
	}
	h.Problem = strings.Join(problems, "; ")
	return h
}

// appendProblem says why a node's Raft log takes no entries.
func appendProblem(f *raftnode.AppendFailure) string {
	return fmt.Sprintf("cannot append to the Raft log: %v (since %s, %d failures in a row)",
		f.Err, f.Since.UTC().Format(time.RFC3339), f.Failures)
}

// lagProblem says how far a node's state machine is behind.
func lagProblem(applied, commit uint64, lag int64) string {
	return fmt.Sprintf("applied index %d lags the commit index %d by %d entries (bound %d)", applied, commit, lag, healthMaxLag)
}

// Cluster implements api.ClusterBackend: the members (from the Raft
// configuration and their records) and what each answered on /healthz
// when this node asked it just now, so that a dead member shows as
// unreachable.
func (a *Agent) Cluster(ctx context.Context) (*model.ClusterStatus, error) {
	servers, err := a.node.Servers(ctx)
	if err != nil {
		return nil, replica.Unavailable(err)
	}
	nodes, err := a.fsm.Nodes()
	if err != nil {
		return nil, err
	}
	leaderID, _ := a.node.Leader()
	st := &model.ClusterStatus{
		Leader: leaderID, Term: a.node.Term(), CommitIndex: a.node.KnownCommitIndex(), AppliedIndex: a.fsm.AppliedIndex(),
		Protocol: a.fsm.Proto(), Nodes: []model.Node{},
	}
	if n, ok := nodes[leaderID]; ok {
		st.LeaderHTTP = n.HTTPAddr
	}
	for _, s := range servers {
		suffrage := "nonvoter"
		if s.Voter {
			suffrage = "voter"
		}
		st.Nodes = append(st.Nodes, model.Node{ID: s.ID, RaftAddr: s.Address, HTTPAddr: nodes[s.ID].HTTPAddr, Suffrage: suffrage,
			Leader: s.ID == leaderID, Proto: nodes[s.ID].Proto})
	}
	sort.Slice(st.Nodes, func(i, j int) bool { return st.Nodes[i].ID < st.Nodes[j].ID })
	a.probeMembers(ctx, st)
	return st, nil
}

// probeMembers fills in each member's health, asking all at once.
func (a *Agent) probeMembers(ctx context.Context, st *model.ClusterStatus) {
	healths := make([]*model.Health, len(st.Nodes))
	errs := make([]error, len(st.Nodes))
	var wg sync.WaitGroup
	for i, n := range st.Nodes {
		if n.ID == a.cfg.NodeID {
			healths[i] = a.Health(ctx)
			continue
		}
		if n.HTTPAddr == "" {
			errs[i] = fmt.Errorf("no HTTP address recorded")
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			pctx, cancel := context.WithTimeout(ctx, memberProbeTimeout)
			defer cancel()
			h, err := a.rep.Peer(n.HTTPAddr).Health(pctx)
			if h != nil && h.Node == n.ID {
				healths[i] = h // a 503 still says what is wrong
				return
			}
			if err == nil {
				err = fmt.Errorf("%s answers as node %q", n.HTTPAddr, h.Node)
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	commit := st.CommitIndex
	for _, h := range healths {
		if h != nil {
			commit = max(commit, h.CommitIndex)
		}
	}
	commit = a.node.StateIndex(commit)
	failing := a.node.FailingPeers()
	for i := range st.Nodes {
		n, h := &st.Nodes[i], healths[i]
		if last, ok := failing[n.ID]; ok && !last.IsZero() {
			n.RaftContact = model.Duration(time.Since(last).Round(time.Millisecond))
		}
		if h == nil {
			n.Status, n.Problem = "unreachable", errs[i].Error()
			continue
		}
		memberHealth(n, h, commit)
	}
}

// memberHealth fills in what member n answered on /healthz (h), judging
// its lag against commit, the highest commit index any member reported.
// A member beyond the lag bound is unhealthy even when it does not say so
// itself (an older version, which judges only by its own commit index).
func memberHealth(n *model.Node, h *model.Health, commit uint64) {
	n.Status, n.Problem, n.Role, n.Version = "ok", h.Problem, h.Role, h.Version
	n.AppliedIndex, n.LastContact = h.AppliedIndex, h.LastContact
	lag := commit - min(commit, h.AppliedIndex)
	n.Lag = &lag
	if n.Problem == "" && lag > healthMaxLag {
		n.Problem = lagProblem(h.AppliedIndex, commit, int64(lag))
	}
	if n.Problem != "" {
		n.Status = "unhealthy"
	}
}

// refuseUnusable answers every request but /livez and /healthz with a 503
// while the state machine is unusable (a restore failed: see
// fsm.FSM.Failed), and reports whether it did. Such a node knows no task,
// token or member key, so it serves nothing until Raft has installed a
// snapshot again; /healthz says why it is unhealthy.
func (a *Agent) refuseUnusable(w http.ResponseWriter, r *http.Request) bool {
	err := a.fsm.Failed()
	if err == nil || r.URL.Path == "/livez" || r.URL.Path == "/healthz" {
		return false
	}
	api.WriteError(w, &model.Error{Code: model.CodeUnavailable,
		Message: "node " + a.cfg.NodeID + " serves nothing until its state machine has recovered (" + err.Error() + "); use another node"})
	return true
}
