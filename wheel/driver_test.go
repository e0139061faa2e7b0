package wheel

import (
	"context"
	"errors"
	"math/rand"
	"slices"
	"sync"
	"testing"
	"time"
)

const waitTimeout = 5 * time.Second

// startDriver runs a Driver on a fake clock at t0 and returns it with the
// channel its batches arrive on. Run is stopped at the end of the test.
func startDriver(t *testing.T, hook func(time.Time)) (*Driver, *FakeClock, <-chan []Expired) {
	t.Helper()
	clk := NewFakeClock(t0)
	batches := make(chan []Expired, 100)
	d := NewDriver(New(Config{Start: t0}), clk, func(b []Expired) { batches <- b })
	d.sleepHook = hook
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("Run() = %v, want context.Canceled", err)
		}
	})
	return d, clk, batches
}

func recvBatch(t *testing.T, batches <-chan []Expired) []Expired {
	t.Helper()
	select {
	case b := <-batches:
		return b
	case <-time.After(waitTimeout):
		t.Fatal("no batch fired")
		return nil
	}
}

func ids(b []Expired) []uint64 {
	out := make([]uint64, len(b))
	for i, e := range b {
		out[i] = e.ID
	}
	return out
}

// waitArmed waits until the driver has armed exactly one timer, with a
// deadline in (after, by]: it may wake before a deadline to move timers
// down from a coarse slot, but never after it.
func waitArmed(t *testing.T, clk *FakeClock, after, by time.Time) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	err := clk.WaitDeadlines(ctx, func(d []time.Time) bool {
		return len(d) == 1 && d[0].After(after) && !d[0].After(by)
	})
	if err != nil {
		t.Fatalf("no timer armed in (%v, %v]; armed: %v", after, by, clk.Deadlines())
	}
}

// waitIdle waits until the driver has no timer armed.
func waitIdle(t *testing.T, clk *FakeClock) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	if err := clk.WaitDeadlines(ctx, func(d []time.Time) bool { return len(d) == 0 }); err != nil {
		t.Fatalf("driver still has timers armed: %v", clk.Deadlines())
	}
}

func TestDriver_FiresBatches(t *testing.T) {
	d, clk, batches := startDriver(t, nil)
	for _, id := range []uint64{1, 2, 3} {
		d.Add(id, t0.Add(time.Second))
	}
	d.Add(4, t0.Add(2*time.Second))

	waitArmed(t, clk, t0, t0.Add(time.Second))
	clk.Advance(time.Second)
	b := recvBatch(t, batches)
	if got, want := ids(b), []uint64{1, 2, 3}; !slices.Equal(got, want) {
		t.Errorf("first batch %v, want %v", got, want)
	}
	if !b[0].Due.Equal(t0.Add(time.Second)) {
		t.Errorf("Due = %v, want %v", b[0].Due, t0.Add(time.Second))
	}

	waitArmed(t, clk, t0.Add(time.Second), t0.Add(2*time.Second))
	clk.Advance(5 * time.Second)
	if got, want := ids(recvBatch(t, batches)), []uint64{4}; !slices.Equal(got, want) {
		t.Errorf("second batch %v, want %v", got, want)
	}
	waitIdle(t, clk)
	if got := d.Len(); got != 0 {
		t.Errorf("Len() = %d, want 0", got)
	}
}

func TestDriver_WakesForEarlierDeadline(t *testing.T) {
	d, clk, batches := startDriver(t, nil)
	d.Add(1, t0.Add(30*time.Second))
	waitArmed(t, clk, t0, t0.Add(30*time.Second))
	// The driver may wake early to cascade a coarse slot; pick a deadline
	// before whatever it armed.
	armed := clk.Deadlines()[0]
	due := t0.Add(armed.Sub(t0) / 2).Truncate(time.Millisecond)
	if !due.After(t0) {
		due = t0.Add(time.Millisecond)
	}
	d.Add(2, due)
	waitArmed(t, clk, t0, due)
	d.Add(3, t0.Add(30*time.Second)) // later: keeps the deadline
	clk.Set(due)
	if got, want := ids(recvBatch(t, batches)), []uint64{2}; !slices.Equal(got, want) {
		t.Errorf("batch %v, want %v", got, want)
	}
	waitArmed(t, clk, due, t0.Add(30*time.Second))
}

