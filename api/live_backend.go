package api

import (
	"context"

	"github.com/ax-scheduler/ax/model/live"
)

// LiveBackend serves the console's live views: this node's applied
// changes as a stream, and the upcoming fire times.
type LiveBackend interface {
	// Subscribe registers a subscriber to the changes this node applies
	// that pass f. It never blocks the state machine: a subscriber that
	// falls behind loses events and is told so on Lost. At the cap of
	// subscribers it fails with an unavailable *model.Error. The caller
	// must Close the subscription.
	Subscribe(ctx context.Context, f live.Filter) (Subscription, error)
	// Upcoming lists the fire times of unpaused tasks in [q.From, q.To]
	// from this node's state.
	Upcoming(ctx context.Context, q live.UpcomingQuery) (*live.Upcoming, error)
}

// Subscription is one subscriber's feed of applied changes.
type Subscription interface {
	// Events delivers the changes in apply order.
	Events() <-chan live.Event
	// Lost is signalled (once per loss, coalesced) when events were
	// dropped because Events was full.
	Lost() <-chan struct{}
	// Close unregisters the subscriber.
	Close()
}
