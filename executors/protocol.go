package executors

import (
	"context"
	"strconv"
	"time"

	"github.com/ax-scheduler/ax/api"
	"github.com/ax-scheduler/ax/client"
	"github.com/ax-scheduler/ax/dispatch"
	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/replica"
	"github.com/ax-scheduler/ax/worker"
)

// Poll implements api.ExecutorBackend: the leader's dispatcher answers; another
// node forwards the poll to the leader. Within the poll's wait it follows
// leadership: a poll released by a term that ended, or parked on a leader
// that is gone, is asked again of whichever node leads now (this one
// included).
func (e *Executors) Poll(ctx context.Context, req model.PollRequest) (*model.PollResponse, error) {
	wait := time.Duration(req.WaitMs) * time.Millisecond
	if wait <= 0 || wait > 30*time.Second {
		wait = 20 * time.Second
	}
	end := time.Now().Add(wait)
	for {
		try := req
		try.WaitMs = max(time.Until(end).Milliseconds(), 1)
		// A forwarded long poll may wait its whole wait at the leader.
		out, err := replica.Ask[*model.PollResponse](ctx, e.rep, replica.Call{Deadline: end.Add(pollSlack), FindWithin: e.execFindWithin()},
			func(ctx context.Context, t *replica.Term) (*model.PollResponse, error) {
				out, err := dispatcherOf(t).Poll(ctx, try)
				if err == nil && out.Released {
					// The term is ending: wait for it before asking again.
					left := time.NewTimer(time.Until(end))
					defer left.Stop()
					select {
					case <-t.Context().Done():
					case <-ctx.Done():
					case <-left.C:
					}
				}
				return out, err
			},
			func(ctx context.Context, c *client.Client) (*model.PollResponse, error) {
				return worker.NewProtocol(c).Poll(ctx, try)
			})
		// A forwarded poll goes back released: the node that forwarded it
		// finds the new leader.
		if err != nil || !out.Released || api.IsForwarded(ctx) || time.Until(end) < pollSlack/10 || ctx.Err() != nil {
			return out, err
		}
	}
}

// pollSlack is how much longer than its wait a forwarded poll may take.
const pollSlack = 2 * time.Second

// Heartbeat implements api.ExecutorBackend.
func (e *Executors) Heartbeat(ctx context.Context, req model.HeartbeatRequest) (*model.HeartbeatResponse, error) {
	return replica.Ask[*model.HeartbeatResponse](ctx, e.rep, replica.Call{FindWithin: e.execFindWithin()},
		func(ctx context.Context, t *replica.Term) (*model.HeartbeatResponse, error) {
			return dispatcherOf(t).Heartbeat(ctx, req)
		},
		func(ctx context.Context, c *client.Client) (*model.HeartbeatResponse, error) {
			return worker.NewProtocol(c).Heartbeat(ctx, req)
		})
}

// Complete implements api.ExecutorBackend.
func (e *Executors) Complete(ctx context.Context, c api.Caller, executionID string, req model.CompleteRequest) (string, error) {
	return replica.Ask[string](ctx, e.rep, replica.Call{FindWithin: e.execFindWithin(), ReqID: c.RequestID},
		func(ctx context.Context, t *replica.Term) (string, error) {
			id, _, err := dispatch.ParseExecutionID(executionID)
			if err != nil {
				return "", err
			}
			if err := e.acc.OwnAttempt(ctx, "executionId", id); err != nil {
				return "", err
			}
			return dispatcherOf(t).Complete(ctx, c.RequestID, executionID, req)
		},
		func(ctx context.Context, cl *client.Client) (string, error) {
			return worker.NewProtocol(cl).Complete(ctx, executionID, req)
		})
}

// CompleteBatch implements api.ExecutorBackend.
func (e *Executors) CompleteBatch(ctx context.Context, c api.Caller, items []model.CompleteItem) ([]model.CompleteOutcome, error) {
	return replica.Ask[[]model.CompleteOutcome](ctx, e.rep, replica.Call{FindWithin: e.execFindWithin(), ReqID: c.RequestID},
		func(ctx context.Context, t *replica.Term) ([]model.CompleteOutcome, error) {
			for i, it := range items {
				if id, _, err := dispatch.ParseExecutionID(it.ExecutionID); err == nil {
					if err := e.acc.OwnAttempt(ctx, "["+strconv.Itoa(i)+"].executionId", id); err != nil {
						return nil, err
					}
				}
			}
			return dispatcherOf(t).CompleteBatch(ctx, c.RequestID, items)
		},
		func(ctx context.Context, cl *client.Client) ([]model.CompleteOutcome, error) {
			return worker.NewProtocol(cl).CompleteBatch(ctx, items)
		})
}

// execFindWithin is how long an executor-protocol call waits to learn a
// leader: a lease/8 (the leader wait if shorter). An executor lists
// several servers and would rather try another at once than wait on a
// node that knows no leader (one cut off from the others).
func (e *Executors) execFindWithin() time.Duration {
	lease := e.cfg.Lease
	if lease <= 0 {
		lease = 10 * time.Second
	}
	return min(lease/8, e.cfg.LeaderWait)
}

// Executors implements api.ExecutorBackend: the leader's dispatcher knows them; a
// follower asks the leader.
func (e *Executors) Executors(ctx context.Context) (*model.ExecutorList, error) {
	return replica.Ask[*model.ExecutorList](ctx, e.rep, replica.Call{FindWithin: replica.ReadLeaderWait, NoLeader: e.rep.NoLeaderRead("it cannot list the executors: only the leader hears from them")},
		func(ctx context.Context, t *replica.Term) (*model.ExecutorList, error) {
			return &model.ExecutorList{Executors: dispatcherOf(t).Executors()}, nil
		},
		func(ctx context.Context, c *client.Client) (*model.ExecutorList, error) { return c.Executors(ctx) })
}