func TestDriver_Remove(t *testing.T) {
	d, clk, batches := startDriver(t, nil)
	h := d.Add(1, t0.Add(time.Second))
	d.Add(2, t0.Add(2*time.Second))
	if !d.Remove(h) {
		t.Fatal("Remove(pending) = false")
	}
	if d.Remove(h) {
		t.Fatal("second Remove = true")
	}
	clk.Advance(3 * time.Second)
	if got, want := ids(recvBatch(t, batches)), []uint64{2}; !slices.Equal(got, want) {
		t.Errorf("batch %v, want %v", got, want)
	}
}

func TestDriver_PastDueFiresWithoutClockMoving(t *testing.T) {
	d, _, batches := startDriver(t, nil)
	d.Add(1, t0.Add(-time.Minute))
	if got, want := ids(recvBatch(t, batches)), []uint64{1}; !slices.Equal(got, want) {
		t.Errorf("batch %v, want %v", got, want)
	}
}

// TestDriver_SleepsUntilNextSlot checks that an idle driver arms no timer
// and a busy one sleeps from slot to slot instead of ticking: a timer 10s
// away takes a handful of wake-ups (one per level it moves down), not
// 10,000 one-millisecond ticks.
func TestDriver_SleepsUntilNextSlot(t *testing.T) {
	sleeps := make(chan time.Time, 100)
	d, clk, batches := startDriver(t, func(dl time.Time) { sleeps <- dl })
	next := func() time.Time {
		t.Helper()
		select {
		case dl := <-sleeps:
			return dl
		case <-time.After(waitTimeout):
			t.Fatal("driver did not go to sleep")
			return time.Time{}
		}
	}
	if dl := next(); !dl.IsZero() {
		t.Fatalf("idle driver sleeps until %v, want no deadline", dl)
	}
	if got := clk.Deadlines(); len(got) != 0 {
		t.Fatalf("idle driver armed timers %v", got)
	}
	due := t0.Add(10*time.Second + 7*time.Millisecond)
	d.Add(1, due)
	wakes := 0
	for {
		dl := next()
		if dl.IsZero() {
			break
		}
		if dl.After(due) || !dl.After(clk.Now()) {
			t.Fatalf("driver sleeps until %v at %v, want a time in (now, %v]", dl, clk.Now(), due)
		}
		if wakes++; wakes > defaultLevels {
			t.Fatalf("%d wake-ups for one timer", wakes)
		}
		clk.Set(dl)
	}
	if got := ids(recvBatch(t, batches)); !slices.Equal(got, []uint64{1}) {
		t.Errorf("batch %v, want [1]", got)
	}
	if !clk.Now().Equal(due) {
		t.Errorf("fired at %v, want %v", clk.Now(), due)
	}
	if got := clk.Deadlines(); len(got) != 0 {
		t.Errorf("driver armed timers %v after firing everything", got)
	}
}

func TestDriver_CapsSleep(t *testing.T) {
	d, clk, _ := startDriver(t, nil)
	d.Add(1, t0.Add(time.Hour))
	waitArmed(t, clk, t0.Add(maxSleep-time.Nanosecond), t0.Add(maxSleep))
	clk.Advance(maxSleep)
	waitArmed(t, clk, t0.Add(2*maxSleep-time.Nanosecond), t0.Add(2*maxSleep))
}

func TestDriver_Run(t *testing.T) {
	d := NewDriver(New(Config{Start: t0}), NewFakeClock(t0), func([]Expired) {})
	asleep := make(chan struct{}, 1)
	d.sleepHook = func(time.Time) {
		select {
		case asleep <- struct{}{}:
		default:
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	select {
	case <-asleep:
	case <-time.After(waitTimeout):
		t.Fatal("Run did not start")
	}
	if err := d.Run(ctx); !errors.Is(err, ErrRunning) {
		t.Errorf("second Run() = %v, want ErrRunning", err)
	}
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Run() = %v, want context.Canceled", err)
		}
	case <-time.After(waitTimeout):
		t.Fatal("Run did not return after cancel")
	}
}

