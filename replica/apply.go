package replica

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
)

// Errors are translated here, once: what the replica answers is a
// *model.Error (unavailable, with what to do) or the state machine's
// result; raftnode's errors stay inside, except raftnode.ErrNotLeader
// from a Term's Propose, which says that nothing was proposed.

// errNoLeader is answered 503 with Retry-After.
func errNoLeader(wait time.Duration) error {
	return &model.Error{Code: model.CodeUnavailable, Message: fmt.Sprintf("no leader elected within %s; retry shortly", wait)}
}

// Unavailable is err as a 503: a *model.Error keeps its code and
// message, anything else becomes unavailable.
func Unavailable(err error) error {
	var me *model.Error
	if errors.As(err, &me) {
		return me
	}
	return &model.Error{Code: model.CodeUnavailable, Message: err.Error()}
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

// Propose commits c through Raft and returns its result: on the leader
// once its term's barrier is done, else forwarded to the leader's
// internal apply endpoint (see OnLeader). It retries across leader
// changes with the same request id, which the state machine
// deduplicates, so an unknown outcome (leadership lost mid-commit) never
// turns into a double write; once the leader wait has passed it answers
// unavailable, naming the request id and whether the outcome is unknown.
func (r *Replica) Propose(ctx context.Context, c *command.Command) (*fsm.Result, error) {
	if c.ReqID == "" {
		c.ReqID = client.NewRequestID()
	}
	return Ask(ctx, r, Call{ReqID: c.ReqID},
		func(ctx context.Context, t *Term) (*fsm.Result, error) { return r.applyLocal(ctx, t, c) },
		func(ctx context.Context, cl *client.Client) (*fsm.Result, error) { return r.forward(ctx, cl, c) })
}

// ProposeOwn proposes a command of this node's own (not a client's: its
// actor is "node:<id>") and returns its result's error.
func (r *Replica) ProposeOwn(ctx context.Context, t command.Type, body any) error {
	c, err := command.New(t, "", r.actor(), body)
	if err != nil {
		return err
	}
	res, err := r.Propose(ctx, c)
	if err != nil {
		return err
	}
	return res.Decode(nil)
}

// actor names this node as the actor of its own commands.
func (r *Replica) actor() string { return "node:" + r.cfg.NodeID }

// applyLocal proposes c through t's group commit, which stamps the
// leader's time into it; the caller has waited for t's barrier
// (terms.ready). A command whose type a member does not know yet is refused
// (checkProto); a command that the state machine would refuse (invalid,
// or rejected by the current state, and not a retry of an earlier
// request) is answered without a log entry.
func (r *Replica) applyLocal(ctx context.Context, t *Term, c *command.Command) (*fsm.Result, error) {
	r.stamp(c)
	if err := checkProto(ctx, r.node, r.fsm, r.cfg.NodeID, c); err != nil {
		var me *model.Error
		if errors.As(err, &me) {
			return &fsm.Result{Err: me}, nil
		}
		return nil, err
	}
	if res := r.fsm.Precheck(c); res != nil {
		// Answered from this node's state: only once it is confirmed as
		// the leader, so that a deposed leader's stale state never
		// refuses a write (nor tells an executor to stop a running
		// attempt). A confirmed leader's state holds every acknowledged
		// write: those of earlier terms (its barrier) and its own (acked
		// once applied here).
		if _, err := r.reads.readIndex(ctx); err != nil {
			return nil, err
		}
		if res = r.fsm.Precheck(c); res != nil {
			return res, nil
		}
	}
	return t.batch.submit(ctx, c)
}

// stamp completes c with what only the leader decides, from its own state
// and clock, just before it is proposed: a manual trigger's business date
// (today in the task's timezone, by the leader's clock; it lets a manual
// run of an upstream task satisfy the dependsOn of that day's downstream
// fires). Triggers of other sources keep what their proposer set.
func (r *Replica) stamp(c *command.Command) {
	if c.Type != command.TypeTrigger {
		return
	}
	var tr command.Trigger
	if json.Unmarshal(c.Body, &tr) != nil || (tr.Source != "" && tr.Source != model.SourceAPI) {
		return // the state machine refuses a bad body
	}
	t, err := r.fsm.GetTask(tr.Task)
	if err != nil {
		return // Precheck answers a missing task
	}
	tr.Date = t.FireKeys().Date(r.cfg.Now())
	if b, err := json.Marshal(tr); err == nil {
		c.Body = b
	}
}

// forward sends c to the leader's internal apply endpoint.
func (r *Replica) forward(ctx context.Context, cl *client.Client, c *command.Command) (*fsm.Result, error) {
	var raw []byte
	err := cl.Do(ctx, client.Request{Method: http.MethodPost, Path: api.InternalPrefix + "apply", Body: c.Encode(), NoRetry: true}, &raw)
	if err != nil {
		return nil, err
	}
	var res fsm.Result
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, outcomeUnknown(c.ReqID, fmt.Errorf("undecodable answer: %w", err))
	}
	return &res, nil
}

