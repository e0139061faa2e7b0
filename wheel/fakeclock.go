package wheel

import (
	"context"
	"slices"
	"sync"
	"time"
)

// FakeClock is a Clock for tests: its time only moves when Advance or Set
// is called, which fires the timers that come due, in deadline order. Tests
// can wait until the code under test has armed a timer (BlockUntil,
// WaitDeadlines) instead of sleeping. It is safe for concurrent use.
type FakeClock struct {
	mu      sync.Mutex
	now     time.Time
	timers  []*fakeTimer  // active timers
	changed chan struct{} // closed and replaced whenever timers changes
}

var _ DeadlineClock = (*FakeClock)(nil)

// NewFakeClock returns a FakeClock reading t0.
func NewFakeClock(t0 time.Time) *FakeClock {
	return &FakeClock{now: t0, changed: make(chan struct{})}
}

// Now returns the fake time.
func (c *FakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// NewTimer returns a Timer that fires once the fake time reaches Now()+d;
// immediately if d <= 0.
func (c *FakeClock) NewTimer(d time.Duration) Timer {
	t := &fakeTimer{c: c, ch: make(chan time.Time, 1)}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.arm(t, d)
	return t
}

// NewTimerAt returns a Timer that fires once the fake time reaches t;
// immediately if it already has.
func (c *FakeClock) NewTimerAt(t time.Time) Timer {
	tm := &fakeTimer{c: c, ch: make(chan time.Time, 1)}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.armAt(tm, t)
	return tm
}

// Advance moves the fake time forward by d and fires the timers due by then.
func (c *FakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.setLocked(c.now.Add(d))
}

// Set moves the fake time to t and fires the timers due by then. Moving it
// backwards is allowed (to test clock steps) and fires nothing.
func (c *FakeClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.setLocked(t)
}

// Deadlines returns the deadlines of the active timers, earliest first.
func (c *FakeClock) Deadlines() []time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.deadlinesLocked()
}

// WaitDeadlines blocks until ok returns true for the active timers'
// deadlines (earliest first), or ctx is done, and returns ctx's error then.
func (c *FakeClock) WaitDeadlines(ctx context.Context, ok func(deadlines []time.Time) bool) error {
	for {
		c.mu.Lock()
		d, ch := c.deadlinesLocked(), c.changed
		c.mu.Unlock()
		if ok(d) {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// BlockUntil blocks until at least n timers are active, or ctx is done.
func (c *FakeClock) BlockUntil(ctx context.Context, n int) error {
	return c.WaitDeadlines(ctx, func(d []time.Time) bool { return len(d) >= n })
}

func (c *FakeClock) deadlinesLocked() []time.Time {
	d := make([]time.Time, len(c.timers))
	for i, t := range c.timers {
		d[i] = t.deadline
	}
	slices.SortFunc(d, func(a, b time.Time) int { return a.Compare(b) })
	return d
}

func (c *FakeClock) setLocked(now time.Time) {
	c.now = now
	var due []*fakeTimer
	kept := c.timers[:0]
	for _, t := range c.timers {
		if t.deadline.After(now) {
			kept = append(kept, t)
		} else {
			due = append(due, t)
		}
	}
	clear(c.timers[len(kept):])
	c.timers = kept
	slices.SortStableFunc(due, func(a, b *fakeTimer) int { return a.deadline.Compare(b.deadline) })
	for _, t := range due {
		t.active = false
		select {
		case t.ch <- now:
		default:
		}
	}
	if len(due) > 0 {
		c.notifyLocked()
	}
}

// arm (re)starts t for d from now; the caller holds c.mu.
func (c *FakeClock) arm(t *fakeTimer, d time.Duration) {
	c.armAt(t, c.now.Add(d))
}

// armAt (re)starts t for the instant deadline; the caller holds c.mu.
func (c *FakeClock) armAt(t *fakeTimer, deadline time.Time) {
	t.deadline = deadline
	if !deadline.After(c.now) {
		t.active = false
		select {
		case t.ch <- c.now:
		default:
		}
		c.notifyLocked()
		return
	}
	t.active = true
	c.timers = append(c.timers, t)
	c.notifyLocked()
}

// disarm stops t and drains its channel; the caller holds c.mu.
func (c *FakeClock) disarm(t *fakeTimer) bool {
	was := t.active
	if was {
		t.active = false
		i := slices.Index(c.timers, t)
		c.timers = slices.Delete(c.timers, i, i+1)
		c.notifyLocked()
	}
	select {
	case <-t.ch:
	default:
	}
	return was
}

func (c *FakeClock) notifyLocked() {
	close(c.changed)
	c.changed = make(chan struct{})
}

type fakeTimer struct {
	c        *FakeClock
	ch       chan time.Time
	deadline time.Time // guarded by c.mu
	active   bool      // guarded by c.mu
}

func (t *fakeTimer) C() <-chan time.Time { return t.ch }

func (t *fakeTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	return t.c.disarm(t)
}

func (t *fakeTimer) Reset(d time.Duration) bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	was := t.c.disarm(t)
	t.c.arm(t, d)
	return was
}
