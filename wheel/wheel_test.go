package wheel

import (
	"errors"
	"math"
	"math/rand"
	"slices"
	"testing"
	"time"
)

var t0 = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

// advance runs w.Advance(now) and returns the ids fired, in order.
func advance(t *testing.T, w *Wheel, now time.Time) []uint64 {
	t.Helper()
	var got []uint64
	w.Advance(now, func(id uint64, due time.Time) {
		if due.After(now) {
			t.Errorf("timer %d due %v fired early at %v", id, due, now)
		}
		got = append(got, id)
	})
	return got
}

func TestConfig_Validate(t *testing.T) {
	cases := []struct {
		name string
		res  time.Duration
		ok   bool
	}{
		{"zero means default", 0, true},
		{"one nanosecond", 1, true},
		{"max", MaxResolution, true},
		{"too coarse", MaxResolution + 1, false},
		{"negative", -time.Millisecond, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := Config{Resolution: tc.res}.Validate()
			if got := err == nil; got != tc.ok {
				t.Fatalf("Validate() = %v, want ok %v", err, tc.ok)
			}
			if err != nil && !errors.Is(err, ErrResolution) {
				t.Errorf("Validate() = %v, want ErrResolution", err)
			}
		})
	}
}

func TestNew_PanicsOnBadConfig(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("New with a 1s resolution did not panic")
		}
	}()
	New(Config{Resolution: time.Second})
}

func TestWheel_Advance(t *testing.T) {
	type add struct {
		id  uint64
		due time.Duration // from t0
	}
	type step struct {
		at   time.Duration // from t0
		want []uint64
	}
	const year = 365 * 24 * time.Hour
	cases := []struct {
		name  string
		res   time.Duration
		adds  []add
		steps []step
	}{
		{
			name:  "fires at its due time, not before",
			res:   time.Millisecond,
			adds:  []add{{1, 5 * time.Millisecond}},
			steps: []step{{4 * time.Millisecond, nil}, {5 * time.Millisecond, []uint64{1}}, {time.Second, nil}},
		},
		{
			name:  "sub-tick deadline rounds up",
			res:   time.Millisecond,
			adds:  []add{{1, 1500 * time.Microsecond}},
			steps: []step{{1700 * time.Microsecond, nil}, {1999 * time.Microsecond, nil}, {2 * time.Millisecond, []uint64{1}}},
		},
		{
			name:  "coarse resolution rounds up",
			res:   10 * time.Millisecond,
			adds:  []add{{1, 1 * time.Millisecond}, {2, 10 * time.Millisecond}, {3, 11 * time.Millisecond}},
			steps: []step{{9 * time.Millisecond, nil}, {10 * time.Millisecond, []uint64{1, 2}}, {19 * time.Millisecond, nil}, {20 * time.Millisecond, []uint64{3}}},
		},
		{
			name:  "past and present deadlines fire on the next advance, sorted",
			res:   time.Millisecond,
			adds:  []add{{1, -time.Second}, {2, 0}, {3, -time.Hour}},
			steps: []step{{0, []uint64{3, 1, 2}}},
		},
		{
			name: "one big advance fires every level in order",
			res:  time.Millisecond,
			adds: []add{
				{5, 3 * time.Hour}, {1, time.Millisecond}, {4, 10 * time.Minute},
				{3, 30 * time.Second}, {2, 100 * time.Millisecond}, {6, 30 * 24 * time.Hour},
			},
			steps: []step{{31 * 24 * time.Hour, []uint64{1, 2, 3, 4, 5, 6}}},
		},
		{
			// 8 levels of 1µs ticks span 8.9 years; beyond that, the overflow list.
			name:  "far timers beyond the top level",
			res:   time.Microsecond,
			adds:  []add{{2, 150 * year}, {1, 100 * year}, {3, 150*year + time.Microsecond}, {4, 9 * year}},
			steps: []step{{100*year - time.Microsecond, []uint64{4}}, {150 * year, []uint64{1, 2}}, {151 * year, []uint64{3}}},
		},
		{
			name:  "going back in time fires nothing",
			res:   time.Millisecond,
			adds:  []add{{1, time.Second}},
			steps: []step{{2 * time.Second, []uint64{1}}, {0, nil}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := New(Config{Resolution: tc.res, Start: t0})
			for _, a := range tc.adds {
				w.Add(a.id, t0.Add(a.due))
			}
			for _, s := range tc.steps {
				if got := advance(t, w, t0.Add(s.at)); !slices.Equal(got, s.want) {
					t.Errorf("Advance(t0+%v) fired %v, want %v", s.at, got, s.want)
				}
			}
		})
	}
}

