package agent

import (
	"context"
	"time"

	"ax/fsm"
)

// runRetention deletes finished instances past their retention
// (policy.retention, else the agent's -retention) for one leadership term,
// in batches, oldest first.
func (a *Agent) runRetention(ctx context.Context) {
	if a.cfg.Retention <= 0 && a.cfg.RetentionInterval <= 0 {
		return
	}
	every := a.cfg.RetentionInterval
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
		for ctx.Err() == nil {
			ids, err := a.fsm.Expired(a.now(), a.cfg.Retention, 5000)
			if err != nil || len(ids) == 0 {
				break
			}
			cmd, err := fsm.NewCommand(fsm.CmdPrune, "", "retention", fsm.Prune{IDs: ids})
			if err != nil {
				break
			}
			if _, err := a.propose(ctx, cmd); err != nil {
				a.log.Warn("pruning instances failed", "error", err)
				break
			}
			a.log.Info("pruned instances past retention", "count", len(ids))
			if len(ids) < 5000 {
				break
			}
		}
	}
}
