package tasks

import (
	"context"
	"time"

	"github.com/ax-scheduler/ax/fsm/command"
)

// pruneBatch is how many instances one prune command (one Raft entry)
// deletes: each replica spends a few microseconds per instance applying
// it, so a batch holds the apply goroutine for a few milliseconds.
const pruneBatch = 2000

// runRetention deletes finished instances past their retention
// (policy.retention, else the agent's -retention) or beyond their task's
// history limits (policy.keepSuccessful, keepFailed) for one leadership
// term: every -retention-interval (0: every minute) it deletes everything
// due. With -retention 0 it still runs, for the tasks that set either.
func (ts *Tasks) runRetention(ctx context.Context) {
	every := ts.cfg.RetentionInterval
	if every <= 0 {
		every = time.Minute
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		ts.pruneDue(ctx)
	}
}

// pruneDue deletes the instances due for deletion in batches of
// pruneBatch, one Raft entry each, until none is left. The state
// machine's finished index makes each look-up cost what it returns, so a
// backlog (of finished or of unfinished instances) only takes more
// batches.
func (ts *Tasks) pruneDue(ctx context.Context) {
	start, total, batches := time.Now(), 0, 0
	defer func() {
		if total > 0 {
			ts.log.Info("pruned instances past retention", "count", total, "batches", batches,
				"took", time.Since(start).Round(time.Millisecond))
		}
	}()
	for ctx.Err() == nil {
		ids, err := ts.state.Expired(ts.cfg.Clock.Now(), ts.cfg.Retention, pruneBatch)
		if err != nil {
			ts.log.Error("finding instances past retention failed", "error", err)
			return
		}
		if len(ids) == 0 {
			return
		}
		cmd, err := command.New(command.TypePrune, "", "retention", command.Prune{IDs: ids})
		if err != nil {
			ts.log.Error("encoding a prune failed", "error", err)
			return
		}
		res, err := ts.rep.Propose(ctx, cmd)
		if err != nil {
			if ctx.Err() == nil {
				ts.log.Warn("pruning instances failed; retrying next round", "error", err)
			}
			return
		}
		var out struct {
			Pruned int `json:"pruned"`
		}
		if err := res.Decode(&out); err != nil {
			ts.log.Warn("pruning instances refused", "error", err)
			return
		}
		total += out.Pruned
		batches++
		if out.Pruned == 0 {
			// Nothing the state machine would delete (it changed since the
			// look-up): stop rather than propose the same ids again.
			return
		}
	}
}
