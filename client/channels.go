package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/ax-scheduler/ax/model/channel"
)

// PutChannel creates or replaces a notification channel; an empty
// secret or password keeps the stored one.
func (c *alertCalls) PutChannel(ctx context.Context, ch *channel.Channel) (*channel.Channel, error) {
	var out channel.Channel
	return &out, c.Do(ctx, Request{Method: http.MethodPut, Path: "/v1/channels/" + url.PathEscape(ch.Name), Body: ch}, &out)
}

// ListChannels lists the channels (write-only values shown as set or not).
func (c *alertCalls) ListChannels(ctx context.Context) (*channel.List, error) {
	var l channel.List
	return &l, c.Do(ctx, Request{Method: http.MethodGet, Path: "/v1/channels"}, &l)
}

// GetChannel returns one channel.
func (c *alertCalls) GetChannel(ctx context.Context, name string) (*channel.Channel, error) {
	var out channel.Channel
	return &out, c.Do(ctx, Request{Method: http.MethodGet, Path: "/v1/channels/" + url.PathEscape(name)}, &out)
}

// DeleteChannel deletes a channel.
func (c *alertCalls) DeleteChannel(ctx context.Context, name string) (*channel.Channel, error) {
	var out channel.Channel
	return &out, c.Do(ctx, Request{Method: http.MethodDelete, Path: "/v1/channels/" + url.PathEscape(name)}, &out)
}
