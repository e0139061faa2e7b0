package agent

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

// leaderCall is one request that only the leader can answer, with an
// answer of type T.
type leaderCall[T any] struct {
	// local answers the request on this node, the leader of t (its
	// barrier done).
	local func(ctx context.Context, t *term) (T, error)
	// remote sends the request to the leader through c, a client for the
	// leader's HTTP address that marks the request forwarded. Nil: the
	// call is answered on this node or not at all (a forwarded apply).
	remote func(ctx context.Context, c *client.Client) (T, error)
	// deadline bounds waiting for a leader (or this node's barrier) and
	// every try; zero means the leader wait from now.
	deadline time.Time
	// once: a try that may have reached the leader is not repeated (the
	// request is not idempotent); its outcome is unknown.
	once bool
	// reqID, when set, is sent as the Idempotency-Key of every try and
	// named in errors.
	reqID string
	// findWithin, when set, bounds waiting to learn a leader: a node that
	// knows none by then answers unavailable at once, so that an executor,
	// which lists several servers, asks another while its lease is young.
	findWithin time.Duration
	// noLeader, when set, is the answer once findWithin has passed with
	// no leader known (default: "this node knows no leader; try another
	// server").
	noLeader error
	// movesLeader: the call changes the leader itself (a transfer), so a
	// try is not ended when this node sees the leader change.
	movesLeader bool
}

// onLeader answers lc on the leader: every site in this package that only
// the leader can answer goes through it.
//
// Each try resolves the leader anew. When this node leads, it waits for
// its term's barrier (readyTerm) and runs lc.local. Otherwise it sends
// lc.remote to the leader's HTTP address, one hop: the request carries
// api.HeaderForwarded (and lc.reqID as its Idempotency-Key), and a node
// that receives a forwarded request it cannot answer itself (it is not
// the leader, or no longer) answers "not the leader" instead of
// forwarding it again; the node that forwarded it tries again. The
// principal of ctx travels with it (memberHeaders).
//
// What is tried again, until lc.deadline (the leader wait by default):
// finding no leader, this node's own proposal refused because it lost
// leadership before proposing (raftnode.ErrNotLeader), and a forwarded try
// that failed unavailable, or that ended because this node saw the leader
// change (a try is cut short then, unless lc.movesLeader). Between tries it
// waits for the leader to change, or 20 ms more per try, 200 ms at most.
// A try that may have reached a leader (leadership lost mid-commit, a sent
// request without an answer) is repeated only without lc.once, and the
// same request id makes the repeat safe. Not retried: any other answer of
// the leader, a Raft timeout or shutdown, and the end of ctx. Giving up
// answers unavailable, saying whether the outcome is unknown and naming
// the request id.
func onLeader[T any](ctx context.Context, a *Agent, lc leaderCall[T]) (T, error) {
	if lc.deadline.IsZero() {
		lc.deadline = time.Now().Add(a.cfg.LeaderWait)
	}
	var zero T
	sent := false // a try may have reached a leader
	for attempt := 0; ; attempt++ {
		changed := a.node.LeaderChanged()
		v, o := try(ctx, a, &lc, changed)
		if o.final {
			if o.err != nil {
				return zero, o.err
			}
			return v, nil
		}
		if o.sent {
			sent = true
			if lc.once {
				return zero, a.gaveUp(lc.reqID, sent, o.err)
			}
		}
		if o.again {
			continue
		}
		if ctx.Err() != nil {
			return zero, unavailable(ctx.Err())
		}
		if !time.Now().Before(lc.deadline) {
			return zero, a.gaveUp(lc.reqID, sent, o.err)
		}
		a.log.Debug("request to the leader failed; retrying", "req", lc.reqID, "error", o.err)
		// Wait for the leader to change, or a short pause.
		pause := time.NewTimer(min(time.Duration(min(20*(attempt+1), 200))*time.Millisecond, time.Until(lc.deadline)))
		select {
		case <-changed:
		case <-pause.C:
		case <-ctx.Done():
		}
		pause.Stop()
	}
}

// outcome is how one try of a leaderCall went.
type outcome struct {
	err   error
	final bool // err (nil: success) is the answer
	sent  bool // the try may have reached a leader
	again bool // try again at once
}