func TestWheel_AdvanceReportsDue(t *testing.T) {
	w := New(Config{Start: t0})
	due := t0.Add(1234567 * time.Nanosecond)
	w.Add(7, due)
	var got time.Time
	w.Advance(t0.Add(time.Second), func(id uint64, d time.Time) { got = d })
	if !got.Equal(due) {
		t.Errorf("fired with due %v, want %v", got, due)
	}
}

func TestWheel_Remove(t *testing.T) {
	w := New(Config{Start: t0})
	h1 := w.Add(1, t0.Add(time.Second))
	h2 := w.Add(2, t0.Add(time.Hour))
	if got := w.Remove(Handle{}); got {
		t.Error("Remove(zero Handle) = true, want false")
	}
	if got := w.Remove(h1); !got {
		t.Error("Remove(pending) = false, want true")
	}
	if got := w.Remove(h1); got {
		t.Error("second Remove = true, want false")
	}
	// Advancing past h1's slot reclaims its storage, fires nothing.
	if got := advance(t, w, t0.Add(2*time.Second)); len(got) != 0 {
		t.Errorf("fired %v, want nothing", got)
	}
	// h3 reuses h1's storage; the stale h1 must not cancel it.
	h3 := w.Add(3, t0.Add(3*time.Second))
	if h3.idx != h1.idx {
		t.Fatalf("storage not reused: idx %d, want %d", h3.idx, h1.idx)
	}
	if got := w.Remove(h1); got {
		t.Error("stale Remove after reuse = true, want false")
	}
	if got := advance(t, w, t0.Add(time.Minute)); !slices.Equal(got, []uint64{3}) {
		t.Errorf("fired %v, want [3]", got)
	}
	if got := w.Remove(h3); got {
		t.Error("Remove after firing = true, want false")
	}
	if got, want := w.Len(), 1; got != want {
		t.Errorf("Len() = %d, want %d", got, want)
	}
	if got := w.Remove(h2); !got {
		t.Error("Remove(far pending) = false, want true")
	}
	if got := advance(t, w, t0.Add(2*time.Hour)); len(got) != 0 {
		t.Errorf("fired %v after removing everything", got)
	}
	if _, ok := w.Next(); ok {
		t.Error("Next() on an empty wheel returned ok")
	}
}

func TestWheel_Next(t *testing.T) {
	cases := []struct {
		name     string
		due      time.Duration
		min, max time.Duration // Next must be within [t0+min, t0+max]
	}{
		{"level 0 slot is exact", 10 * time.Millisecond, 10 * time.Millisecond, 10 * time.Millisecond},
		{"sub-tick deadline reports the rounded tick", 1500 * time.Microsecond, 2 * time.Millisecond, 2 * time.Millisecond},
		{"coarse slot start is not later than the due", 90 * time.Minute, time.Millisecond, 90 * time.Minute},
		{"far timer is not later than the due", 200 * 365 * 24 * time.Hour, time.Millisecond, 200 * 365 * 24 * time.Hour},
		{"past due is now or earlier", -time.Hour, -time.Hour, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := New(Config{Start: t0})
			if _, ok := w.Next(); ok {
				t.Fatal("Next() on an empty wheel returned ok")
			}
			w.Add(1, t0.Add(tc.due))
			got, ok := w.Next()
			if !ok || got.Before(t0.Add(tc.min)) || got.After(t0.Add(tc.max)) {
				t.Errorf("Next() = %v, %v; want in [t0+%v, t0+%v]", got.Sub(t0), ok, tc.min, tc.max)
			}
		})
	}
}

