package api

import (
	"context"

	"github.com/ax-scheduler/ax/model/channel"
)

// ChannelBackend stores notification channels. Their write-only values
// (a webhook's secret, an SMTP password) go in and never come out: reads
// say only whether one is set.
type ChannelBackend interface {
	// PutChannel creates or replaces the channel name; an empty secret
	// or password keeps the stored one.
	PutChannel(ctx context.Context, c Caller, name string, ch *channel.Channel) (*channel.Channel, error)
	ListChannels(ctx context.Context) (*channel.List, error)
	GetChannel(ctx context.Context, name string) (*channel.Channel, error)
	DeleteChannel(ctx context.Context, c Caller, name string) (*channel.Channel, error)
}
