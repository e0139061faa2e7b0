package agent

import (
	"context"
	"crypto/rand"
	"errors"
	"sort"
	"time"

	"ax/api"
	"ax/dispatch"
	"ax/fsm"
	"ax/model"
	"ax/raftnode"
	"ax/sched"
)

// leaderLoop runs leader-only work: on gaining leadership it waits for a
// Raft barrier (so the state machine holds every committed entry), records
// this node's addresses, then starts the leader services; it stops them
// when leadership is lost.
func (a *Agent) leaderLoop() {
	defer a.wg.Done()
	changes := a.node.LeadershipChanges()
	var cancel context.CancelFunc
	stop := func() {
		if cancel != nil {
			cancel()
			cancel = nil
			a.setLeaderReady(false)
			a.log.Info("leader services stopped")
		}
	}
	for {
		select {
		case <-a.stopCh:
			stop()
			return
		case isLeader := <-changes:
			stop()
			if !isLeader {
				continue
			}
			ctx, c := context.WithCancel(context.Background())
			cancel = c
			go a.lead(ctx)
		}
	}
}

// lead runs for one leadership term.
func (a *Agent) lead(ctx context.Context) {
	for ctx.Err() == nil {
		bctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := a.node.Barrier(bctx)
		cancel()
		if err == nil {
			break
		}
		if errors.Is(err, raftnode.ErrNotLeader) || errors.Is(err, raftnode.ErrShutdown) {
			return
		}
		a.log.Warn("leader barrier failed; retrying", "error", err)
	}
	a.startClockGuard(ctx)
	if ctx.Err() != nil {
		return
	}
	a.setLeaderReady(true)
	a.log.Info("leader services started", "applied", a.fsm.AppliedIndex())
	if err := a.recordSelf(ctx); err != nil && ctx.Err() == nil {
		a.log.Warn("recording own address failed", "error", err)
	}
	d := dispatch.New(dispatch.Config{Lease: a.cfg.Lease, Now: a.cfg.Clock.Now, Logger: a.log, Prepare: a.addSecrets}, a.fsm, a.propose)
	a.disp.Store(d)
	defer a.disp.Store(nil)
	go func() {
		if err := d.Run(ctx); err != nil && ctx.Err() == nil {
			a.log.Error("dispatcher stopped", "error", err)
		}
	}()
	go a.runAlerts(ctx)
	go a.runRetention(ctx)
	go a.ensureClusterState(ctx)
	s := sched.New(sched.Config{Clock: a.cfg.Clock, Horizon: a.cfg.Horizon, Logger: a.log, OnFired: a.metrics.onFired}, a.fsm, a.proposeAsync)
	a.sched.Store(s)
	defer a.sched.Store(nil)
	if err := s.Run(ctx); err != nil && ctx.Err() == nil {
		a.log.Error("scheduler stopped", "error", err)
	}
}

// TaskChanged implements fsm.Observer.
func (a *Agent) TaskChanged(name string) {
	if s := a.sched.Load(); s != nil {
		s.TaskChanged(name)
	}
	if d := a.disp.Load(); d != nil {
		d.TaskChanged(name)
	}
}

// Scheduled implements fsm.Observer.
func (a *Agent) Scheduled(id uint64, dueMs int64) {
	if s := a.sched.Load(); s != nil {
		s.Scheduled(id, dueMs)
	}
}

func (a *Agent) setLeaderReady(v bool) {
	a.leaderMu.Lock()
	a.leaderReady = v
	a.leaderMu.Unlock()
}

// ensureLeaderBarrier makes sure this leader has applied everything
// committed by earlier leaders before it answers a read index.
func (a *Agent) ensureLeaderBarrier(ctx context.Context) error {
	a.leaderMu.Lock()
	ready := a.leaderReady
	a.leaderMu.Unlock()
	if ready {
		return nil
	}
	return a.node.Barrier(ctx)
}

// maxNodeID bounds a node id (a joining node's id is a valid name, at most
// 128 bytes).
const maxNodeID = 128

// selfInfo is this node's record: its addresses and the protocol its
// binary speaks.
func (a *Agent) selfInfo() fsm.NodeInfo {
	return fsm.NodeInfo{ID: a.cfg.NodeID, RaftAddr: a.node.Addr(), HTTPAddr: a.advertisedHTTP(), Proto: fsm.ProtoVersion}
}

// recordSelf stores this node's record in the state machine if it is
// missing or stale (other addresses, or an older protocol: the node was
// upgraded).
func (a *Agent) recordSelf(ctx context.Context) error {
	nodes, err := a.fsm.Nodes()
	if err != nil {
		return err
	}
	if nodes[a.cfg.NodeID] == a.selfInfo() {
		return nil
	}
	return a.proposeSelf(ctx)
}

// proposeSelf writes this node's record (through the leader when this
// node follows).
func (a *Agent) proposeSelf(ctx context.Context) error {
	return a.proposeOwn(ctx, fsm.CmdSetNode, a.selfInfo())
}

