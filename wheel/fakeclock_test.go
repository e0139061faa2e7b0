package wheel

import (
	"context"
	"testing"
	"time"
)

func fired(tm Timer) bool {
	select {
	case <-tm.C():
		return true
	default:
		return false
	}
}

func TestFakeClock_Timer(t *testing.T) {
	c := NewFakeClock(t0)
	tm := c.NewTimer(time.Second)
	c.Advance(999 * time.Millisecond)
	if fired(tm) {
		t.Fatal("timer fired early")
	}
	c.Advance(time.Millisecond)
	if !fired(tm) {
		t.Fatal("timer did not fire at its deadline")
	}
	if tm.Stop() {
		t.Error("Stop() after firing = true, want false")
	}

	if was := tm.Reset(time.Second); was {
		t.Error("Reset() of a fired timer = true, want false")
	}
	if !tm.Stop() {
		t.Error("Stop() of an armed timer = false, want true")
	}
	c.Advance(time.Hour)
	if fired(tm) {
		t.Error("stopped timer fired")
	}

	tm.Reset(time.Second)
	c.Set(t0.Add(2 * time.Hour)) // Set also fires
	if !fired(tm) {
		t.Error("timer did not fire on Set")
	}
	if !c.Now().Equal(t0.Add(2 * time.Hour)) {
		t.Errorf("Now() = %v, want t0+2h", c.Now())
	}

	if tm := c.NewTimer(0); !fired(tm) {
		t.Error("NewTimer(0) did not fire immediately")
	}
}

func TestFakeClock_ResetDropsStaleValue(t *testing.T) {
	c := NewFakeClock(t0)
	tm := c.NewTimer(time.Second)
	c.Advance(time.Second) // fires; value not received
	tm.Reset(time.Second)
	if fired(tm) {
		t.Error("stale value received after Reset")
	}
}

func TestFakeClock_BlockUntil(t *testing.T) {
	c := NewFakeClock(t0)
	go c.NewTimer(time.Minute)
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	if err := c.BlockUntil(ctx, 1); err != nil {
		t.Fatalf("BlockUntil(1) = %v", err)
	}
	if got := c.Deadlines(); len(got) != 1 || !got[0].Equal(t0.Add(time.Minute)) {
		t.Errorf("Deadlines() = %v, want [t0+1m]", got)
	}
	short, cancel2 := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel2()
	if err := c.BlockUntil(short, 2); err == nil {
		t.Error("BlockUntil(2) with one timer returned nil")
	}
}

func TestFakeClock_NewTimerAt(t *testing.T) {
	c := NewFakeClock(t0)
	tm := c.NewTimerAt(t0.Add(time.Second))
	c.Advance(999 * time.Millisecond)
	if fired(tm) {
		t.Fatal("timer fired early")
	}
	c.Advance(time.Millisecond)
	if !fired(tm) {
		t.Fatal("timer did not fire at its instant")
	}
	if tm := c.NewTimerAt(t0); !fired(tm) {
		t.Error("NewTimerAt(a past instant) did not fire immediately")
	}
	tm = c.NewTimerAt(t0.Add(time.Hour))
	if !tm.Stop() {
		t.Error("Stop() of an armed timer = false, want true")
	}
	c.Advance(2 * time.Hour)
	if fired(tm) {
		t.Error("stopped timer fired")
	}
}
