package wheel

import (
	"cmp"
	"fmt"
	"math"
	"math/rand"
	"slices"
	"testing"
	"time"
)

// model is the reference the wheel is checked against: the pending timers
// sorted by deadline, and the rule that a timer fires on the first Advance
// whose tick (rounded down) reaches its deadline's tick (rounded up), with
// time never going back.
type model struct {
	res     int64
	cur     int64        // latest tick advanced to
	pending []modelTimer // sorted by (due, id)
	handles map[uint64]Handle
}

type modelTimer struct {
	due int64
	id  uint64
}

func cmpTimer(a, b modelTimer) int {
	return cmp.Or(cmp.Compare(a.due, b.due), cmp.Compare(a.id, b.id))
}

func (m *model) add(id uint64, due int64, h Handle) {
	mt := modelTimer{due, id}
	i, _ := slices.BinarySearchFunc(m.pending, mt, cmpTimer)
	m.pending = slices.Insert(m.pending, i, mt)
	m.handles[id] = h
}

func (m *model) remove(mt modelTimer) {
	i, ok := slices.BinarySearchFunc(m.pending, mt, cmpTimer)
	if !ok {
		panic("model: removing unknown timer")
	}
	m.pending = slices.Delete(m.pending, i, i+1)
	delete(m.handles, mt.id)
}

// advance returns the ids that must fire at now, sorted, and their
// handles, which are stale from then on.
func (m *model) advance(now int64) ([]uint64, map[uint64]Handle) {
	t := floorTick(now, m.res)
	if t < m.cur {
		return nil, nil
	}
	m.cur = t
	n := 0
	for n < len(m.pending) && ceilTick(m.pending[n].due, m.res) <= t {
		n++
	}
	ids := make([]uint64, n)
	hs := make(map[uint64]Handle, n)
	for i, mt := range m.pending[:n] {
		ids[i], hs[mt.id] = mt.id, m.handles[mt.id]
		delete(m.handles, mt.id)
	}
	m.pending = slices.Delete(m.pending, 0, n)
	slices.Sort(ids)
	return ids, hs
}

// satAdd adds without overflowing int64.
func satAdd(a, b int64) int64 {
	s := a + b
	switch {
	case b > 0 && s < a:
		return math.MaxInt64
	case b < 0 && s > a:
		return math.MinInt64
	}
	return s
}

// randUpTo returns a random int64 in [0, n], n >= 0.
func randUpTo(r *rand.Rand, n int64) int64 {
	if n == math.MaxInt64 {
		return r.Int63()
	}
	return r.Int63n(n + 1)
}

// span returns res*64^k ticks in nanoseconds, saturated.
func span(res int64, k int) int64 {
	s := res
	for range k {
		if s > math.MaxInt64/64 {
			return math.MaxInt64
		}
		s *= 64
	}
	return s
}

// TestWheel_Property runs random Add/Remove/Advance sequences against the
// model for random resolutions, level counts, start times and tombstone
// limits, asserting that the wheel never fires early, late, twice or out
// of order, that stale handles (of fired, removed, and reclaimed and
// reused timers) never cancel anything, that Next never skips a timer,
// that the wheel's bookkeeping stays consistent (invariantError) and that
// the tombstones left by Remove stay bounded.
func TestWheel_Property(t *testing.T) {
	var cov staleCoverage
	r := rand.New(rand.NewSource(20250601))
	resolutions := []int64{1, 3, 1000, 1e6, 3e6, 1e7}
	for run := range 40 {
		res := resolutions[r.Intn(len(resolutions))]
		if r.Intn(3) == 0 {
			res = 1 + r.Int63n(int64(MaxResolution))
		}
		levels := 1 + r.Intn(maxLevels)
		if run%4 == 0 {
			levels = defaultLevels
		}
		start := t0.UnixNano() + r.Int63n(int64(time.Hour))
		if run%10 == 9 {
			start = -r.Int63n(int64(100 * 365 * 24 * time.Hour)) // before 1970
		}
		// Sweep as soon as tombstones exceed a quarter of the pending
		// timers, or after a few more, or rarely (the default).
		slack := []int{0, 5, defaultSweepSlack}[run%3]
		seed := r.Int63()
		t.Run(fmt.Sprintf("run%d/res=%d/levels=%d/slack=%d", run, res, levels, slack), func(t *testing.T) {
			checkProperty(t, seed, res, levels, start, slack, 4000, &cov)
		})
	}
	// Stale handles must have been tried in every state of their storage.
	if cov.free == 0 || cov.tombstone == 0 || cov.reused == 0 {
		t.Errorf("stale Removes of free %d, tombstone %d, reused %d storage: want some of each", cov.free, cov.tombstone, cov.reused)
	}
}

