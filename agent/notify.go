package agent

import (
	"context"

	"github.com/ax-scheduler/ax/model"
)

// notifier delivers alert notifications: the channels a notification
// routes to and the task's policy.notify URLs (channelNotifier,
// channels.go); tests put a recording one in its place.
type notifier interface {
	Notify(ctx context.Context, n model.AlertNotification) error
}
