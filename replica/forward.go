package replica

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/ax-scheduler/ax/api"
	"github.com/ax-scheduler/ax/client"
	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/raftnode"
)

// Call is one request that only the leader can answer (see OnLeader).
type Call struct {
	// Local answers the request on this node, the leader of t (its
	// barrier done).
	Local func(ctx context.Context, t *Term) error
	// Remote sends the request to the leader through c, a client for the
	// leader's HTTP address that marks the request forwarded. Nil: the
	// call is answered on this node or not at all (a forwarded apply).
	Remote func(ctx context.Context, c *client.Client) error
	// Deadline bounds waiting for a leader (or this node's barrier) and
	// every try; zero means the leader wait from now.
	Deadline time.Time
	// Once: a try that may have reached the leader is not repeated (the
	// request is not idempotent); its outcome is unknown.
	Once bool
	// ReqID, when set, is sent as the Idempotency-Key of every try and
	// named in errors.
	ReqID string
	// FindWithin, when set, bounds waiting to learn a leader: a node that
	// knows none by then answers unavailable at once, so that an executor,
	// which lists several servers, asks another while its lease is young.
	FindWithin time.Duration
	// NoLeader, when set, is the answer once FindWithin has passed with
	// no leader known (default: "this node knows no leader; try another
	// server").
	NoLeader error
	// MovesLeader: the call changes the leader itself (a transfer), so a
	// try is not ended when this node sees the leader change.
	MovesLeader bool
}

// Leader answers calls only the leader can answer (*Replica).
type Leader interface {
	OnLeader(ctx context.Context, c Call) error
}

// Ask is OnLeader for a call with an answer of type T: local and remote
// replace c.Local and c.Remote.
func Ask[T any](ctx context.Context, l Leader, c Call,
	local func(ctx context.Context, t *Term) (T, error), remote func(ctx context.Context, c *client.Client) (T, error)) (T, error) {
	var out T
	c.Local = func(ctx context.Context, t *Term) error {
		v, err := local(ctx, t)
		if err == nil {
			out = v
		}
		return err
	}
	if remote != nil {
		c.Remote = func(ctx context.Context, cl *client.Client) error {
			v, err := remote(ctx, cl)
			if err == nil {
				out = v
			}
			return err
		}
	}
	if err := l.OnLeader(ctx, c); err != nil {
		var zero T
		return zero, err
	}
	return out, nil
}

// OnLeader answers c on the leader: every request that only the leader
// can answer goes through it.
//
// Each try resolves the leader anew. When this node leads, it waits for
// its term's barrier (terms.ready) and runs c.Local. Otherwise it sends
// c.Remote to the leader's HTTP address, one hop: the request carries
// api.HeaderForwarded (and c.ReqID as its Idempotency-Key), and a node
// that receives a forwarded request it cannot answer itself (it is not
// the leader, or no longer) answers "not the leader" instead of
// forwarding it again; the node that forwarded it tries again. The
// principal of ctx travels with it (peerHeaders).
//
// What is tried again, until c.Deadline (the leader wait by default):
// finding no leader, this node's own proposal refused because it lost
// leadership before proposing (raftnode.ErrNotLeader, the end of its term
// included), and a forwarded try that failed unavailable, or that ended
// because this node saw the leader change (a try is cut short then,
// unless c.MovesLeader). Between tries it waits for the leader to change,
// or 20 ms more per try, 200 ms at most. A try that may have reached a
// leader (leadership lost mid-commit, a sent request without an answer)
// is repeated only without c.Once, and the same request id makes the
// repeat safe. Not retried: any other answer of the leader, a Raft
// timeout or shutdown, and the end of ctx. Giving up answers unavailable,
// saying whether the outcome is unknown and naming the request id.
func (r *Replica) OnLeader(ctx context.Context, c Call) error {
	if c.Deadline.IsZero() {
		c.Deadline = time.Now().Add(r.cfg.LeaderWait)
	}
	sent := false // a try may have reached a leader
	for attempt := 0; ; attempt++ {
		changed := r.node.LeaderChanged()
		o := r.try(ctx, &c, changed)
		if o.final {
			return o.err
		}
		if o.sent {
			sent = true
			if c.Once {
				return r.gaveUp(c.ReqID, sent, o.err)
			}
		}
		if o.again {
			continue
		}
		if ctx.Err() != nil {
			return Unavailable(ctx.Err())
		}
		if !time.Now().Before(c.Deadline) {
			return r.gaveUp(c.ReqID, sent, o.err)
		}
		r.log.Debug("request to the leader failed; retrying", "req", c.ReqID, "error", o.err)
		// Wait for the leader to change, or a short pause.
		pause := time.NewTimer(min(time.Duration(min(20*(attempt+1), 200))*time.Millisecond, time.Until(c.Deadline)))
		select {
		case <-changed:
		case <-pause.C:
		case <-ctx.Done():
		}
		pause.Stop()
	}
}

// outcome is how one try of a Call went.
type outcome struct {
	err   error
	final bool // err (nil: success) is the answer
	sent  bool // the try may have reached a leader
	again bool // try again at once
}

