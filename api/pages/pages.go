// Package pages holds the wire types of API answers made for the
// console's pages that have no model type of their own: the audit of
// definition changes (GET /v1/audit) and a channel's test send (POST
// /v1/channels/{name}/test).
package pages

import (
	"context"

	"github.com/ax-scheduler/ax/model"
)

// Backend answers the reads made for the console's pages that no role's
// backend has (api.Config.Pages): the audit of definition changes, and
// one attempt's output.
type Backend interface {
	// Audit answers GET /v1/audit from the task history the state
	// machine keeps.
	Audit(ctx context.Context, f AuditFilter) (*AuditPage, error)
	// AttemptLog answers GET /v1/instances/{id}/log?attempt=N (without
	// follow): attempt N's kept output, or the latest's as the log is
	// answered without attempt.
	AttemptLog(ctx context.Context, id string, attempt int, offset int64) (*model.InstanceLog, error)
}

// ChannelTest answers POST /v1/channels/{name}/test: whether the test
// notification reached the channel and, when not, why.
type ChannelTest struct {
	Channel   string `json:"channel"`
	Type      string `json:"type"`
	Delivered bool   `json:"delivered"`
	// Error says why it was not delivered (the receiver's answer, an
	// unreachable address, a value this node cannot open); Permanent
	// when trying again would not help (a 4xx answer, a bad address).
	Error     string `json:"error,omitempty"`
	Permanent bool   `json:"permanent,omitempty"`
	TookMs    int64  `json:"tookMs"`
	Node      string `json:"node"` // the node that sent it
}

// AuditFilter selects the definition changes GET /v1/audit answers.
type AuditFilter struct {
	Task   string // one task's changes ("" every task's)
	Actor  string // one actor's changes ("" everyone's)
	Limit  int
	Cursor string // where the previous page ended
}

// AuditEntry is one change of a task's definition: the version it made,
// the operation (create, update, pause, resume, delete), who and when,
// the definition it left and the one before it (absent for a create).
type AuditEntry struct {
	Task       string      `json:"task"`
	Version    uint64      `json:"version"`
	Op         string      `json:"op"`
	Actor      string      `json:"actor,omitempty"`
	Time       model.Time  `json:"time"`
	Definition *model.Task `json:"definition,omitempty"`
	Previous   *model.Task `json:"previous,omitempty"`
}

// AuditPage answers GET /v1/audit: changes newest first; NextCursor, when
// set, asks for the next page.
type AuditPage struct {
	Entries    []AuditEntry `json:"entries"`
	NextCursor string       `json:"nextCursor,omitempty"`
}
