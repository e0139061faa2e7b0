package cluster

import (
	"context"
	"errors"

	"github.com/ax-scheduler/ax/api"
	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/model/member"
)

// needsMemberKey reports whether this node must ask the cluster for its
// member key before it can talk Raft: a new node joining, or a node whose
// key file is lost.
func (c *Cluster) needsMemberKey() bool {
	st := c.raft().PeerAuth()
	return st.Enabled && st.Key == nil && (st.Required || st.Waiting)
}

// fetchMemberKey asks targets (HTTP addresses of members) for the
// cluster's member key. A new node whose cluster runs a release without
// the handshake (it does not know the route) joins without it.
func (c *Cluster) fetchMemberKey(ctx context.Context, targets []string) error {
	waiting := c.raft().PeerAuth().Waiting
	err := errors.New("no member to ask for the cluster's member key")
	for _, t := range targets {
		var mk *member.MemberKey
		mk, err = c.rep.Peer(t).MemberKey(ctx)
		if err == nil {
			if err = c.raft().SetMemberKey(mk.Key, mk.Required); err != nil {
				return err
			}
			c.log.Info("received the cluster's member key", "via", t, "required", mk.Required)
			return nil
		}
		// A release without the route answers 405 (api's
		// method_not_allowed: DELETE /v1/cluster/{node} has the path).
		var me *model.Error
		if waiting && errors.As(err, &me) && (me.Code == model.CodeNotFound || me.Code == "method_not_allowed") {
			c.raft().AllowLegacyPeers()
			c.log.Warn("the cluster does not authenticate Raft connections yet (a release without the member-key handshake): joining without it until every member is upgraded",
				"via", t, "answer", err)
			return nil
		}
	}
	return err
}

// MemberKey implements api.ClusterBackend: the member key this node
// authenticates Raft connections with, for a node about to join.
func (c *Cluster) MemberKey(ctx context.Context) (*member.MemberKey, error) {
	st := c.raft().PeerAuth()
	switch {
	case c.cfg.TLS:
		return nil, &model.Error{Code: model.CodeNotFound, Message: "this cluster authenticates Raft connections with TLS: a joining node presents its certificate, and there is no member key to hand out"}
	case st.Key != nil:
		who := "anonymous"
		if p := api.PrincipalFrom(ctx); p != nil {
			who = p.Name
		}
		c.log.Info("handed the member key out (a node about to join)", "to", who)
		return &member.MemberKey{Key: st.Key, Required: st.Required}, nil
	case st.Required || st.Waiting:
		return nil, &model.Error{Code: model.CodeUnavailable, Message: "this node has no member key yet: ask another member"}
	default:
		return nil, &model.Error{Code: model.CodeNotFound, Message: "this cluster does not authenticate Raft connections yet: a member runs a release without the member-key handshake"}
	}
}