// ApplyForwarded implements api.InternalBackend: the leader applies a
// command a follower forwarded, once its term's barrier is done (waiting
// for it within the leader wait).
func (r *Replica) ApplyForwarded(ctx context.Context, data []byte) ([]byte, error) {
	c, err := command.Decode(data)
	if err != nil {
		return nil, model.Errorf(model.CodeInvalid, "bad forwarded command: %v", err)
	}
	if c.Type == command.TypeBatch {
		return nil, model.Errorf(model.CodeInvalid, "batches cannot be forwarded")
	}
	if !r.node.IsLeader() {
		return nil, errNotLeader()
	}
	// Local only: a forwarded command is never forwarded again.
	res, err := Ask[*fsm.Result](ctx, r, Call{ReqID: c.ReqID},
		func(ctx context.Context, t *Term) (*fsm.Result, error) { return r.applyLocal(ctx, t, c) }, nil)
	if err != nil {
		return nil, Unavailable(err)
	}
	return json.Marshal(res)
}

// Future is a proposal in flight (ProposeAsync).
type Future struct{ f *raftnode.ApplyFuture }

// Wait returns the proposal's result once it is applied.
func (s Future) Wait() (*fsm.Result, error) {
	resp, err := s.f.Wait()
	if err != nil {
		return nil, err
	}
	res, ok := resp.(*fsm.Result)
	if !ok {
		return nil, fmt.Errorf("replica: unexpected apply response %T", resp)
	}
	return res, nil
}

// ProposeAsync stamps the leader's time into c and proposes it without
// waiting, past the group commit; the scheduler uses it to keep fires in
// log order while several are in flight. On a node that does not lead,
// the future fails with raftnode.ErrNotLeader.
func (r *Replica) ProposeAsync(c *command.Command) Future {
	c.Now, c.Node = r.stamper.stamp(), r.cfg.NodeID
	return Future{r.node.ApplyAsync(c.Encode())}
}

// Proposer commits commands (*Replica).
type Proposer interface {
	Propose(ctx context.Context, c *command.Command) (*fsm.Result, error)
}

// Write proposes a command of type t with body on behalf of the caller c
// (its actor and request id) and decodes the result into out (nil: only
// its error).
func Write(ctx context.Context, p Proposer, c api.Caller, t command.Type, body, out any) error {
	cmd, err := command.New(t, c.RequestID, c.Actor, body)
	if err != nil {
		return err
	}
	res, err := p.Propose(ctx, cmd)
	if err != nil {
		return err
	}
	return res.Decode(out)
}

// Barrier appends a Raft barrier on the leader: the followers learn the
// commit index with it at once, rather than at Raft's next idle round.
func (r *Replica) Barrier(ctx context.Context) error {
	if err := r.node.Barrier(ctx); err != nil {
		return Unavailable(err)
	}
	return nil
}
