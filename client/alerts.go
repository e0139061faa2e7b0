package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

	"github.com/ax-scheduler/ax/model"
)

// alertCalls are the Client's calls on alerts, silences and channels
// (embedded in Client: they are its methods).
type alertCalls struct {
	*transport
}

// ListAlerts lists alerts newest first (GET /v1/alerts).
func (c *alertCalls) ListAlerts(ctx context.Context, q model.AlertQuery) (*model.AlertList, error) {
	v := url.Values{}
	for k, s := range map[string]string{"state": q.State, "task": q.Task, "rule": q.Rule, "cursor": q.Cursor} {
		if s != "" {
			v.Set(k, s)
		}
	}
	if q.Limit > 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	var l model.AlertList
	return &l, c.Do(ctx, Request{Method: http.MethodGet, Path: "/v1/alerts", Query: v}, &l)
}

// PutSilence creates a silence.
func (c *alertCalls) PutSilence(ctx context.Context, req model.SilenceRequest) (*model.Silence, error) {
	var s model.Silence
	return &s, c.Do(ctx, Request{Method: http.MethodPost, Path: "/v1/silences", Body: req}, &s)
}

// ListSilences lists the silences in force.
func (c *alertCalls) ListSilences(ctx context.Context) (*model.SilenceList, error) {
	var l model.SilenceList
	return &l, c.Do(ctx, Request{Method: http.MethodGet, Path: "/v1/silences"}, &l)
}

// DeleteSilence removes a silence.
func (c *alertCalls) DeleteSilence(ctx context.Context, id string) error {
	return c.Do(ctx, Request{Method: http.MethodDelete, Path: "/v1/silences/" + url.PathEscape(id)}, nil)
}
