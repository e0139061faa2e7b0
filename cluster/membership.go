package cluster

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"time"

	"github.com/ax-scheduler/ax/client"
	"github.com/ax-scheduler/ax/fsm/command"
	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/model/member"
	"github.com/ax-scheduler/ax/raftnode"
	"github.com/ax-scheduler/ax/replica"
)

// proposeSelf writes this node's record (through the leader when this
// node follows).
func (c *Cluster) proposeSelf(ctx context.Context) error {
	return c.rep.ProposeOwn(ctx, command.TypeSetNode, c.selfInfo())
}

// register makes sure this node is a member with an up-to-date record: a
// new node joins through the -join addresses; a restarted node whose
// record is stale (its addresses changed, or it was upgraded) records
// itself again. After each leader change it checks the new leader's copy
// of its record once: a replica that applied the record while it ran an
// older version kept no protocol.
func (c *Cluster) register(ctx context.Context) {
	backoff := 200 * time.Millisecond
	verify := false
	for ctx.Err() == nil {
		changed := c.rep.LeaderChanged()
		done, err := c.registerOnce()
		if done {
			if verify {
				c.verifyRecord()
			}
			select {
			case <-ctx.Done():
				return
			case <-changed:
			}
			verify, backoff = true, 200*time.Millisecond
			continue
		}
		if err != nil {
			c.log.Warn("joining the cluster failed; retrying", "join", c.cfg.Join, "error", err, "retry_in", backoff)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 5*time.Second)
	}
}

// verifyRecord asks the leader for its copy of this node's record and
// records the node again if that copy is stale. It asks once: a leader
// of an older version drops the protocol whatever is proposed.
func (c *Cluster) verifyRecord() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	id, _ := c.raft().Leader()
	if id == "" || id == c.cfg.NodeID {
		return // this node's state is the leader's
	}
	st, err := replica.Ask(ctx, c.rep, replica.Call{Once: true},
		// A node that became leader meanwhile holds the leader's copy.
		func(context.Context, *replica.Term) (*model.ClusterStatus, error) { return nil, nil },
		func(ctx context.Context, c *client.Client) (*model.ClusterStatus, error) { return c.Cluster(ctx) })
	if err != nil || st == nil {
		if err != nil {
			c.log.Debug("reading the leader's member records failed", "error", err)
		}
		return
	}
	self := c.selfInfo()
	for _, n := range st.Nodes {
		if n.ID == self.ID && n.HTTPAddr == self.HTTPAddr && n.Proto >= self.Proto {
			return
		}
	}
	if err := c.proposeSelf(ctx); err != nil {
		c.log.Warn("recording this node with the leader failed", "error", err)
		return
	}
	c.log.Info("recorded this node's protocol with the leader", "proto", self.Proto)
}

