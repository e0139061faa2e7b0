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

// Forwarding: a request only the leader can answer runs on this node when
// it leads a term whose barrier is done, else it goes to the leader's HTTP
// address, one hop. Every try resolves the leader again (so a node that
// became leader meanwhile serves the request itself), a try ends when this
// node sees the leader change (so a request parked on a leader that is
// gone is given up as soon as Raft notices), and the whole call is bounded
// by a deadline: the leader wait, or a long poll's wait.

// leaderCall is one request for the leader.
type leaderCall struct {
	// local answers the request on this node, the leader of t.
	local func(ctx context.Context, t *term) error
	// remote sends the request to the leader through c.
	remote func(ctx context.Context, c *client.Client) error
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
	// movesLeader: the call changes the leader itself (a transfer), so a
	// try is not ended when this node sees the leader change.
	movesLeader bool
}

// onLeader runs lc on the leader and returns its error: the leader's own
// answer, or unavailable once the deadline passed (saying whether the
// outcome is unknown).
func (a *Agent) onLeader(ctx context.Context, lc leaderCall) error {
	if lc.deadline.IsZero() {
		lc.deadline = time.Now().Add(a.cfg.LeaderWait)
	}
	sent := false // a try may have reached a leader
	for attempt := 0; ; attempt++ {
		changed := a.node.LeaderChanged()
		o := a.try(ctx, lc, changed)
		if o.final {
			return o.err
		}
		if o.sent {
			sent = true
			if lc.once {
				return a.gaveUp(lc, sent, o.err)
			}
		}
		if o.again {
			continue
		}
		if ctx.Err() != nil {
			return unavailable(ctx.Err())
		}
		if !time.Now().Before(lc.deadline) {
			return a.gaveUp(lc, sent, o.err)
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
func (a *Agent) try(ctx context.Context, lc leaderCall, changed <-chan struct{}) outcome {
	if a.node.IsLeader() {
		t, err := a.readyTerm(ctx, lc.deadline)
		if err == nil {
			if err = lc.local(ctx, t); err == nil {
				return outcome{final: true}
			}
		}
		switch {
		case errors.Is(err, raftnode.ErrNotLeader):
			return outcome{err: err} // nothing was proposed: find the new leader
		case errors.Is(err, raftnode.ErrLeadershipLost):
			return outcome{err: err, sent: true}
		case errors.Is(err, raftnode.ErrTimeout):
			return outcome{err: outcomeUnknown(lc.reqID, err), final: true}
		case errors.Is(err, raftnode.ErrShutdown):
			return outcome{err: unavailable(err), final: true}
		}
		return outcome{err: err, final: true}
	}
	if api.IsForwarded(ctx) {
		// One hop only: the node that forwarded to us will retry.
		return outcome{err: errNotLeader(), final: true}
	}
	find := lc.deadline
	if lc.findWithin > 0 {
		find = minTime(find, time.Now().Add(lc.findWithin))
	}
	leader, err := a.leaderHTTP(ctx, find)
	if err != nil {
		if lc.findWithin > 0 && ctx.Err() == nil {
			return outcome{err: &model.Error{Code: model.CodeUnavailable, Message: "this node knows no leader; try another server"}, final: true}
		}
		return outcome{err: err}
	}
	if leader == a.advertisedHTTP() {
		// This node won an election meanwhile: it answers itself, never
		// over HTTP.
		return outcome{err: errNotLeader(), again: a.node.IsLeader()}
	}
	if lc.movesLeader {
		changed = nil // never ready: the try runs to its answer or deadline
	}
	tctx, cancel := a.tryContext(withForward(ctx, lc.reqID), lc.deadline, changed)
	err = lc.remote(tctx, a.clientFor(leader))
	ended := tctx.Err() != nil
	cancel()
	switch {
	case err == nil:
		return outcome{final: true}
	case !errors.Is(err, model.ErrUnavailable) && !ended:
		return outcome{err: unavailable(err), final: true} // the leader's answer
	}
	return outcome{err: fmt.Errorf("leader %s: %w", leader, err), sent: !errors.Is(err, client.ErrNotSent)}
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

// gaveUp is the answer of a call that found no leader, or no answer from
// it, by its deadline.
func (a *Agent) gaveUp(lc leaderCall, sent bool, last error) error {
	if !sent {
		var me *model.Error
		if errors.As(last, &me) && me.Code == model.CodeUnavailable && lc.reqID == "" {
			return me
		}
		msg := fmt.Sprintf("no leader reachable within %s", a.cfg.LeaderWait)
		if lc.reqID != "" {
			msg += "; request " + lc.reqID + " was not applied"
		}
		return &model.Error{Code: model.CodeUnavailable, Message: msg + "; retry shortly"}
	}
	return outcomeUnknown(lc.reqID, last)
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
