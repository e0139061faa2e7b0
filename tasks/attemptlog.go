package tasks

import (
	"context"

	"github.com/ax-scheduler/ax/model"
)

// AttemptLog implements pages.Backend: an ended attempt's kept output
// (committed with its end); the latest attempt's as InstanceLog answers
// it (live while it runs).
func (p *Pages) AttemptLog(ctx context.Context, id string, attempt int, offset int64) (*model.InstanceLog, error) {
	ts := p.ts
	n, err := model.ParseID(id)
	if err != nil {
		return nil, err
	}
	l, err := ts.state.AttemptLog(n, attempt)
	if err == nil && l.Attempt == attempt {
		if latest, err := ts.state.Log(n); err == nil && latest.Attempt == attempt {
			return ts.InstanceLog(ctx, id, offset) // live while it runs
		}
	}
	if err == nil && offset > 0 && offset <= int64(len(l.Output)) {
		l.Output, l.Offset = l.Output[offset:], offset
	}
	return l, err
}
