package agent

import (
	"context"
	"errors"

	"github.com/ax-scheduler/ax/api"
	"github.com/ax-scheduler/ax/fsm"
	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/raftnode"
)

// Raft authentication without TLS (raftnode/peerauth.go): every Raft
// connection proves membership with the cluster's member key. The first
// node of a cluster makes the key and keeps it in its data dir; its
// leader records it in the state machine (set_member_key), where the
// HTTP member header uses it too. A joining node asks for it with POST
// /v1/cluster/member-key (admin: the same credentials as the join) before
// it joins. A node upgraded from a release without the handshake adopts
// the key its state machine holds, and accepts members without the
// handshake until the cluster reaches peerAuthProto, which needs every
// member to run this release.

// peerAuthProto is the protocol from which every member authenticates
// its Raft connections.
const peerAuthProto = 6

// peerAuthConfig is the Raft authentication of a node without TLS, from
// what its state machine says at start.
func peerAuthConfig(f *fsm.FSM) *raftnode.PeerAuthConfig {
	return &raftnode.PeerAuthConfig{
		StateKey: f.MemberKey(),
		Required: f.Proto() >= peerAuthProto,
		Legacy:   !f.Rebuilt() && f.Proto() < peerAuthProto,
	}
}

// watchPeerAuth follows the state machine for what changes the node's
// Raft authentication, until it requires the handshake with a key: the
// member key arriving on a node upgraded from a release without it, and
// the cluster reaching peerAuthProto.
func (a *Agent) watchPeerAuth() {
	defer a.wg.Done()
	for {
		changed := a.fsm.Changed()
		if a.syncPeerAuth() {
			return
		}
		select {
		case <-a.stopCh:
			return
		case <-changed:
		}
	}
}

// syncPeerAuth brings the node's Raft authentication up to its state
// machine, and reports whether nothing is left to follow.
func (a *Agent) syncPeerAuth() (done bool) {
	st := a.node.PeerAuth()
	if !st.Enabled || st.Required && st.Key != nil {
		return true
	}
	if st.Waiting {
		return false // the join asks the cluster (fetchMemberKey)
	}
	if st.Key == nil && !st.Required {
		if key := a.fsm.MemberKey(); key != nil {
			if err := a.node.SetMemberKey(key, false); err != nil {
				a.log.Error("adopting the cluster's member key failed", "error", err)
			} else {
				a.log.Info("adopted the cluster's member key: Raft connections to upgraded members authenticate with it")
			}
		}
	}
	if !st.Required && a.fsm.Proto() >= peerAuthProto {
		if err := a.node.RequirePeerAuth(); err != nil {
			a.log.Error("requiring authenticated Raft connections failed", "error", err)
		} else {
			a.log.Info("every member authenticates Raft connections now: connections without the member-key handshake are refused")
		}
	}
	return false
}

// needsMemberKey reports whether this node must ask the cluster for its
// member key before it can talk Raft: a new node joining, or a node whose
// key file is lost.
func (a *Agent) needsMemberKey() bool {
	st := a.node.PeerAuth()
	return st.Enabled && st.Key == nil && (st.Required || st.Waiting)
}

// fetchMemberKey asks targets (HTTP addresses of members) for the
// cluster's member key. A new node whose cluster runs a release without
// the handshake (it does not know the route) joins without it.
func (a *Agent) fetchMemberKey(ctx context.Context, targets []string) error {
	waiting := a.node.PeerAuth().Waiting
	err := errors.New("no member to ask for the cluster's member key")
	for _, t := range targets {
		var mk *model.MemberKey
		mk, err = a.clientFor(t).MemberKey(ctx)
		if err == nil {
			if err = a.node.SetMemberKey(mk.Key, mk.Required); err != nil {
				return err
			}
			a.log.Info("received the cluster's member key", "via", t, "required", mk.Required)
			return nil
		}
		// A release without the route answers 405 (api's
		// method_not_allowed: DELETE /v1/cluster/{node} has the path).
		var me *model.Error
		if waiting && errors.As(err, &me) && (me.Code == model.CodeNotFound || me.Code == "method_not_allowed") {
			a.node.AllowLegacyPeers()
			a.log.Warn("the cluster does not authenticate Raft connections yet (a release without the member-key handshake): joining without it until every member is upgraded",
				"via", t, "answer", err)
			return nil
		}
	}
	return err
}

// MemberKey implements api.ClusterBackend: the member key this node
// authenticates Raft connections with, for a node about to join.
func (a *Agent) MemberKey(ctx context.Context) (*model.MemberKey, error) {
	st := a.node.PeerAuth()
	switch {
	case a.tlsOn():
		return nil, &model.Error{Code: model.CodeNotFound, Message: "this cluster authenticates Raft connections with TLS: a joining node presents its certificate, and there is no member key to hand out"}
	case st.Key != nil:
		who := "anonymous"
		if p := api.PrincipalFrom(ctx); p != nil {
			who = p.Name
		}
		a.log.Info("handed the member key out (a node about to join)", "to", who)
		return &model.MemberKey{Key: st.Key, Required: st.Required}, nil
	case st.Required || st.Waiting:
		return nil, &model.Error{Code: model.CodeUnavailable, Message: "this node has no member key yet: ask another member"}
	default:
		return nil, &model.Error{Code: model.CodeNotFound, Message: "this cluster does not authenticate Raft connections yet: a member runs a release without the member-key handshake"}
	}
}
