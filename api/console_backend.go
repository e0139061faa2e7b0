package api

import (
	"context"

	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/model/live"
)

// ConsoleBackend answers the console's aggregate reads. Each works on any
// node from its own state (the overview also asks the cluster and the
// leader's executor list, and reports their failures in its answer).
type ConsoleBackend interface {
	// Overview answers GET /v1/overview.
	Overview(ctx context.Context) (*live.Overview, error)
	// TaskSummaries lists tasks as ListTasks does, each with its next
	// fire time and its runs newest instances that fired.
	TaskSummaries(ctx context.Context, f model.TaskFilter, runs int) (*live.TaskSummaryList, error)
	// TaskCalendar counts a task's instances by state per scheduled date
	// (in the task's timezone) over the last days days.
	TaskCalendar(ctx context.Context, name string, days int) (*live.TaskCalendar, error)
	// TaskFires returns the task's next n fire times from now, or
	// after the cursor's fire time when it is set.
	TaskFires(ctx context.Context, name string, n int, from live.FireCursor) (*live.TaskFires, error)
	// TaskGraph links the task to the tasks it runs after and before, up
	// to depth links away each way.
	TaskGraph(ctx context.Context, name string, depth int) (*live.TaskGraph, error)
	// TaskCounts counts a task's instances by state, selected by f.
	TaskCounts(ctx context.Context, name string, f live.CountFilter) (*live.InstanceCounts, error)
}