// register makes sure this node is a member with an up-to-date record: a
// new node joins through the -join addresses; a restarted node whose
// record is stale (its addresses changed, or it was upgraded) records
// itself again. After each leader change it checks the new leader's copy
// of its record once: a replica that applied the record while it ran an
// older version kept no protocol.
func (a *Agent) register() {
	defer a.wg.Done()
	backoff := 200 * time.Millisecond
	verify := false
	for !a.stopping() {
		changed := a.node.LeaderChanged()
		done, err := a.registerOnce()
		if done {
			if verify {
				a.verifyRecord()
			}
			select {
			case <-a.stopCh:
				return
			case <-changed:
			}
			verify, backoff = true, 200*time.Millisecond
			continue
		}
		if err != nil {
			a.log.Warn("joining the cluster failed; retrying", "join", a.cfg.Join, "error", err, "retry_in", backoff)
		}
		select {
		case <-a.stopCh:
			return
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 5*time.Second)
	}
}

// verifyRecord asks the leader for its copy of this node's record and
// records the node again if that copy is stale. It tries once: a leader
// of an older version drops the protocol whatever is proposed.
func (a *Agent) verifyRecord() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	id, _ := a.node.Leader()
	if id == "" || id == a.cfg.NodeID {
		return // this node's state is the leader's
	}
	leader, err := a.leaderHTTP(ctx, time.Now().Add(a.cfg.LeaderWait))
	if err != nil {
		return
	}
	st, err := a.clientFor(leader).Cluster(ctx)
	if err != nil {
		a.log.Debug("reading the leader's member records failed", "error", err)
		return
	}
	self := a.selfInfo()
	for _, n := range st.Nodes {
		if n.ID == self.ID && n.HTTPAddr == self.HTTPAddr && n.Proto >= self.Proto {
			return
		}
	}
	if err := a.proposeSelf(ctx); err != nil {
		a.log.Warn("recording this node with the leader failed", "error", err)
		return
	}
	a.log.Info("recorded this node's protocol with the leader", "proto", self.Proto)
}

func (a *Agent) registerOnce() (done bool, err error) {
	nodes, err := a.fsm.Nodes()
	if err != nil {
		return false, err
	}
	self := a.selfInfo()
	if nodes[self.ID] == self {
		return true, nil
	}
	if a.node.IsLeader() {
		return false, nil // the leader loop records itself
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if a.isMember(ctx, self) {
		// Only the record is stale: write it through the leader.
		return false, a.proposeSelf(ctx)
	}
	req := model.JoinRequest{ID: self.ID, RaftAddr: self.RaftAddr, HTTPAddr: self.HTTPAddr, Proto: self.Proto}
	// Prefer the known leader; fall back to the -join list.
	var targets []string
	if id, _ := a.node.Leader(); id != "" {
		if n, ok := nodes[id]; ok && n.HTTPAddr != "" {
			targets = append(targets, n.HTTPAddr)
		}
	}
	targets = append(targets, a.cfg.Join...)
	if len(targets) == 0 {
		return false, nil // wait until a leader appears
	}
	for _, t := range targets {
		err = a.clientFor(t).Join(ctx, req)
		var me *model.Error
		if errors.As(err, &me) && me.Field == "proto" {
			// A leader of an older version refuses the field: join
			// without it; registration then writes the whole record.
			noProto := req
			noProto.Proto = 0
			err = a.clientFor(t).Join(ctx, noProto)
		}
		if err == nil {
			a.log.Info("joined the cluster", "via", t)
			return false, nil // done once the record is applied here
		}
	}
	return false, err
}

// isMember reports whether the Raft configuration holds this node at its
// current Raft address.
func (a *Agent) isMember(ctx context.Context, self fsm.NodeInfo) bool {
	servers, err := a.node.Servers(ctx)
	if err != nil {
		return false
	}
	for _, s := range servers {
		if s.ID == self.ID && s.Address == self.RaftAddr {
			return true
		}
	}
	return false
}

// Join implements api.Backend: the leader adds the node as a voter (a
// known id at a new address replaces its old entry) and records its
// addresses; a follower forwards the request to the leader.
func (a *Agent) Join(ctx context.Context, req model.JoinRequest) error {
	if !a.node.IsLeader() {
		return a.toLeader(ctx, func(leader string) error { return a.clientFor(leader).Join(ctx, req) })
	}
	if err := a.node.AddVoter(ctx, req.ID, req.RaftAddr); err != nil {
		return unavailable(err)
	}
	info := fsm.NodeInfo{ID: req.ID, RaftAddr: req.RaftAddr, HTTPAddr: req.HTTPAddr, Proto: req.Proto}
	c, err := fsm.NewCommand(fsm.CmdSetNode, "", "node:"+req.ID, info)
	if err != nil {
		return err
	}
	res, err := a.propose(ctx, c)
	if err != nil {
		return err
	}
	a.log.Info("node joined", "id", req.ID, "raft", req.RaftAddr, "http", req.HTTPAddr)
	return res.Decode(nil)
}

// toLeader runs fn against the leader's HTTP address (one hop).
func (a *Agent) toLeader(ctx context.Context, fn func(leader string) error) error {
	if api.IsForwarded(ctx) {
		return &model.Error{Code: model.CodeUnavailable, Message: "not the leader"}
	}
	leader, err := a.leaderHTTP(ctx, time.Now().Add(a.cfg.LeaderWait))
	if err != nil {
		return err
	}
	return fn(leader)
}

// RemoveNode implements api.Backend.
func (a *Agent) RemoveNode(ctx context.Context, id string) error {
	if !a.node.IsLeader() {
		return a.toLeader(ctx, func(leader string) error { return a.clientFor(leader).RemoveNode(ctx, id) })
	}
	servers, err := a.node.Servers(ctx)
	if err != nil {
		return unavailable(err)
	}
	found := false
	for _, s := range servers {
		found = found || s.ID == id
	}
	if !found {
		return &model.Error{Code: model.CodeNotFound, Field: "node", Message: "no member " + id}
	}
	if err := a.node.RemoveServer(ctx, id); err != nil {
		return unavailable(err)
	}
	c, err := fsm.NewCommand(fsm.CmdRemoveNode, "", "", fsm.TaskRef{Name: id})
	if err != nil {
		return err
	}
	res, err := a.propose(ctx, c)
	if err != nil {
		return err
	}
	a.log.Info("node removed", "id", id)
	return res.Decode(nil)
}

// Transfer implements api.Backend.
func (a *Agent) Transfer(ctx context.Context, id string) error {
	if !a.node.IsLeader() {
		return a.toLeader(ctx, func(leader string) error { return a.clientFor(leader).Transfer(ctx, id) })
	}
	if id == a.cfg.NodeID {
		return nil
	}
	err := a.node.TransferLeadership(ctx, id)
	if errors.Is(err, raftnode.ErrNotFound) {
		return &model.Error{Code: model.CodeNotFound, Field: "id", Message: "no member " + id}
	}
	if err != nil {
		return unavailable(err)
	}
	return nil
}

// Cluster implements api.Backend.
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
	return st, nil
}