func (c *Cluster) registerOnce() (done bool, err error) {
	nodes, err := c.state.Nodes()
	if err != nil {
		return false, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if c.needsMemberKey() {
		// Without it this node can reach no peer (memberkey.go).
		if err := c.fetchMemberKey(ctx, c.peerTargets(nodes, true)); err != nil {
			return false, fmt.Errorf("asking for the cluster's member key: %w", err)
		}
	}
	self := c.selfInfo()
	if nodes[self.ID] == self {
		return true, nil
	}
	if c.rep.IsLeader() {
		return false, nil // the leader loop records itself
	}
	if c.isMember(ctx, self) {
		// Only the record is stale: write it through the leader.
		return false, c.proposeSelf(ctx)
	}
	req := member.JoinRequest{ID: self.ID, RaftAddr: self.RaftAddr, HTTPAddr: self.HTTPAddr, Proto: self.Proto}
	targets := c.peerTargets(nodes, false)
	if len(targets) == 0 {
		return false, nil // wait until a leader appears
	}
	for _, t := range targets {
		err = c.rep.Peer(t).Join(ctx, req)
		var me *model.Error
		if errors.As(err, &me) && me.Field == "proto" {
			// A leader of an older version refuses the field: join
			// without it; registration then writes the whole record.
			noProto := req
			noProto.Proto = 0
			err = c.rep.Peer(t).Join(ctx, noProto)
		}
		if err == nil {
			c.log.Info("joined the cluster", "via", t)
			return false, nil // done once the record is applied here
		}
	}
	return false, err
}

// peerTargets lists the HTTP addresses to ask: the known leader's, then
// the -join list, then (all) every other member's.
func (c *Cluster) peerTargets(nodes map[string]command.NodeInfo, all bool) []string {
	var targets []string
	seen := map[string]bool{}
	add := func(addr string) {
		if addr != "" && !seen[addr] {
			seen[addr] = true
			targets = append(targets, addr)
		}
	}
	if id, _ := c.raft().Leader(); id != "" {
		add(nodes[id].HTTPAddr)
	}
	for _, j := range c.cfg.Join {
		add(j)
	}
	if all {
		for id, n := range nodes {
			if id != c.cfg.NodeID {
				add(n.HTTPAddr)
			}
		}
	}
	return targets
}

// isMember reports whether the Raft configuration holds this node at its
// current Raft address.
func (c *Cluster) isMember(ctx context.Context, self command.NodeInfo) bool {
	servers, err := c.raft().Servers(ctx)
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

// Join implements api.ClusterBackend: the leader adds the node as a voter (a
// known id at a new address replaces its old entry) and records its
// addresses; a follower forwards the request to the leader.
func (c *Cluster) Join(ctx context.Context, req member.JoinRequest) error {
	_, err := replica.Ask[struct{}](ctx, c.rep, replica.Call{},
		func(ctx context.Context, _ *replica.Term) (struct{}, error) { return struct{}{}, c.join(ctx, req) },
		func(ctx context.Context, c *client.Client) (struct{}, error) { return struct{}{}, c.Join(ctx, req) })
	return err
}

func (c *Cluster) join(ctx context.Context, req member.JoinRequest) error {
	if p := c.state.Proto(); max(req.Proto, 1) < p {
		// It would meet entries it cannot apply as its peers do (and from
		// replica.PeerAuthProto, no member would talk to it).
		return &model.Error{Code: model.CodePrecondition,
			Message: fmt.Sprintf("node %s runs protocol %d and the cluster is at protocol %d: upgrade it to this release before it joins", req.ID, max(req.Proto, 1), p)}
	}
	if err := c.raft().AddVoter(ctx, req.ID, req.RaftAddr); err != nil {
		return err
	}
	info := command.NodeInfo{ID: req.ID, RaftAddr: req.RaftAddr, HTTPAddr: req.HTTPAddr, Proto: req.Proto}
	cmd, err := command.New(command.TypeSetNode, "", "node:"+req.ID, info)
	if err != nil {
		return err
	}
	res, err := c.rep.Propose(ctx, cmd)
	if err != nil {
		return err
	}
	c.log.Info("node joined", "id", req.ID, "raft", req.RaftAddr, "http", req.HTTPAddr)
	return res.Decode(nil)
}

// RemoveNode implements api.ClusterBackend. It is not repeated once it may have
// reached the leader: a second removal would answer "no member".
func (c *Cluster) RemoveNode(ctx context.Context, id string) error {
	_, err := replica.Ask[struct{}](ctx, c.rep, replica.Call{Once: true},
		func(ctx context.Context, _ *replica.Term) (struct{}, error) { return struct{}{}, c.removeNode(ctx, id) },
		func(ctx context.Context, c *client.Client) (struct{}, error) {
			return struct{}{}, c.RemoveNode(ctx, id)
		})
	return err
}

func (c *Cluster) removeNode(ctx context.Context, id string) error {
	servers, err := c.raft().Servers(ctx)
	if err != nil {
		return err
	}
	found := false
	for _, s := range servers {
		found = found || s.ID == id
	}
	if !found {
		return &model.Error{Code: model.CodeNotFound, Field: "node", Message: "no member " + id}
	}
	if err := c.raft().RemoveServer(ctx, id); err != nil {
		return replica.Unavailable(err)
	}
	cmd, err := command.New(command.TypeRemoveNode, "", "", command.TaskRef{Name: id})
	if err != nil {
		return err
	}
	res, err := c.rep.Propose(ctx, cmd)
	if err != nil {
		return err
	}
	c.log.Info("node removed", "id", id)
	return res.Decode(nil)
}

// Transfer implements api.ClusterBackend. It is never repeated: a second
// transfer would move leadership on again.
func (c *Cluster) Transfer(ctx context.Context, id string) error {
	_, err := replica.Ask[struct{}](ctx, c.rep, replica.Call{Once: true, MovesLeader: true},
		func(ctx context.Context, _ *replica.Term) (struct{}, error) { return struct{}{}, c.transfer(ctx, id) },
		func(ctx context.Context, c *client.Client) (struct{}, error) { return struct{}{}, c.Transfer(ctx, id) })
	return err
}

func (c *Cluster) transfer(ctx context.Context, id string) error {
	if id == c.cfg.NodeID {
		return nil
	}
	servers, err := c.raft().Servers(ctx)
	if err != nil {
		return replica.Unavailable(err)
	}
	voters := 0
	for _, s := range servers {
		if s.Voter && s.ID != c.cfg.NodeID {
			voters++
		}
	}
	if voters == 0 {
		// Not a 503: trying again cannot help.
		return &model.Error{Code: model.CodeConflict,
			Message: "node " + c.cfg.NodeID + " is the cluster's only voter: there is no other node to hand leadership to (add nodes with ax agent -join first)"}
	}
	err = c.raft().TransferLeadership(ctx, id)
	if errors.Is(err, raftnode.ErrNotFound) {
		return &model.Error{Code: model.CodeNotFound, Field: "id", Message: "no member " + id}
	}
	if err != nil {
		return replica.Unavailable(err)
	}
	return nil
}

// EnsureClusterState, a leader's per-term service, raises what the
// cluster as a whole has reached, as
// soon as every member runs a version that can (checked again every
// 10 s): the state machine's protocol, to the lowest its members speak,
// from which it applies each version's stricter checks to new entries
// (and from replica.PeerAuthProto every member requires authenticated Raft
// connections), and a member key, with which nodes without TLS prove
// membership to each other. The first leader that can sets them; the key
// is the one this node's Raft connections use (a node that has none, or
// TLS, makes one).
func (c *Cluster) EnsureClusterState(ctx context.Context) error {
	for {
		err := c.raiseProto(ctx)
		if err == nil && c.state.MemberKey() == nil {
			key := c.raft().PeerAuth().Key
			if key == nil {
				key = make([]byte, 32)
				_, _ = rand.Read(key)
			}
			err = c.rep.ProposeOwn(ctx, command.TypeSetMemberKey, command.SetMemberKey{Key: key})
		}
		if err == nil && c.state.Proto() >= command.ProtoVersion && c.state.MemberKey() != nil || ctx.Err() != nil {
			return nil
		}
		if err != nil {
			c.log.Debug("raising the cluster's protocol or setting its member key failed; retrying", "error", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(10 * time.Second):
		}
	}
}

// raiseProto raises the cluster's protocol to the lowest its members
// speak, if that is higher.
func (c *Cluster) raiseProto(ctx context.Context) error {
	servers, err := c.raft().Servers(ctx)
	if err != nil {
		return err
	}
	nodes, err := c.state.Nodes()
	if err != nil {
		return err
	}
	low, _ := replica.LowestProto(c.cfg.NodeID, servers, nodes)
	if low <= c.state.Proto() {
		return nil
	}
	return c.rep.ProposeOwn(ctx, command.TypeSetProto, command.SetProto{Proto: low})
}

// selfInfo is this node's record: its addresses and the protocol its
// binary speaks.
func (c *Cluster) selfInfo() command.NodeInfo {
	return command.NodeInfo{ID: c.cfg.NodeID, RaftAddr: c.raft().Addr(), HTTPAddr: c.cfg.AdvertiseHTTP, Proto: command.ProtoVersion}
}

// RecordSelf is a leader's per-term service: it stores this node's record
// in the state machine if it is missing or stale (other addresses, or an
// older protocol: the node was upgraded).
func (c *Cluster) RecordSelf(ctx context.Context) error {
	nodes, err := c.state.Nodes()
	if err != nil {
		return err
	}
	if nodes[c.cfg.NodeID] == c.selfInfo() {
		return nil
	}
	if err := c.proposeSelf(ctx); err != nil {
		c.log.Warn("recording own address failed", "error", err)
	}
	return nil
}