// try makes one try: locally when this node leads, else at the leader.
func (r *Replica) try(ctx context.Context, c *Call, changed <-chan struct{}) outcome {
	if r.node.IsLeader() {
		t, err := r.terms.ready(ctx, c.Deadline)
		if err == nil {
			if err = c.Local(ctx, t); err == nil {
				return outcome{final: true}
			}
		}
		switch {
		case errors.Is(err, raftnode.ErrNotLeader):
			return outcome{err: err} // nothing was proposed: find the new leader
		case errors.Is(err, raftnode.ErrLeadershipLost):
			return outcome{err: err, sent: true}
		case errors.Is(err, raftnode.ErrTimeout):
			return outcome{err: outcomeUnknown(c.ReqID, err), final: true}
		case errors.Is(err, raftnode.ErrShutdown):
			return outcome{err: Unavailable(err), final: true}
		}
		return outcome{err: err, final: true}
	}
	if api.IsForwarded(ctx) || c.Remote == nil {
		// One hop only: the node that forwarded to us will retry.
		return outcome{err: errNotLeader(), final: true}
	}
	find := c.Deadline
	if c.FindWithin > 0 {
		find = minTime(find, time.Now().Add(c.FindWithin))
	}
	leader, err := r.leaderHTTP(ctx, find)
	if err != nil {
		if c.FindWithin > 0 && ctx.Err() == nil {
			if c.NoLeader != nil {
				return outcome{err: c.NoLeader, final: true}
			}
			return outcome{err: &model.Error{Code: model.CodeUnavailable, Message: "this node knows no leader; try another server"}, final: true}
		}
		return outcome{err: err}
	}
	if leader == r.cfg.AdvertiseHTTP {
		// This node won an election meanwhile: it answers itself, never
		// over HTTP.
		return outcome{err: errNotLeader(), again: r.node.IsLeader()}
	}
	if c.MovesLeader {
		changed = nil // never ready: the try runs to its answer or deadline
	}
	tctx, cancel := tryContext(withForward(ctx, c.ReqID), c.Deadline, changed)
	keyless := r.cfg.TLS == nil && r.fsm.MemberKey() == nil
	err = c.Remote(tctx, r.Peer(leader))
	ended := tctx.Err() != nil
	cancel()
	switch {
	case err == nil:
		return outcome{final: true}
	case keyless && r.awaitMemberKey(ctx, err, c.Deadline):
		// Refused before it was read: this node had not applied the
		// cluster's member key yet; now it has.
		return outcome{err: err, again: true}
	case !errors.Is(err, model.ErrUnavailable) && !ended:
		return outcome{err: Unavailable(err), final: true} // the leader's answer
	}
	return outcome{err: fmt.Errorf("leader %s: %w", leader, err), sent: !errors.Is(err, client.ErrNotSent)}
}

// tryContext bounds one try at the leader: it ends at deadline, or as soon
// as this node sees the leader change.
func tryContext(ctx context.Context, deadline time.Time, changed <-chan struct{}) (context.Context, context.CancelFunc) {
	tctx, cancel := context.WithDeadline(ctx, deadline)
	go func() {
		select {
		case <-changed:
			cancel()
		case <-tctx.Done():
		}
	}()
	return tctx, cancel
}

// gaveUp is the answer of a call (with request id reqID, if any) that
// found no leader, or no answer from it, by its deadline.
func (r *Replica) gaveUp(reqID string, sent bool, last error) error {
	if !sent {
		var me *model.Error
		if errors.As(last, &me) && me.Code == model.CodeUnavailable && reqID == "" {
			return me
		}
		msg := fmt.Sprintf("no leader reachable within %s", r.cfg.LeaderWait)
		if reqID != "" {
			msg += "; request " + reqID + " was not applied"
		}
		return &model.Error{Code: model.CodeUnavailable, Message: msg + "; retry shortly"}
	}
	return outcomeUnknown(reqID, last)
}

// leaderHTTP waits until a leader with a known HTTP address exists.
func (r *Replica) leaderHTTP(ctx context.Context, deadline time.Time) (string, error) {
	for {
		changed := r.node.LeaderChanged()
		if id, _ := r.node.Leader(); id != "" {
			if id == r.cfg.NodeID {
				return r.cfg.AdvertiseHTTP, nil
			}
			nodes, err := r.fsm.Nodes()
			if err != nil {
				return "", err
			}
			if n, ok := nodes[id]; ok && n.HTTPAddr != "" {
				return n.HTTPAddr, nil
			}
		}
		if time.Now().After(deadline) {
			return "", errNoLeader(r.cfg.LeaderWait)
		}
		select {
		case <-changed:
		case <-r.fsm.Changed():
		case <-time.After(50 * time.Millisecond):
		case <-ctx.Done():
			return "", Unavailable(ctx.Err())
		}
	}
}

// forwardKey marks a context whose requests to peers are forwarded on
// behalf of a client: the receiver must answer them itself.
type forwardKey struct{}

type forwarding struct{ reqID string }

func withForward(ctx context.Context, reqID string) context.Context {
	return context.WithValue(ctx, forwardKey{}, forwarding{reqID: reqID})
}

// forwardHeaders are the headers of a forwarded request: the mark that
// stops a second hop and the request id that makes its retries
// idempotent.
func forwardHeaders(ctx context.Context, h http.Header) {
	f, ok := ctx.Value(forwardKey{}).(forwarding)
	if !ok {
		return
	}
	h.Set(api.HeaderForwarded, "1")
	if f.reqID != "" {
		h.Set(client.HeaderIdempotencyKey, f.reqID)
	}
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// awaitMemberKey reports whether err, the answer to a request this node
// sent without a member key, is the leader refusing it as a non-member,
// and if so waits until deadline for the key to apply here. A new
// cluster's leader sets the key in its first entries; a follower that
// forwards before applying that entry is refused (403, before the request
// is read), and would otherwise hand that refusal to its client.
func (r *Replica) awaitMemberKey(ctx context.Context, err error, deadline time.Time) bool {
	if !api.IsMembersOnly(err) {
		return false
	}
	wctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	for {
		ch := r.fsm.Changed()
		if r.fsm.MemberKey() != nil {
			return true
		}
		select {
		case <-ch:
		case <-wctx.Done():
			return false
		}
	}
}
