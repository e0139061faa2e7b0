package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"ax/api"
	"ax/client"
	"ax/fsm"
	"ax/model"
	"ax/raftnode"
	"ax/sched"
)

// errNoLeader is answered 503 with Retry-After.
func errNoLeader(wait time.Duration) error {
	return &model.Error{Code: model.CodeUnavailable, Message: fmt.Sprintf("no leader elected within %s; retry shortly", wait)}
}

// propose commits c through Raft and returns its result. On a follower it
// forwards c to the leader. It retries across leader changes with the same
// request id, which the state machine deduplicates, so an unknown outcome
// (leadership lost mid-commit) never turns into a double write.
func (a *Agent) propose(ctx context.Context, c *fsm.Command) (*fsm.Result, error) {
	if c.ReqID == "" {
		c.ReqID = client.NewRequestID()
	}
	forwarded := api.IsForwarded(ctx)
	deadline := time.Now().Add(a.cfg.LeaderWait)
	for attempt := 0; ; attempt++ {
		changed := a.node.LeaderChanged()
		var err error
		if a.node.IsLeader() {
			var res *fsm.Result
			res, err = a.applyLocal(ctx, c)
			if err == nil {
				return res, nil
			}
			if !errors.Is(err, raftnode.ErrNotLeader) && !errors.Is(err, raftnode.ErrLeadershipLost) {
				return nil, unavailable(err)
			}
			a.log.Debug("write interrupted by leadership change; retrying", "req", c.ReqID, "error", err)
		} else if forwarded {
			// One hop only: the node that forwarded to us will retry.
			return nil, &model.Error{Code: model.CodeUnavailable, Message: "not the leader"}
		} else {
			var leader string
			leader, err = a.leaderHTTP(ctx, deadline)
			if err != nil {
				return nil, err
			}
			var res *fsm.Result
			res, err = a.forward(ctx, leader, c)
			if err == nil {
				return res, nil
			}
			if !errors.Is(err, model.ErrUnavailable) {
				return nil, err
			}
			a.log.Debug("forward failed; retrying", "leader", leader, "req", c.ReqID, "error", err)
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return nil, errNoLeader(a.cfg.LeaderWait)
		}
		// Wait for the leader to change, or a short pause.
		select {
		case <-changed:
		case <-time.After(time.Duration(min(20*(attempt+1), 200)) * time.Millisecond):
		case <-ctx.Done():
			return nil, unavailable(ctx.Err())
		}
	}
}

func unavailable(err error) error {
	var me *model.Error
	if errors.As(err, &me) {
		return me
	}
	return &model.Error{Code: model.CodeUnavailable, Message: err.Error()}
}

// applyLocal proposes c through the group commit, which stamps the
// leader's time into it. A command whose type a member does not know yet
// is refused (checkProto); a command that the state machine would refuse
// (invalid, or rejected by the current state, and not a retry of an
// earlier request) is answered without a log entry.
func (a *Agent) applyLocal(ctx context.Context, c *fsm.Command) (*fsm.Result, error) {
	if err := a.checkProto(ctx, c.Type); err != nil {
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

// forward sends c to the leader's internal apply endpoint.
func (a *Agent) forward(ctx context.Context, leader string, c *fsm.Command) (*fsm.Result, error) {
	var raw []byte
	err := a.clientFor(leader).Do(ctx, client.Request{
		Method: http.MethodPost, Path: "/v1/internal/apply", Body: c.Encode(), NoRetry: true,
		Header: http.Header{api.HeaderForwarded: {"1"}, client.HeaderIdempotencyKey: {c.ReqID}},
	}, &raw)
	if err != nil {
		return nil, err
	}
	var r fsm.Result
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, fmt.Errorf("agent: decode forwarded result: %w", err)
	}
	return &r, nil
}

// ApplyForwarded implements api.Backend.
func (a *Agent) ApplyForwarded(ctx context.Context, data []byte) ([]byte, error) {
	c, err := fsm.DecodeCommand(data)
	if err != nil {
		return nil, model.Errorf(model.CodeInvalid, "bad forwarded command: %v", err)
	}
	if c.Type == fsm.CmdBatch {
		return nil, model.Errorf(model.CodeInvalid, "batches cannot be forwarded")
	}
	if !a.node.IsLeader() {
		return nil, &model.Error{Code: model.CodeUnavailable, Message: "not the leader"}
	}
	res, err := a.applyLocal(ctx, c)
	if err != nil {
		return nil, unavailable(err)
	}
	return json.Marshal(res)
}

// ReadIndex implements api.Backend.
func (a *Agent) ReadIndex(ctx context.Context) (uint64, error) {
	if !a.node.IsLeader() {
		return 0, &model.Error{Code: model.CodeUnavailable, Message: "not the leader"}
	}
	idx, err := a.readIndex(ctx)
	if err != nil {
		return 0, unavailable(err)
	}
	return idx, nil
}

// readIndex confirms that this node leads and returns the commit index
// as of the confirmation; errors are raftnode's.
func (a *Agent) readIndex(ctx context.Context) (uint64, error) {
	if err := a.ensureLeaderBarrier(ctx); err != nil {
		return 0, err
	}
	idx := a.node.CommitIndex()
	if err := a.node.VerifyLeader(ctx); err != nil {
		return 0, err
	}
	return idx, nil
}

// ReadBarrier implements api.Backend: once it returns, local reads reflect
// every write acknowledged before it was called.
func (a *Agent) ReadBarrier(ctx context.Context) error {
	deadline := time.Now().Add(a.cfg.LeaderWait)
	for {
		var idx uint64
		var err error
		if a.node.IsLeader() {
			idx, err = a.ReadIndex(ctx)
		} else {
			var leader string
			if leader, err = a.leaderHTTP(ctx, deadline); err != nil {
				return err
			}
			var out struct {
				Index uint64 `json:"index"`
			}
			err = a.clientFor(leader).Do(ctx, client.Request{Method: http.MethodGet, Path: "/v1/internal/readindex", NoRetry: true,
				Header: http.Header{api.HeaderForwarded: {"1"}}}, &out)
			idx = out.Index
		}
		if err == nil {
			return a.waitApplied(ctx, idx)
		}
		if !errors.Is(err, model.ErrUnavailable) || time.Now().After(deadline) {
			return err
		}
		select {
		case <-a.node.LeaderChanged():
		case <-time.After(50 * time.Millisecond):
		case <-ctx.Done():
			return unavailable(ctx.Err())
		}
	}
}

func (a *Agent) waitApplied(ctx context.Context, idx uint64) error {
	for {
		ch := a.fsm.Changed()
		if a.fsm.AppliedIndex() >= idx {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return unavailable(fmt.Errorf("waiting for index %d to apply: %w", idx, ctx.Err()))
		}
	}
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
func (a *Agent) proposeAsync(c *fsm.Command) sched.Future {
	c.Now, c.Node = a.stamper.stamp(), a.cfg.NodeID
	return schedFuture{a.node.ApplyAsync(c.Encode())}
}
