package worker

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/ax-scheduler/ax/client"
	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/model/approval"
)

// Protocol is the executor protocol (DESIGN §7: poll, heartbeat,
// complete, and a running attempt's approval request) over a
// client.Client, which brings the addresses, failover, token, TLS and
// Idempotency-Keys. A Worker speaks it; use it directly only to drive the
// protocol yourself. Calls need a token with the executor role bound to
// the executor named in the request (or a management token).
type Protocol struct {
	c *client.Client
}

// NewProtocol returns the executor protocol over c.
func NewProtocol(c *client.Client) *Protocol { return &Protocol{c: c} }

// The protocol's endpoints.
const (
	pathPoll          = "/v1/executors/poll"
	pathHeartbeat     = "/v1/executors/heartbeat"
	pathCompleteBatch = "/v1/attempts/complete"
)

// Poll asks for up to req.Free jobs, waiting up to req.WaitMs for some
// (a long poll). The jobs are leased to req.Executor.
func (p *Protocol) Poll(ctx context.Context, req model.PollRequest) (*model.PollResponse, error) {
	return p.poll(ctx, req, 0, false)
}

// poll is Poll with the server watched every watch while the poll waits
// (client.Request.Watch; 0: not watched); failFast tries each server
// once (client.Request.FailFast), for a caller that retries itself.
func (p *Protocol) poll(ctx context.Context, req model.PollRequest, watch time.Duration, failFast bool) (*model.PollResponse, error) {
	var r model.PollResponse
	return &r, p.c.Do(ctx, client.Request{Method: http.MethodPost, Path: pathPoll, Body: req, Watch: watch, FailFast: failFast}, &r)
}

// Heartbeat renews the leases of an executor's running attempts and
// streams their new output; it answers the attempts to stop.
func (p *Protocol) Heartbeat(ctx context.Context, req model.HeartbeatRequest) (*model.HeartbeatResponse, error) {
	return p.heartbeat(ctx, req, 0)
}

// heartbeat is Heartbeat with each try bounded by try (0: unbounded).
func (p *Protocol) heartbeat(ctx context.Context, req model.HeartbeatRequest, try time.Duration) (*model.HeartbeatResponse, error) {
	var r model.HeartbeatResponse
	return &r, p.c.Do(ctx, client.Request{Method: http.MethodPost, Path: pathHeartbeat, Body: req, TryTimeout: try}, &r)
}

// Complete reports the end of an attempt; it answers the instance's new
// state. A fenced (stale) attempt gets model.ErrConflict.
func (p *Protocol) Complete(ctx context.Context, executionID string, req model.CompleteRequest) (string, error) {
	var r struct {
		State string `json:"state"`
	}
	err := p.c.Do(ctx, client.Request{Method: http.MethodPost, Path: "/v1/attempts/" + url.PathEscape(executionID) + "/complete", Body: req}, &r)
	return r.State, err
}

// CompleteBatch reports the ends of up to 1024 attempts of one executor
// in one request (one Raft entry); each has its own outcome.
func (p *Protocol) CompleteBatch(ctx context.Context, items []model.CompleteItem) ([]model.CompleteOutcome, error) {
	return p.completeBatch(ctx, items, "", 0)
}

// completeBatch is CompleteBatch with the Idempotency-Key key (a new one
// if empty) and each try bounded by try (0: unbounded).
func (p *Protocol) completeBatch(ctx context.Context, items []model.CompleteItem, key string, try time.Duration) ([]model.CompleteOutcome, error) {
	req := client.Request{Method: http.MethodPost, Path: pathCompleteBatch, Body: items, TryTimeout: try}
	if key != "" {
		req.Header = http.Header{client.HeaderIdempotencyKey: {key}}
	}
	var r []model.CompleteOutcome
	return r, p.c.Do(ctx, req, &r)
}

// RequestApproval puts running attempt number attempt of instance id in
// WAITING_APPROVAL with summary for the operator; it answers the
// instance's new state. The decision comes with ApprovalStatus.
func (p *Protocol) RequestApproval(ctx context.Context, id string, attempt int, summary string) (string, error) {
	var r struct {
		State string `json:"state"`
	}
	err := p.c.Do(ctx, client.Request{Method: http.MethodPost, Path: "/v1/instances/" + url.PathEscape(id) + "/approval",
		Body: model.ApprovalRequest{Attempt: attempt, Summary: summary}}, &r)
	return r.State, err
}

// ApprovalStatus answers where the approval request of attempt number
// attempt of instance id stands: pending, approved, rejected (or the
// instance canceled) or over (model.Approval*). An executor token reads
// it for the attempts leased to its executor only.
func (p *Protocol) ApprovalStatus(ctx context.Context, id string, attempt int) (*approval.Status, error) {
	var r approval.Status
	err := p.c.Do(ctx, client.Request{Method: http.MethodGet, Path: "/v1/instances/" + url.PathEscape(id) + "/approval",
		Query: url.Values{"attempt": {strconv.Itoa(attempt)}}}, &r)
	return &r, err
}
