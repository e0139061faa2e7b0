package agent

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"sync"
	"time"

	"github.com/ax-scheduler/ax/api"
	"github.com/ax-scheduler/ax/fsm"
	"github.com/ax-scheduler/ax/model"
)

// A node is healthy (GET /healthz answers 200) when it knows a leader, has
// heard from it within healthMaxContact (a follower) and has applied all
// but at most healthMaxLag of the entries it knows are committed.
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
		CommitIndex: a.node.CommitIndex(), Term: a.node.Term(), Tasks: a.fsm.CountTasks(),
		Pending: a.fsm.Pending(), Active: a.fsm.ActiveCount(), LastFired: a.fsm.LastFired(),
		Version: a.cfg.Version, Proto: fsm.ProtoVersion, Protocol: a.fsm.Proto(),
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
	// The no-op and barriers Raft commits are never applied: counted to
	// the last entry that is, an idle node lags nothing.
	switch lag := int64(a.node.StateIndex(h.CommitIndex)) - int64(h.AppliedIndex); {
	case a.fsm.Failed() != nil:
		h.Problem = "state machine unusable until a snapshot restores: " + a.fsm.Failed().Error()
	case leaderID == "":
		h.Problem = "no leader"
	case leaderID != a.cfg.NodeID && contact > healthMaxContact:
		h.Problem = fmt.Sprintf("no contact with the leader for %s (bound %s)", contact.Round(time.Second), healthMaxContact)
	case lag > healthMaxLag:
		h.Problem = fmt.Sprintf("applied index %d lags the commit index %d by %d entries (bound %d)", h.AppliedIndex, h.CommitIndex, lag, healthMaxLag)
	}
	return h
}

// Cluster implements api.ClusterBackend: the members (from the Raft
// configuration and their records) and what each answered on /healthz
// when this node asked it just now, so that a dead member shows as
// unreachable.
func (a *Agent) Cluster(ctx context.Context) (*model.ClusterStatus, error) {
	servers, err := a.node.Servers(ctx)
	if err != nil {
		return nil, unavailable(err)
	}
	nodes, err := a.fsm.Nodes()
	if err != nil {
		return nil, err
	}
	leaderID, _ := a.node.Leader()
	st := &model.ClusterStatus{
		Leader: leaderID, Term: a.node.Term(), CommitIndex: a.node.CommitIndex(), AppliedIndex: a.fsm.AppliedIndex(),
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
			h, err := a.clientFor(n.HTTPAddr).Health(pctx)
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
		n.Status, n.Problem, n.Role, n.Version = "ok", h.Problem, h.Role, h.Version
		if h.Problem != "" {
			n.Status = "unhealthy"
		}
		n.AppliedIndex, n.LastContact = h.AppliedIndex, h.LastContact
		lag := commit - min(commit, h.AppliedIndex)
		n.Lag = &lag
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