// Health implements api.Backend.
func (a *Agent) Health(ctx context.Context) *model.Health {
	leaderID, _ := a.node.Leader()
	h := &model.Health{
		Node: a.cfg.NodeID, Role: a.node.State(), Leader: leaderID,
		Time: model.Time{Time: a.now().UTC()}, AppliedIndex: a.fsm.AppliedIndex(),
		CommitIndex: a.node.CommitIndex(), Term: a.node.Term(), Tasks: a.fsm.CountTasks(),
		Pending: a.fsm.Pending(), Active: a.fsm.ActiveCount(), LastFired: a.fsm.LastFired(),
	}
	if s := a.sched.Load(); s != nil {
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
	return h
}

// Executors implements api.Backend: the leader's dispatcher knows them; a
// follower asks the leader.
func (a *Agent) Executors(ctx context.Context) (*model.ExecutorList, error) {
	if d := a.dispatcher(); d != nil {
		return &model.ExecutorList{Executors: d.Executors()}, nil
	}
	var out *model.ExecutorList
	err := a.toLeader(ctx, func(leader string) (err error) {
		out, err = a.clientFor(leader).Executors(ctx)
		return err
	})
	return out, err
}

// ensureClusterState raises what the cluster as a whole has reached, as
// soon as every member runs a version that can (the protocol gate refuses
// the commands until then; this retries every 10 s): the state machine's
// protocol, from which it applies this version's stricter checks to new
// entries, and a member key, with which nodes without TLS prove
// membership to each other. The first leader that can sets them.
func (a *Agent) ensureClusterState(ctx context.Context) {
	for a.fsm.Proto() < fsm.ProtoVersion || a.fsm.MemberKey() == nil {
		err := a.proposeOwn(ctx, fsm.CmdSetProto, fsm.SetProto{Proto: fsm.ProtoVersion})
		if err == nil && a.fsm.MemberKey() == nil {
			key := make([]byte, 32)
			_, _ = rand.Read(key)
			err = a.proposeOwn(ctx, fsm.CmdSetMemberKey, fsm.SetMemberKey{Key: key})
		}
		if err == nil || ctx.Err() != nil {
			return
		}
		a.log.Debug("raising the cluster's protocol or setting its member key failed; retrying", "error", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(10 * time.Second):
		}
	}
}

// proposeOwn proposes a command of this node's own (not a client's) and
// returns its result's error.
func (a *Agent) proposeOwn(ctx context.Context, t fsm.CommandType, body any) error {
	c, err := fsm.NewCommand(t, "", "node:"+a.cfg.NodeID, body)
	if err != nil {
		return err
	}
	res, err := a.propose(ctx, c)
	if err != nil {
		return err
	}
	return res.Decode(nil)
}
