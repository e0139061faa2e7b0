package client

import (
	"context"
	"net/http"
	"time"

	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/model/live"
)

// TaskCounts counts a task's instances by state (those of f.Source
// scheduled in [f.From, f.To], each optional) and says how many of its
// concurrency slots are busy (GET /v1/tasks/{name}/counts).
func (c *Client) TaskCounts(ctx context.Context, task string, f live.CountFilter, opts ...ReadOption) (*live.InstanceCounts, error) {
	q := query(opts)
	if f.Source != "" {
		q.Set("source", f.Source)
	}
	for k, t := range map[string]model.Time{"from": f.From, "to": f.To} {
		if !t.IsZero() {
			q.Set(k, t.UTC().Format(time.RFC3339Nano))
		}
	}
	var out live.InstanceCounts
	return &out, c.Do(ctx, Request{Method: http.MethodGet, Path: taskPath(task, "/counts"), Query: q}, &out)
}