// TestWheel_NextSkipsEmptySlots drives the wheel the way Driver does and
// checks it wakes once per level, not once per tick.
func TestWheel_NextSkipsEmptySlots(t *testing.T) {
	w := New(Config{Start: t0})
	w.Add(1, t0.Add(5*time.Hour+17*time.Millisecond))
	wakes := 0
	var fired []uint64
	for {
		next, ok := w.Next()
		if !ok {
			break
		}
		wakes++
		w.Advance(next, func(id uint64, _ time.Time) { fired = append(fired, id) })
	}
	if !slices.Equal(fired, []uint64{1}) {
		t.Errorf("fired %v, want [1]", fired)
	}
	if wakes > defaultLevels {
		t.Errorf("%d wake-ups for one timer, want at most %d", wakes, defaultLevels)
	}
}

func TestWheel_FireMayAddAndRemove(t *testing.T) {
	w := New(Config{Start: t0})
	later := w.Add(2, t0.Add(3*time.Millisecond))
	w.Add(1, t0.Add(time.Millisecond))
	var got []uint64
	fire := func(id uint64, due time.Time) {
		got = append(got, id)
		if id == 1 {
			w.Remove(later)
			w.Add(3, due.Add(time.Millisecond)) // due within this Advance
			w.Add(4, due)                       // already due: next Advance
		}
	}
	w.Advance(t0.Add(10*time.Millisecond), fire)
	if want := []uint64{1, 3}; !slices.Equal(got, want) {
		t.Errorf("first Advance fired %v, want %v", got, want)
	}
	got = nil
	w.Advance(t0.Add(10*time.Millisecond), fire)
	if want := []uint64{4}; !slices.Equal(got, want) {
		t.Errorf("second Advance fired %v, want %v", got, want)
	}
}

func TestWheel_ExtremeTimes(t *testing.T) {
	end := time.Unix(0, math.MaxInt64)
	cases := []struct {
		name string
		res  time.Duration
		want []uint64 // fired by Advance(year 4000)
	}{
		{"saturated deadlines fire at the end of time", 1, []uint64{2, 3}},
		// 3ns does not divide 2^63: the rounded deadline is past the end of
		// the representable range, so these never fire (never early).
		{"rounded past the end never fire", 3, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := New(Config{Start: t0, Resolution: tc.res})
			w.Add(1, time.Time{})                                 // year 1: saturates to 1678, already due
			w.Add(2, time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC)) // saturates to 2262
			w.Add(3, end)
			if got := advance(t, w, t0); !slices.Equal(got, []uint64{1}) {
				t.Errorf("fired %v, want [1]", got)
			}
			if next, ok := w.Next(); !ok || next.After(end) {
				t.Errorf("Next() = %v, %v; want at most %v", next, ok, end)
			}
			if got := advance(t, w, end.Add(-1)); len(got) != 0 {
				t.Errorf("fired %v before the end", got)
			}
			if got := advance(t, w, time.Date(4000, 1, 1, 0, 0, 0, 0, time.UTC)); !slices.Equal(got, tc.want) {
				t.Errorf("fired %v, want %v", got, tc.want)
			}
		})
	}
}

func TestWheel_ZeroStart(t *testing.T) {
	w := New(Config{})
	w.Add(1, t0)
	if got := advance(t, w, t0.Add(-time.Millisecond)); len(got) != 0 {
		t.Errorf("fired %v early", got)
	}
	if got := advance(t, w, t0); !slices.Equal(got, []uint64{1}) {
		t.Errorf("fired %v, want [1]", got)
	}
}

// TestWheel_RemoveIsLazy checks what a removed timer leaves behind: its
// handle is dead at once, Len and Next forget it, and its storage is only
// reused once Advance has dropped its tombstone.
func TestWheel_RemoveIsLazy(t *testing.T) {
	w := New(Config{Start: t0})
	h := w.Add(1, t0.Add(time.Hour))
	if !w.Remove(h) || w.Remove(h) {
		t.Fatal("Remove, Remove = not true, false")
	}
	if w.Len() != 0 || w.dead != 1 {
		t.Fatalf("Len() = %d, tombstones %d; want 0, 1", w.Len(), w.dead)
	}
	if _, ok := w.Next(); ok {
		t.Error("Next() with only a tombstone returned ok")
	}
	if h2 := w.Add(2, t0.Add(time.Hour)); h2.idx == h.idx {
		t.Error("a tombstone's storage was reused")
	}
	if got := advance(t, w, t0.Add(2*time.Hour)); !slices.Equal(got, []uint64{2}) {
		t.Errorf("fired %v, want [2]", got)
	}
	if w.dead != 0 {
		t.Errorf("%d tombstones after advancing past them", w.dead)
	}
	// Both indices are free now; two Adds reuse them.
	hi := w.s.hiIdx
	h3, h4 := w.Add(3, t0.Add(3*time.Hour)), w.Add(4, t0.Add(3*time.Hour))
	if w.s.hiIdx != hi || (h3.idx != h.idx && h4.idx != h.idx) {
		t.Fatalf("Adds after reclaiming got %+v and %+v, want index %d reused", h3, h4, h.idx)
	}
	if h3.gen == h.gen && h4.gen == h.gen {
		t.Errorf("index %d reused with the same generation", h.idx)
	}
	if w.Remove(h) {
		t.Error("stale Remove cancelled the timer reusing its storage")
	}
	if err := invariantError(w); err != nil {
		t.Error(err)
	}
}