// TestDriver_Concurrent adds and removes timers from several goroutines
// while the clock moves, and checks every timer either fired exactly once or
// was removed, never both.
func TestDriver_Concurrent(t *testing.T) {
	d, clk, batches := startDriver(t, nil)
	const workers, perWorker = 4, 500
	var (
		mu      sync.Mutex
		removed = map[uint64]bool{}
		wg      sync.WaitGroup
	)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewSource(int64(w)))
			for i := range perWorker {
				id := uint64(w*perWorker + i)
				h := d.Add(id, t0.Add(time.Duration(r.Intn(200))*time.Millisecond))
				if r.Intn(4) == 0 && d.Remove(h) {
					mu.Lock()
					removed[id] = true
					mu.Unlock()
				}
			}
		}()
	}
	for range 20 {
		clk.Advance(10 * time.Millisecond)
	}
	wg.Wait()
	clk.Advance(time.Second)

	fired := map[uint64]bool{}
	for len(fired)+len(removed) < workers*perWorker {
		for _, e := range recvBatch(t, batches) {
			if fired[e.ID] || removed[e.ID] {
				t.Fatalf("id %d fired twice or after removal", e.ID)
			}
			fired[e.ID] = true
		}
	}
	if got := d.Len(); got != 0 {
		t.Errorf("Len() = %d, want 0", got)
	}
}

func TestDriver_RealClock(t *testing.T) {
	batches := make(chan []Expired, 1)
	d := NewDriver(New(Config{Start: time.Now()}), RealClock{}, func(b []Expired) { batches <- b })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go d.Run(ctx)
	due := time.Now().Add(5 * time.Millisecond)
	d.Add(1, due)
	b := recvBatch(t, batches)
	if now := time.Now(); now.Before(due) {
		t.Errorf("fired at %v, before its due %v", now, due)
	}
	if got := ids(b); !slices.Equal(got, []uint64{1}) {
		t.Errorf("batch %v, want [1]", got)
	}
}

// movingClock is a FakeClock that moves right after each of its next reads,
// by the steps given, as a test's goroutine may move a fake clock while the
// code under test is between reading it and arming a timer.
type movingClock struct {
	*FakeClock
	mu    sync.Mutex
	steps []time.Duration
}

func (c *movingClock) Now() time.Time {
	now := c.FakeClock.Now()
	c.mu.Lock()
	var step time.Duration
	if len(c.steps) > 0 {
		step, c.steps = c.steps[0], c.steps[1:]
	}
	c.mu.Unlock()
	c.FakeClock.Advance(step)
	return now
}

// TestDriver_ClockMovesBeforeArming moves the clock while the driver is
// between reading it and arming its timer: the timer must still fire at the
// next deadline, not as much later as the clock moved.
func TestDriver_ClockMovesBeforeArming(t *testing.T) {
	clk := &movingClock{FakeClock: NewFakeClock(t0)}
	batches := make(chan []Expired, 10)
	d := NewDriver(New(Config{Start: t0}), clk, func(b []Expired) { batches <- b })
	sleeps := make(chan time.Time, 10)
	d.sleepHook = func(dl time.Time) { sleeps <- dl }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	defer func() {
		cancel()
		<-done
	}()
	if dl := <-sleeps; !dl.IsZero() {
		t.Fatalf("idle driver sleeps until %v", dl)
	}

	clk.mu.Lock()
	clk.steps = []time.Duration{4 * time.Millisecond, 4 * time.Millisecond}
	clk.mu.Unlock()
	due := t0.Add(10 * time.Millisecond)
	d.Add(1, due)
	ctx2, cancel2 := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel2()
	if err := clk.WaitDeadlines(ctx2, func(dl []time.Time) bool { return len(dl) > 0 }); err != nil {
		t.Fatal("driver armed no timer")
	}
	if dl := clk.Deadlines(); len(dl) > 0 && dl[0].After(due) {
		t.Fatalf("driver armed its timer for %v, after the deadline %v", dl[0].Sub(t0), due.Sub(t0))
	}
	clk.Set(due)
	if got := ids(recvBatch(t, batches)); !slices.Equal(got, []uint64{1}) {
		t.Errorf("batch %v, want [1]", got)
	}
}
