package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/ax-scheduler/ax/api"
	"github.com/ax-scheduler/ax/client"
	"github.com/ax-scheduler/ax/fsm"
	"github.com/ax-scheduler/ax/fsm/command"
	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/raftnode"
	"github.com/ax-scheduler/ax/sched"
)

// errNoLeader is answered 503 with Retry-After.
func errNoLeader(wait time.Duration) error {
	return &model.Error{Code: model.CodeUnavailable, Message: fmt.Sprintf("no leader elected within %s; retry shortly", wait)}
}

// propose commits c through Raft and returns its result: on the leader
// once its term's barrier is done, else forwarded to the leader's internal
// apply endpoint (see onLeader). It retries across leader changes with the same request id,
// which the state machine deduplicates, so an unknown outcome (leadership
// lost mid-commit) never turns into a double write; once the leader wait
// has passed it answers unavailable, naming the request id and whether
// the outcome is unknown.
func (a *Agent) propose(ctx context.Context, c *command.Command) (*fsm.Result, error) {
	if c.ReqID == "" {
		c.ReqID = client.NewRequestID()
	}
	return onLeader(ctx, a, leaderCall[*fsm.Result]{
		reqID:  c.ReqID,
		local:  func(ctx context.Context, _ *term) (*fsm.Result, error) { return a.applyLocal(ctx, c) },
		remote: func(ctx context.Context, cl *client.Client) (*fsm.Result, error) { return a.forward(ctx, cl, c) },
	})
}

func unavailable(err error) error {
	var me *model.Error
	if errors.As(err, &me) {
		return me
	}
	return &model.Error{Code: model.CodeUnavailable, Message: err.Error()}
}

// applyLocal proposes c through the group commit, which stamps the
// leader's time into it; the caller has waited for this term's barrier
// (readyTerm). A command whose type a member does not know yet is refused
// (checkProto); a command that the state machine would refuse (invalid,
// or rejected by the current state, and not a retry of an earlier request)
// is answered without a log entry.
func (a *Agent) applyLocal(ctx context.Context, c *command.Command) (*fsm.Result, error) {
	a.stamp(c)
	if err := a.checkProto(ctx, c); err != nil {
		var me *model.Error
		if errors.As(err, &me) {
			return &fsm.Result{Err: me}, nil
		}
		return nil, err
	}
	if res := a.fsm.Precheck(c); res != nil {
		// Answered from this node's state: only once it is confirmed as
		// the leader, so that a deposed leader's stale state never
		// refuses a write (nor tells an executor to stop a running
		// attempt). A confirmed leader's state holds every acknowledged
		// write: those of earlier terms (its barrier) and its own (acked
		// once applied here).
		if _, err := a.readIndex(ctx); err != nil {
			return nil, err
		}
		if res = a.fsm.Precheck(c); res != nil {
			return res, nil
		}
	}
	return a.submitLocal(ctx, c)
}

// leaderHTTP waits until a leader with a known HTTP address exists.
func (a *Agent) leaderHTTP(ctx context.Context, deadline time.Time) (string, error) {
	for {
		changed := a.node.LeaderChanged()
		if id, _ := a.node.Leader(); id != "" {
			if id == a.cfg.NodeID {
				return a.advertisedHTTP(), nil
			}
			nodes, err := a.fsm.Nodes()
			if err != nil {
				return "", err
			}
			if n, ok := nodes[id]; ok && n.HTTPAddr != "" {
				return n.HTTPAddr, nil
			}
		}
		if time.Now().After(deadline) {
			return "", errNoLeader(a.cfg.LeaderWait)
		}
		select {
		case <-changed:
		case <-a.fsm.Changed():
		case <-time.After(50 * time.Millisecond):
		case <-ctx.Done():
			return "", unavailable(ctx.Err())
		}
	}
}

// stamp completes c with what only the leader decides, from its own state
// and clock, just before it is proposed: a manual trigger's business date
// (today in the task's timezone, by the leader's clock; it lets a manual
// run of an upstream task satisfy the dependsOn of that day's downstream
// fires). Triggers of other sources keep what their proposer set.
func (a *Agent) stamp(c *command.Command) {
	if c.Type != command.TypeTrigger {
		return
	}
	var tr command.Trigger
	if json.Unmarshal(c.Body, &tr) != nil || (tr.Source != "" && tr.Source != model.SourceAPI) {
		return // the state machine refuses a bad body
	}
	t, err := a.fsm.GetTask(tr.Task)
	if err != nil {
		return // Precheck answers a missing task
	}
	tr.Date = t.FireKeys().Date(a.now())
	if b, err := json.Marshal(tr); err == nil {
		c.Body = b
	}
}

// forward sends c to the leader's internal apply endpoint.
func (a *Agent) forward(ctx context.Context, cl *client.Client, c *command.Command) (*fsm.Result, error) {
	var raw []byte
	err := cl.Do(ctx, client.Request{Method: http.MethodPost, Path: api.InternalPrefix + "apply", Body: c.Encode(), NoRetry: true}, &raw)
	if err != nil {
		return nil, err
	}
	var r fsm.Result
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, outcomeUnknown(c.ReqID, fmt.Errorf("undecodable answer: %w", err))
	}
	return &r, nil
}

// ApplyForwarded implements api.InternalBackend: the leader applies a command a
// follower forwarded, once its term's barrier is done (waiting for it
// within the leader wait).
func (a *Agent) ApplyForwarded(ctx context.Context, data []byte) ([]byte, error) {
	c, err := command.Decode(data)
	if err != nil {
		return nil, model.Errorf(model.CodeInvalid, "bad forwarded command: %v", err)
	}
	if c.Type == command.TypeBatch {
		return nil, model.Errorf(model.CodeInvalid, "batches cannot be forwarded")
	}
	if !a.node.IsLeader() {
		return nil, errNotLeader()
	}
	// Local only: a forwarded command is never forwarded again.
	res, err := onLeader(ctx, a, leaderCall[*fsm.Result]{reqID: c.ReqID,
		local: func(ctx context.Context, _ *term) (*fsm.Result, error) { return a.applyLocal(ctx, c) }})
	if err != nil {
		return nil, unavailable(err)
	}
	return json.Marshal(res)
}

// leaderIndex is the index a read must see applied to reflect every write
// acknowledged before the call: the leader's read index, in a round
// shared with concurrent reads (reads.go).
func (a *Agent) leaderIndex(ctx context.Context) (uint64, error) {
	return a.reads.get(ctx, a.fetchReadIndex)
}

// schedFuture adapts a Raft proposal to sched.Future.
type schedFuture struct{ f *raftnode.ApplyFuture }

func (s schedFuture) Wait() (*fsm.Result, error) {
	resp, err := s.f.Wait()
	if err != nil {
		return nil, err
	}
	r, ok := resp.(*fsm.Result)
	if !ok {
		return nil, fmt.Errorf("agent: unexpected apply response %T", resp)
	}
	return r, nil
}

// proposeAsync stamps the leader's time into c and proposes it without
// waiting; the scheduler uses it to keep fires in log order while several
// are in flight.
func (a *Agent) proposeAsync(c *command.Command) sched.Future {
	c.Now, c.Node = a.stamper.stamp(), a.cfg.NodeID
	return schedFuture{a.node.ApplyAsync(c.Encode())}
}
