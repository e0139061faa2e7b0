package replica

import (
	"github.com/ax-scheduler/ax/fsm"
	"github.com/ax-scheduler/ax/raftnode"
	"github.com/hashicorp/go-hclog"
)

// Raft authentication without TLS (raftnode/peerauth.go): every Raft
// connection proves membership with the cluster's member key. The first
// node of a cluster makes the key and keeps it in its data dir; its
// leader records it in the state machine (set_member_key), where the
// HTTP member header uses it too. A joining node asks for it with POST
// /v1/cluster/member-key (admin: the same credentials as the join) before
// it joins (the cluster role). A node upgraded from a release without the
// handshake adopts the key its state machine holds, and accepts members
// without the handshake until the cluster reaches PeerAuthProto, which
// needs every member to run this release.

// PeerAuthProto is the protocol from which every member authenticates
// its Raft connections.
const PeerAuthProto = 6

// peerAuthConfig is the Raft authentication of a node without TLS, from
// what its state machine says at start.
func peerAuthConfig(f *fsm.FSM) *raftnode.PeerAuthConfig {
	return &raftnode.PeerAuthConfig{
		StateKey: f.MemberKey(),
		Required: f.Proto() >= PeerAuthProto,
		Legacy:   !f.Rebuilt() && f.Proto() < PeerAuthProto,
	}
}

// watchPeerAuth follows the state machine for what changes the node's
// Raft authentication, until it requires the handshake with a key: the
// member key arriving on a node upgraded from a release without it, and
// the cluster reaching PeerAuthProto.
func watchPeerAuth(stop <-chan struct{}, f *fsm.FSM, n *raftnode.Node, log hclog.Logger) {
	for {
		changed := f.Changed()
		if syncPeerAuth(f, n, log) {
			return
		}
		select {
		case <-stop:
			return
		case <-changed:
		}
	}
}

// syncPeerAuth brings the node's Raft authentication up to its state
// machine, and reports whether nothing is left to follow.
func syncPeerAuth(f *fsm.FSM, n *raftnode.Node, log hclog.Logger) (done bool) {
	st := n.PeerAuth()
	if !st.Enabled || st.Required && st.Key != nil {
		return true
	}
	if st.Waiting {
		return false // the join asks the cluster (the cluster role's fetchMemberKey)
	}
	if st.Key == nil && !st.Required {
		if key := f.MemberKey(); key != nil {
			if err := n.SetMemberKey(key, false); err != nil {
				log.Error("adopting the cluster's member key failed", "error", err)
			} else {
				log.Info("adopted the cluster's member key: Raft connections to upgraded members authenticate with it")
			}
		}
	}
	if !st.Required && f.Proto() >= PeerAuthProto {
		if err := n.RequirePeerAuth(); err != nil {
			log.Error("requiring authenticated Raft connections failed", "error", err)
		} else {
			log.Info("every member authenticates Raft connections now: connections without the member-key handshake are refused")
		}
	}
	return false
}
