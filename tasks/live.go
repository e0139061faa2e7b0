package tasks

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/ax-scheduler/ax/api"
	"github.com/ax-scheduler/ax/fsm"
	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/model/live"
)

// Bounds of the event streams (GET /v1/events) a node serves.
const (
	// maxLiveSubs caps the subscribers per node; the next is answered 503.
	maxLiveSubs = 256
	// liveBuffer is each subscriber's buffer: a subscriber that falls
	// further behind loses events and is sent a resync.
	liveBuffer = 256
)

// liveHub fans the state machine's observer calls out to event-stream
// subscribers. publish runs on the apply goroutine and never blocks: each
// subscriber has a buffered channel, and when it is full the event is
// dropped and the subscriber's lost signal set.
type liveHub struct {
	n    atomic.Int32 // len(subs), read without the lock on the apply path
	mu   sync.Mutex
	subs map[*liveSub]struct{}
}

func newLiveHub() *liveHub { return &liveHub{subs: map[*liveSub]struct{}{}} }

// liveSub is one subscriber; it implements api.Subscription.
type liveSub struct {
	hub  *liveHub
	f    live.Filter
	ch   chan live.Event
	lost chan struct{}
	once sync.Once
}

var _ api.Subscription = (*liveSub)(nil)

func (s *liveSub) Events() <-chan live.Event { return s.ch }
func (s *liveSub) Lost() <-chan struct{}     { return s.lost }

// Close unregisters the subscriber (idempotent).
func (s *liveSub) Close() {
	s.once.Do(func() {
		h := s.hub
		h.mu.Lock()
		delete(h.subs, s)
		h.n.Store(int32(len(h.subs)))
		h.mu.Unlock()
	})
}

func (h *liveHub) subscribe(f live.Filter) (*liveSub, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.subs) >= maxLiveSubs {
		return nil, &model.Error{Code: model.CodeUnavailable, Message: fmt.Sprintf("this node serves at most %d event streams; try another node or later", maxLiveSubs)}
	}
	s := &liveSub{hub: h, f: f, ch: make(chan live.Event, liveBuffer), lost: make(chan struct{}, 1)}
	h.subs[s] = struct{}{}
	h.n.Store(int32(len(h.subs)))
	return s, nil
}

// active reports whether anyone listens (cheap, for the apply path).
func (h *liveHub) active() bool { return h.n.Load() > 0 }

// publish hands ev to every subscriber whose filter it passes, without
// blocking.
func (h *liveHub) publish(ev live.Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for s := range h.subs {
		if !s.f.Match(&ev) {
			continue
		}
		select {
		case s.ch <- ev:
		default:
			select {
			case s.lost <- struct{}{}:
			default: // already signalled
			}
		}
	}
}

// InstanceChanged publishes an observed instance change. The event's
// index is the state machine's applied index when the observer is
// called: the index of the last entry of the batch that made the change
// (observer calls run after the batch's index is published and before
// the next batch applies). A lease renewal is not an event.
func (c *Console) InstanceChanged(ic *fsm.InstanceChange) {
	if ic.Renewed || !c.live.active() {
		return
	}
	c.live.publish(live.Event{Type: live.TypeInstance, Instance: &live.Instance{
		ID: model.FormatID(ic.ID), Task: ic.Task, State: ic.State, Attempt: ic.Attempt, Executor: ic.Executor,
		Index: c.state.AppliedIndex()}})
}

// TaskChanged publishes an observed task change (see InstanceChanged).
func (c *Console) TaskChanged(name string) {
	if !c.live.active() {
		return
	}
	c.live.publish(live.Event{Type: live.TypeTask, Task: &live.Task{Name: name, Index: c.state.AppliedIndex()}})
}

// Subscribe implements api.LiveBackend.
func (c *Console) Subscribe(ctx context.Context, f live.Filter) (api.Subscription, error) {
	if c.stopping() {
		return nil, &model.Error{Code: model.CodeUnavailable, Message: "the node is shutting down"}
	}
	return c.live.subscribe(f)
}

// Upcoming implements api.LiveBackend from this node's state: the fire
// times are computed from the task definitions (trigger package), for
// display only; firing uses the leader's clock.
func (c *Console) Upcoming(ctx context.Context, q live.UpcomingQuery) (*live.Upcoming, error) {
	var tasks []*model.Task
	if q.Task != "" {
		t, err := c.state.GetTask(q.Task)
		if err != nil {
			return nil, err
		}
		tasks = append(tasks, t)
	} else {
		ts, err := c.state.TaskSchedules()
		if err != nil {
			return nil, err
		}
		tasks = make([]*model.Task, len(ts))
		for i := range ts {
			tasks[i] = &ts[i].Task
		}
	}
	return live.UpcomingFires(tasks, q), nil
}

func (c *Console) stopping() bool {
	select {
	case <-c.cfg.Stopping:
		return true
	default:
		return false
	}
}

// Subscribers is how many event streams this node serves.
func (c *Console) Subscribers() int { return int(c.live.n.Load()) }