// TestWheel_SweepBoundsTombstones churns timers far in the future without
// advancing, so only Remove's sweeps reclaim tombstones, and checks that
// they stay below a quarter of the pending timers (plus what one round of
// the sweep lets through), then that cancelling everything leaves at most
// the slack.
func TestWheel_SweepBoundsTombstones(t *testing.T) {
	const n = 20000
	r := rand.New(rand.NewSource(3))
	w := New(Config{Start: t0})
	hs := make([]Handle, n)
	due := func() time.Time { return t0.Add(time.Hour + time.Duration(r.Int63n(int64(24*time.Hour)))) }
	for i := range hs {
		hs[i] = w.Add(uint64(i), due())
	}
	maxRatio := 0.0
	for op := range 10 * n {
		k := r.Intn(n)
		if !w.Remove(hs[k]) {
			t.Fatalf("op %d: Remove = false", op)
		}
		hs[k] = w.Add(uint64(n+op), due())
		maxRatio = max(maxRatio, float64(w.dead-w.sweepSlack)/float64(w.count))
	}
	if maxRatio > 0.3 {
		t.Errorf("tombstones reached %.3f of the pending timers (beyond the slack), want at most 0.3", maxRatio)
	}
	for _, h := range hs {
		w.Remove(h)
	}
	if w.dead > w.sweepSlack+sweepBudget {
		t.Errorf("%d tombstones left with nothing pending, want at most %d", w.dead, w.sweepSlack+sweepBudget)
	}
	if err := invariantError(w); err != nil {
		t.Error(err)
	}
	t.Logf("max tombstones per pending timer %.3f", maxRatio)
}

// TestWheel_SweepCursorSurvivesAdvance leaves the sweep's cursor in the
// middle of the ready list or of a slot, then advances (which empties it),
// lets another list take its chunks and carries on sweeping: the cursor
// must not point into chunks that are gone.
func TestWheel_SweepCursorSurvivesAdvance(t *testing.T) {
	for _, ready := range []bool{true, false} {
		w := New(Config{Start: t0})
		w.sweepSlack = 0
		var hs []Handle
		add := func(due time.Time) {
			hs = hs[:0]
			for range 5000 {
				hs = append(hs, w.Add(uint64(len(hs)), due))
			}
		}
		list, due := w.ready, t0.Add(-time.Second)
		if !ready {
			list, due = 10, t0.Add(10*time.Millisecond) // level 0, slot 10
		}
		add(due)
		for k := 0; !(w.sweepList == list && w.sweepLeft > 0 && w.sweepLeft < w.lists[list].n); k++ {
			if k == len(hs) {
				t.Fatalf("ready=%v: the sweep never stopped inside list %d", ready, list)
			}
			w.Remove(hs[k])
		}
		want := w.Len()
		if got := len(advance(t, w, t0.Add(10*time.Millisecond))); got != want {
			t.Errorf("ready=%v: fired %d, want %d", ready, got, want)
		}
		add(t0.Add(time.Minute)) // reuses the freed chunks
		for _, h := range hs[:4000] {
			w.Remove(h)
		}
		if err := invariantError(w); err != nil {
			t.Fatalf("ready=%v: %v", ready, err)
		}
		if got := len(advance(t, w, t0.Add(time.Hour))); got != 1000 {
			t.Errorf("ready=%v: fired %d, want 1000", ready, got)
		}
	}
}
