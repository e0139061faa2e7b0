package cluster

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/ax-scheduler/ax/fsm/command"
	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/model/member"
	"github.com/ax-scheduler/ax/raftnode"
	"github.com/ax-scheduler/ax/replica"
)

// A node is healthy (GET /healthz answers 200) when its latest append to
// its Raft log succeeded, it knows a leader, has heard from it within
// healthMaxContact (a follower) and has applied all but at most
// MaxLag of the entries it knows are committed: by its own Raft, or
// by what the leader last sent it (raftnode.KnownCommitIndex), since a
// follower whose log cannot keep up learns no further commit index from
// its own Raft.
const (
	// MaxLag bounds how many entries a healthy node's state machine is
	// behind the commit index.
	MaxLag           = 1000
	healthMaxContact = 5 * time.Second
)

// memberProbeTimeout bounds asking one member's /healthz for the cluster
// status.
const memberProbeTimeout = time.Second

// Health implements api.ClusterBackend: this node's health, with the
// clock comparison (its offset, the members', its latest step) and the
// clock's problem, if it has no other.
func (c *Cluster) Health(ctx context.Context) *member.Health {
	h := c.health()
	h.ClockOffset, h.Clock = c.clock.Health()
	if h.Problem == "" {
		h.Problem = c.clock.Problem(c.state.TimeHWM())
	}
	return h
}

// health is this node's health without the clock comparison, as the
// cluster status shows it for this node.
func (c *Cluster) health() *member.Health {
	leaderID, _ := c.raft().Leader()
	h := &member.Health{
		Node: c.cfg.NodeID, Role: c.raft().State(), Leader: leaderID,
		Time: model.Time{Time: c.cfg.Base.Now().UTC()}, AppliedIndex: c.state.AppliedIndex(),
		CommitIndex: c.raft().KnownCommitIndex(), Term: c.raft().Term(), Tasks: c.state.CountTasks(),
		Pending: c.state.Pending(), Active: c.state.ActiveCount(), LastFired: c.state.LastFired(),
		Version: c.cfg.Version, Proto: command.ProtoVersion, Protocol: c.state.Proto(),
	}
	if c.cfg.QuorumAlerts != nil {
		h.Alerts = c.cfg.QuorumAlerts()
	}
	if c.cfg.Wheel != nil {
		if size, load, ok := c.cfg.Wheel(); ok {
			h.WheelSize, h.WheelLoad = size, model.Duration(load)
		}
	}
	if c.cfg.Executors != nil {
		if n, ok := c.cfg.Executors(); ok {
			h.Executors = n
		}
	}
	if leaderID == c.cfg.NodeID {
		h.LeaderHTTP = c.cfg.AdvertiseHTTP
	} else if nodes, err := c.state.Nodes(); err == nil {
		h.LeaderHTTP = nodes[leaderID].HTTPAddr
	}
	var contact time.Duration
	if leaderID != c.cfg.NodeID {
		if last := c.raft().LastContact(); !last.IsZero() {
			contact = time.Since(last)
			h.LastContact = model.Duration(contact.Round(time.Millisecond))
		}
	}
	var problems []string
	if f := c.raft().AppendFailure(); f != nil {
		problems = append(problems, appendProblem(f))
	}
	// The no-op and barriers Raft commits are never applied: counted to
	// the last entry that is, an idle node lags nothing.
	switch lag := int64(c.raft().StateIndex(h.CommitIndex)) - int64(h.AppliedIndex); {
	case c.state.Failed() != nil:
		problems = append(problems, "state machine unusable until a snapshot restores: "+c.state.Failed().Error())
	case leaderID == "":
		problems = append(problems, "no leader")
	case leaderID != c.cfg.NodeID && contact > healthMaxContact:
		problems = append(problems, fmt.Sprintf("no contact with the leader for %s (bound %s)", contact.Round(time.Second), healthMaxContact))
	case lag > MaxLag:
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
	return fmt.Sprintf("applied index %d lags the commit index %d by %d entries (bound %d)", applied, commit, lag, MaxLag)
}

// Cluster implements api.ClusterBackend: the members (from the Raft
// configuration and their records) and what each answered on /healthz
// when this node asked it just now, so that a dead member shows as
// unreachable.
// Snapshot writes this node's whole state to w (api.ClusterBackend): the
// caller has made the read linearizable, so it holds every write
// acknowledged before the request.
func (c *Cluster) Snapshot(ctx context.Context, w io.Writer, started func(index uint64)) error {
	_, err := c.state.WriteState(w, started)
	return err
}

func (c *Cluster) Cluster(ctx context.Context) (*model.ClusterStatus, error) {
	servers, err := c.raft().Servers(ctx)
	if err != nil {
		return nil, replica.Unavailable(err)
	}
	nodes, err := c.state.Nodes()
	if err != nil {
		return nil, err
	}
	leaderID, _ := c.raft().Leader()
	st := &model.ClusterStatus{
		Leader: leaderID, Term: c.raft().Term(), CommitIndex: c.raft().KnownCommitIndex(), AppliedIndex: c.state.AppliedIndex(),
		Protocol: c.state.Proto(), Nodes: []model.Node{},
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
	c.probeMembers(ctx, st)
	return st, nil
}

// probeMembers fills in each member's health, asking all at once.
func (c *Cluster) probeMembers(ctx context.Context, st *model.ClusterStatus) {
	healths := make([]*member.Health, len(st.Nodes))
	errs := make([]error, len(st.Nodes))
	var wg sync.WaitGroup
	for i, n := range st.Nodes {
		if n.ID == c.cfg.NodeID {
			healths[i] = c.health()
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
			h, err := c.rep.Peer(n.HTTPAddr).Health(pctx)
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
	commit = c.raft().StateIndex(commit)
	failing := c.raft().FailingPeers()
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
func memberHealth(n *model.Node, h *member.Health, commit uint64) {
	n.Status, n.Problem, n.Role, n.Version = "ok", h.Problem, h.Role, h.Version
	n.AppliedIndex, n.LastContact = h.AppliedIndex, h.LastContact
	lag := commit - min(commit, h.AppliedIndex)
	n.Lag = &lag
	if n.Problem == "" && lag > MaxLag {
		n.Problem = lagProblem(h.AppliedIndex, commit, int64(lag))
	}
	if n.Problem != "" {
		n.Status = "unhealthy"
	}
}