// staleCoverage counts stale Removes by the state of the handle's storage.
type staleCoverage struct {
	free      int // on the free list
	tombstone int // the handle's own timer, cancelled but not reclaimed
	reused    int // reused by a later timer (a new generation)
}

// record counts a stale Remove of h on w, before it happens.
func (c *staleCoverage) record(w *Wheel, h Handle) {
	switch {
	case h.idx == 0:
	case *w.s.gen(h.idx) != h.gen:
		c.reused++
	case slices.Contains(freeIndices(w), h.idx):
		c.free++
	default:
		c.tombstone++
	}
}

func freeIndices(w *Wheel) []uint32 {
	var f []uint32
	for k := range w.s.nFree {
		f = append(f, w.s.free[k>>stackPageBits][k&stackPageMask])
	}
	return f
}

func checkProperty(t *testing.T, seed, res int64, levels int, start int64, slack, ops int, cov *staleCoverage) {
	r := rand.New(rand.NewSource(seed))
	w := newWheel(Config{Resolution: time.Duration(res), Start: time.Unix(0, start)}, levels)
	w.sweepSlack = slack
	m := &model{res: res, cur: floorTick(start, res), handles: map[uint64]Handle{}}
	var stale []Handle
	dues := map[uint64]int64{} // pending timers
	nextID := uint64(1)
	// newID returns a new id, or now and then that of a timer that fired or
	// was removed (its cell may still be in the wheel, as a tombstone): ids
	// need not be unique, but the model needs the pending ones to be.
	var retired []uint64
	inAdvance := false // the fire callback tells this Advance's timers by id
	newID := func() uint64 {
		if len(retired) > 0 && !inAdvance && r.Intn(4) == 0 {
			k := r.Intn(len(retired))
			id := retired[k]
			retired[k] = retired[len(retired)-1]
			retired = retired[:len(retired)-1]
			if _, pending := dues[id]; !pending {
				return id
			}
		}
		nextID++
		return nextID - 1
	}

	// check advances both to now and compares with the model. Now and then
	// the fire callback removes a timer (one due in this Advance, fired or
	// not yet, or a later one) or adds one due after now, as a caller may.
	check := func(op int, now int64) {
		t.Helper()
		want, wantSet := m.advance(now)
		for _, id := range want {
			stale = append(stale, wantSet[id])
		}
		var got []uint64
		firedNow := map[uint64]bool{}
		lastTick := int64(math.MinInt64)
		inAdvance = true
		defer func() { inAdvance = false }()
		w.Advance(time.Unix(0, now), func(id uint64, due time.Time) {
			d, ok := dues[id]
			switch {
			case !ok:
				t.Fatalf("op %d: fired unknown, removed or already fired id %d", op, id)
			case toNanos(due) != d:
				t.Fatalf("op %d: id %d fired with due %d, want %d", op, id, toNanos(due), d)
			case d > now:
				t.Fatalf("op %d: id %d due %d fired early at %d", op, id, d, now)
			}
			if tk := ceilTick(d, res); tk < lastTick {
				t.Fatalf("op %d: id %d tick %d fired after tick %d", op, id, tk, lastTick)
			} else {
				lastTick = tk
			}
			delete(dues, id)
			retired = append(retired, id)
			got = append(got, id)
			firedNow[id] = true

			switch q := r.Intn(40); {
			case q == 0 && len(want) > 0: // a timer of this batch
				vid := want[r.Intn(len(want))]
				h := wantSet[vid]
				removed := w.Remove(h)
				if _, pending := dues[vid]; removed != pending {
					t.Fatalf("op %d: in fire, Remove(id %d due now) = %v, fired already: %v", op, vid, removed, firedNow[vid])
				}
				if removed {
					delete(dues, vid)
					retired = append(retired, vid)
					want = slices.DeleteFunc(want, func(x uint64) bool { return x == vid })
				}
			case q == 1 && len(m.pending) > 0: // a later timer
				mt := m.pending[r.Intn(len(m.pending))]
				if !w.Remove(m.handles[mt.id]) {
					t.Fatalf("op %d: in fire, Remove(later id %d) = false", op, mt.id)
				}
				stale = append(stale, m.handles[mt.id])
				m.remove(mt)
				delete(dues, mt.id)
				retired = append(retired, mt.id)
			case q == 2: // a new timer due after now
				due := satAdd(max(now, tickNanos(m.cur, res)), 1+randUpTo(r, span(res, 1+r.Intn(4))))
				if due <= now {
					break
				}
				nid := newID()
				m.add(nid, due, w.Add(nid, time.Unix(0, due)))
				dues[nid] = due
			}
		})
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Fatalf("op %d: Advance(%d) fired %v, want %v", op, now, got, want)
		}
	}
	nowNanos := func() int64 { return tickNanos(m.cur, res) }

	for op := range ops {
		switch p := r.Intn(100); {
		case p < 45: // add
			c := nowNanos()
			var due int64
			var dueT time.Time
			switch q := r.Intn(20); {
			case q < 2:
				due = satAdd(c, -randUpTo(r, int64(time.Hour)))
			case q < 3:
				due = c
			case q < 7:
				due = satAdd(c, randUpTo(r, 64*res))
			case q < 9:
				due = satAdd(c, int64(1+r.Intn(200))*res) // tick boundary
			case q < 17:
				due = satAdd(c, randUpTo(r, span(res, 1+r.Intn(maxLevels+1))))
			case q < 18:
				due = satAdd(c, randUpTo(r, math.MaxInt64-max(c, 0)))
			case q < 19:
				due, dueT = math.MaxInt64, time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC)
			default:
				due, dueT = math.MinInt64, time.Date(1000, 1, 1, 0, 0, 0, 0, time.UTC)
			}
			if dueT.IsZero() {
				dueT = time.Unix(0, due)
			}
			id := newID()
			h := w.Add(id, dueT)
			m.add(id, due, h)
			dues[id] = due
		case p < 60: // cancel a pending timer
			if len(m.pending) == 0 {
				continue
			}
			mt := m.pending[r.Intn(len(m.pending))]
			h := m.handles[mt.id]
			if !w.Remove(h) {
				t.Fatalf("op %d: Remove(pending %d) = false", op, mt.id)
			}
			m.remove(mt)
			delete(dues, mt.id)
			retired = append(retired, mt.id)
			stale = append(stale, h)
		case p < 66: // cancel with a stale or zero handle
			h := Handle{}
			if len(stale) > 0 && r.Intn(10) > 0 {
				if r.Intn(2) == 0 {
					h = stale[len(stale)-1-r.Intn(min(len(stale), 3))] // a recent one
				} else {
					h = stale[r.Intn(len(stale))]
				}
			}
			cov.record(w, h)
			if w.Remove(h) {
				t.Fatalf("op %d: Remove(stale %+v) = true", op, h)
			}
		case p < 95: // advance
			c := nowNanos()
			var now int64
			switch q := r.Intn(100); {
			case q < 5:
				now = satAdd(c, -randUpTo(r, 100*res))
			case q < 35:
				now = satAdd(c, randUpTo(r, res))
			case q < 60:
				now = satAdd(c, randUpTo(r, 100*res))
			case q < 88:
				now = satAdd(c, randUpTo(r, span(res, 1+r.Intn(6))))
			case q < 99:
				if len(m.pending) == 0 {
					continue
				}
				d := m.pending[r.Intn(min(len(m.pending), 5))].due
				now = satAdd(tickNanos(ceilTick(d, res), res), int64(r.Intn(3)-1))
			default:
				now = satAdd(c, randUpTo(r, math.MaxInt64-max(c, 0))/1024)
			}
			check(op, now)
		default: // drive by Next up to a target, like Driver
			target := satAdd(nowNanos(), randUpTo(r, span(res, 1+r.Intn(4))))
			for wakes := 0; ; wakes++ {
				next, ok := w.Next()
				if !ok || next.After(time.Unix(0, target)) {
					break
				}
				if wakes > 10*maxLevels+10 {
					t.Fatalf("op %d: Next-driven loop does not make progress at %v", op, next)
				}
				check(op, toNanos(next))
			}
			check(op, target)
		}
		if got, want := w.Len(), len(m.pending); got != want {
			t.Fatalf("op %d: Len() = %d, want %d", op, got, want)
		}
		if err := invariantError(w); err != nil {
			t.Fatalf("op %d: %v", op, err)
		}
		// Remove sweeps sweepBudget cells every sweepEvery Removes while
		// there are too many tombstones, so a round of the lists takes a
		// bounded number of Removes, and a burst of Removes in one fire
		// (up to 3 here) adds a few more.
		if limit := w.count/4 + slack + (w.count+w.dead+len(w.lists))*sweepEvery/sweepBudget + 2*sweepEvery; w.dead > limit {
			t.Fatalf("op %d: %d tombstones with %d pending, limit %d", op, w.dead, w.count, limit)
		}
		next, ok := w.Next()
		if ok != (len(m.pending) > 0) {
			t.Fatalf("op %d: Next() ok = %v with %d pending", op, ok, len(m.pending))
		}
		if ok {
			// Advance must be called at this time at the latest.
			bound := tickTime(max(ceilTick(m.pending[0].due, res), m.cur), res)
			if next.After(bound) {
				t.Fatalf("op %d: Next() = %v, later than %v", op, next, bound)
			}
		}
	}
}