// try makes one try: locally when this node leads, else at the leader.
func try[T any](ctx context.Context, a *Agent, lc *leaderCall[T], changed <-chan struct{}) (T, outcome) {
	var zero T
	if a.node.IsLeader() {
		t, err := a.readyTerm(ctx, lc.deadline)
		if err == nil {
			var v T
			if v, err = lc.local(ctx, t); err == nil {
				return v, outcome{final: true}
			}
		}
		switch {
		case errors.Is(err, raftnode.ErrNotLeader):
			return zero, outcome{err: err} // nothing was proposed: find the new leader
		case errors.Is(err, raftnode.ErrLeadershipLost):
			return zero, outcome{err: err, sent: true}
		case errors.Is(err, raftnode.ErrTimeout):
			return zero, outcome{err: outcomeUnknown(lc.reqID, err), final: true}
		case errors.Is(err, raftnode.ErrShutdown):
			return zero, outcome{err: unavailable(err), final: true}
		}
		return zero, outcome{err: err, final: true}
	}
	if api.IsForwarded(ctx) || lc.remote == nil {
		// One hop only: the node that forwarded to us will retry.
		return zero, outcome{err: errNotLeader(), final: true}
	}
	find := lc.deadline
	if lc.findWithin > 0 {
		find = minTime(find, time.Now().Add(lc.findWithin))
	}
	leader, err := a.leaderHTTP(ctx, find)
	if err != nil {
		if lc.findWithin > 0 && ctx.Err() == nil {
			if lc.noLeader != nil {
				return zero, outcome{err: lc.noLeader, final: true}
			}
			return zero, outcome{err: &model.Error{Code: model.CodeUnavailable, Message: "this node knows no leader; try another server"}, final: true}
		}
		return zero, outcome{err: err}
	}
	if leader == a.advertisedHTTP() {
		// This node won an election meanwhile: it answers itself, never
		// over HTTP.
		return zero, outcome{err: errNotLeader(), again: a.node.IsLeader()}
	}
	if lc.movesLeader {
		changed = nil // never ready: the try runs to its answer or deadline
	}
	tctx, cancel := a.tryContext(withForward(ctx, lc.reqID), lc.deadline, changed)
	keyless := !a.tlsOn() && a.fsm.MemberKey() == nil
	v, err := lc.remote(tctx, a.clientFor(leader))
	ended := tctx.Err() != nil
	cancel()
	switch {
	case err == nil:
		return v, outcome{final: true}
	case keyless && a.awaitMemberKey(ctx, err, lc.deadline):
		// Refused before it was read: this node had not applied the
		// cluster's member key yet; now it has.
		return zero, outcome{err: err, again: true}
	case !errors.Is(err, model.ErrUnavailable) && !ended:
		return zero, outcome{err: unavailable(err), final: true} // the leader's answer
	}
	return zero, outcome{err: fmt.Errorf("leader %s: %w", leader, err), sent: !errors.Is(err, client.ErrNotSent)}
}

// tryContext bounds one try at the leader: it ends at deadline, or as soon
// as this node sees the leader change.
func (a *Agent) tryContext(ctx context.Context, deadline time.Time, changed <-chan struct{}) (context.Context, context.CancelFunc) {
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
func (a *Agent) gaveUp(reqID string, sent bool, last error) error {
	if !sent {
		var me *model.Error
		if errors.As(last, &me) && me.Code == model.CodeUnavailable && reqID == "" {
			return me
		}
		msg := fmt.Sprintf("no leader reachable within %s", a.cfg.LeaderWait)
		if reqID != "" {
			msg += "; request " + reqID + " was not applied"
		}
		return &model.Error{Code: model.CodeUnavailable, Message: msg + "; retry shortly"}
	}
	return outcomeUnknown(reqID, last)
}

// outcomeUnknown is the answer to a write that may or may not have been
// applied: retrying it with the same request id returns the first outcome.
func outcomeUnknown(reqID string, cause error) error {
	msg := "outcome unknown: the leader did not answer"
	if cause != nil {
		msg += " (" + cause.Error() + ")"
	}
	if reqID != "" {
		msg += "; request " + reqID + " may or may not have been applied: retry with Idempotency-Key: " + reqID + " to get its first outcome"
	}
	return &model.Error{Code: model.CodeUnavailable, Message: msg}
}

func errNotLeader() error {
	return &model.Error{Code: model.CodeUnavailable, Message: "not the leader"}
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
// and if so waits until deadline for the key to apply here. A new cluster's leader sets
// the key in its first entries; a follower that forwards before applying
// that entry is refused (403, before the request is read), and would
// otherwise hand that refusal to its client.
func (a *Agent) awaitMemberKey(ctx context.Context, err error, deadline time.Time) bool {
	if !api.IsMembersOnly(err) {
		return false
	}
	wctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	for {
		ch := a.fsm.Changed()
		if a.fsm.MemberKey() != nil {
			return true
		}
		select {
		case <-ch:
		case <-wctx.Done():
			return false
		}
	}
}
