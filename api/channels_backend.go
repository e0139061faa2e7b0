package api

import (
	"context"

	"github.com/ax-scheduler/ax/model"
)

// ChannelBackend stores notification channels. Their write-only values
// (a webhook's secret, an SMTP password) go in and never come out: reads
// say only whether one is set.
type ChannelBackend interface {
	// PutChannel creates or replaces the channel name; an empty secret
	// or password keeps the stored one.
	PutChannel(ctx context.Context, c Caller, name string, ch *model.Channel) (*model.Channel, error)
	ListChannels(ctx context.Context) (*model.ChannelList, error)
	GetChannel(ctx context.Context, name string) (*model.Channel, error)
	DeleteChannel(ctx context.Context, c Caller, name string) (*model.Channel, error)
}
