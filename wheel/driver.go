package wheel

import (
	"context"
	"errors"
	"sync"
	"time"
)

// maxSleep bounds one sleep of the Driver even when the next timer is
// further away, so that a step of the wall clock (which the wheel's
// deadlines follow, unlike the monotonic timers) delays firing by at most
// this much.
const maxSleep = time.Minute

// ErrRunning is returned by Driver.Run if the Driver is already running.
var ErrRunning = errors.New("wheel: driver already running")

// Expired is a timer delivered by a Driver.
type Expired struct {
	ID  uint64
	Due time.Time // the deadline given to Add (saturated to years 1678-2262)
}

// Driver runs a Wheel against a Clock in one goroutine (Run) and makes it
// safe for concurrent use. It sleeps until the wheel's next non-empty slot
// (an idle wheel arms no timer at all), is woken early when Add brings an
// earlier deadline, and delivers the timers that expire on each wake-up as
// one batch, so the caller can, for example, put them in one Raft entry.
// It sleeps at most a minute at a time, so that a step of the wall clock
// delays timers by at most that much.
type Driver struct {
	clock Clock
	fire  func([]Expired)
	wake  chan struct{} // capacity 1: "the next deadline moved earlier"

	mu       sync.Mutex
	w        *Wheel
	running  bool
	asleep   bool      // Run has computed a deadline and may be sleeping
	deadline time.Time // when Run will wake, if asleep; zero = not until woken

	// sleepHook, if set (tests only), is called each time Run is about to
	// wait, with the deadline it waits for (zero for none).
	sleepHook func(deadline time.Time)
}

// NewDriver returns a Driver for w, which from then on must only be used
// through the Driver. fire is called from Run's goroutine, never
// concurrently, with each non-empty batch of expired timers in deadline
// order; it may keep the slice and may call Add and Remove. While fire runs,
// new expiries accumulate into the next batch.
func NewDriver(w *Wheel, clock Clock, fire func(batch []Expired)) *Driver {
	return &Driver{clock: clock, fire: fire, wake: make(chan struct{}, 1), w: w}
}

// Add schedules id at due (see Wheel.Add) and wakes Run if this is now the
// earliest deadline.
func (d *Driver) Add(id uint64, due time.Time) Handle {
	d.mu.Lock()
	defer d.mu.Unlock()
	h := d.w.Add(id, due)
	if next, ok := d.w.Next(); ok && d.asleep && (d.deadline.IsZero() || next.Before(d.deadline)) {
		d.deadline = next
		select {
		case d.wake <- struct{}{}:
		default:
		}
	}
	return h
}

// Wake has Run read the clock again at once, as if a timer had come due:
// the clock's time moved in a way its timers cannot follow (a step of
// the wall clock), and the timers due by it fire now rather than when
// the armed timer says.
func (d *Driver) Wake() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// Remove cancels a timer (see Wheel.Remove). It does not wake Run: a wake-up
// for a removed timer just finds nothing to fire.
func (d *Driver) Remove(h Handle) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.w.Remove(h)
}

// Len returns the number of pending timers.
func (d *Driver) Len() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.w.Len()
}

// Run fires timers until ctx is done, then returns ctx's error. Only one Run
// may be active at a time; it returns ErrRunning otherwise.
func (d *Driver) Run(ctx context.Context) error {
	d.mu.Lock()
	if d.running {
		d.mu.Unlock()
		return ErrRunning
	}
	d.running = true
	d.mu.Unlock()
	defer func() {
		d.mu.Lock()
		d.running, d.asleep = false, false
		d.mu.Unlock()
	}()

	var timer Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		batch, next, ok := d.advance()
		if len(batch) > 0 {
			d.fire(batch)
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		var timerC <-chan time.Time
		if ok {
			var due bool
			if timer, due = d.arm(timer, next); due {
				continue
			}
			timerC = timer.C()
		} else if timer != nil {
			timer.Stop() // idle: no timer armed at all
		}
		if d.sleepHook != nil {
			d.sleepHook(next)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-timerC:
		case <-d.wake:
		}
	}
}

// arm sets timer (or a new one, if it is nil) to fire when the clock
// reaches next, or in maxSleep if that is sooner, and returns it; or
// reports that next has already come. With a DeadlineClock the timer is
// armed for that instant, so that it fires then even if the clock moves
// between reading it here and arming the timer.
func (d *Driver) arm(timer Timer, next time.Time) (_ Timer, due bool) {
	now := d.clock.Now()
	if !next.After(now) {
		return timer, true
	}
	deadline := next
	if limit := now.Add(maxSleep); limit.Before(deadline) {
		deadline = limit
	}
	if dc, ok := d.clock.(DeadlineClock); ok {
		if timer != nil {
			timer.Stop()
		}
		return dc.NewTimerAt(deadline), false
	}
	if timer == nil {
		return d.clock.NewTimer(deadline.Sub(now)), false
	}
	timer.Reset(deadline.Sub(now))
	return timer, false
}

// advance runs the wheel up to the clock's time and records the deadline
// Run is going to sleep until.
func (d *Driver) advance() (batch []Expired, next time.Time, ok bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.w.Advance(d.clock.Now(), func(id uint64, due time.Time) {
		batch = append(batch, Expired{ID: id, Due: due})
	})
	next, ok = d.w.Next()
	d.asleep, d.deadline = true, next
	return batch, next, ok
}
