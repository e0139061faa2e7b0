package wheel

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"time"
)

const (
	// DefaultResolution is the tick length used when Config.Resolution is 0.
	DefaultResolution = time.Millisecond
	// MaxResolution is the coarsest tick a Wheel accepts.
	MaxResolution = 10 * time.Millisecond

	slotBits      = 6
	slotsPerLevel = 1 << slotBits
	slotMask      = slotsPerLevel - 1

	// defaultLevels covers 2^48 ticks (8,900 years at 1 ms) before a timer
	// needs the overflow list.
	defaultLevels = 8
	// maxLevels keeps every level shift below 64 bits.
	maxLevels = 10
)

// ErrResolution is returned by Config.Validate for a negative resolution or
// one coarser than MaxResolution.
var ErrResolution = errors.New("wheel: resolution must be between 0 and 10ms")

// Config configures a Wheel.
type Config struct {
	// Resolution is the length of one tick: deadlines are rounded up to a
	// multiple of it. Zero means DefaultResolution; at most MaxResolution.
	Resolution time.Duration
	// Start is the wheel's initial time, normally the current time. Timers
	// due at or before it fire on the first Advance. Zero means the Unix
	// epoch, which works but makes the first Advance jump decades.
	Start time.Time
}

// Validate reports whether c is usable, wrapping ErrResolution if not.
func (c Config) Validate() error {
	if c.Resolution < 0 || c.Resolution > MaxResolution {
		return fmt.Errorf("%w: got %v", ErrResolution, c.Resolution)
	}
	return nil
}

// Handle identifies one timer added to a Wheel, for Remove. It is a small
// comparable value (storage index and generation). The zero Handle is never
// valid, and a Handle goes stale once its timer fires or is removed.
type Handle struct {
	idx uint32
	gen uint32
}

// Wheel is a hierarchical timing wheel: a set of (id, deadline) timers that
// fires them in deadline order as Advance moves its time forward.
//
// A Wheel has no goroutines and no clock: time only moves when the caller
// calls Advance. It is not safe for concurrent use; Driver wraps one with a
// goroutine, a lock and a Clock.
type Wheel struct {
	res    int64  // nanoseconds per tick
	levels int    // levels before the overflow list
	now    uint64 // biased tick up to which everything has been processed
	count  int    // pending timers
	dead   int    // tombstones: cancelled timers whose cells are still in a list
	ovMin  uint64 // lower bound of the overflow list's ticks
	occ    [maxLevels]uint64

	// lists are the wheel's slots (slot s of level l at l*slotsPerLevel+s),
	// then these two.
	lists    []deque
	overflow uint32 // timers beyond the top level's range
	ready    uint32 // timers already due, fired by the next Advance

	// The sweep walks the lists, dropping tombstones, while there are too
	// many of them (see sweep).
	sweepList  uint32 // list being swept
	sweepLeft  uint32 // cells of it left to look at, from the cursor on
	sweepC     uint32 // cursor: chunk and offset of the next cell to look at
	sweepO     uint32
	sweepSlack int // tombstones always allowed, on top of count/4
	sweepWait  int // Removes over the limit until the next sweep

	s     store
	batch []entry // the timers fireReady is firing
}

// entry is a timer waiting in fireReady's batch.
type entry struct {
	due int64
	id  uint64
	idx uint32
}

const (
	// defaultSweepSlack is the number of tombstones a wheel may hold
	// beyond a quarter of its pending timers before Remove starts sweeping.
	defaultSweepSlack = 1024
	// While there are too many tombstones, every sweepEvery-th Remove
	// sweeps sweepBudget cells (or lists skipped): sweeping in bursts lets
	// the Removes in between overlap their cache misses.
	sweepEvery  = 8
	sweepBudget = 32 * sweepEvery
)

// New returns an empty Wheel. It panics if cfg.Validate fails, since that is
// a programming error.
func New(cfg Config) *Wheel {
	return newWheel(cfg, defaultLevels)
}

func newWheel(cfg Config, levels int) *Wheel {
	if err := cfg.Validate(); err != nil {
		panic(err)
	}
	if levels < 1 || levels > maxLevels {
		panic("wheel: bad level count")
	}
	res := cfg.Resolution
	if res == 0 {
		res = DefaultResolution
	}
	w := &Wheel{res: int64(res), levels: levels, ovMin: math.MaxUint64, sweepSlack: defaultSweepSlack}
	start := int64(0)
	if !cfg.Start.IsZero() {
		start = toNanos(cfg.Start)
	}
	w.now = bias(floorTick(start, w.res))
	n := uint32(levels * slotsPerLevel)
	w.overflow, w.ready = n, n+1
	w.lists = make([]deque, n+2)
	w.s.init()
	return w
}

// Len returns the number of pending timers.
func (w *Wheel) Len() int { return w.count }

// Add schedules id to fire at due and returns a Handle for Remove. It is
// O(1). The deadline is rounded up to the next tick; a due at or before the
// wheel's current time fires on the next Advance. Ids need not be unique.
func (w *Wheel) Add(id uint64, due time.Time) Handle {
	n := toNanos(due)
	i, gen := w.s.newIndex()
	w.count++
	w.place(n, id, i, w.dueTick(n))
	return Handle{idx: i, gen: gen}
}

// Remove cancels the timer h refers to, in O(1). It returns false, and
// changes nothing, if h is stale (its timer already fired or was removed,
// even if the storage has since been reused) or zero. h must come from this
// Wheel's Add.
//
// The timer's storage is reclaimed later, when Advance or a sweep reaches
// it: Remove only marks it cancelled, and while the cancelled timers
// outnumber a quarter of the pending ones (plus a constant), it also
// sweeps a bounded number of cells of the wheel's lists to reclaim them.
func (w *Wheel) Remove(h Handle) bool {
	if h.idx == 0 || h.idx >= w.s.hiIdx || !w.s.cancel(h.idx, h.gen) {
		return false
	}
	w.count--
	w.dead++
	if w.dead > w.count>>2+w.sweepSlack {
		if w.sweepWait--; w.sweepWait <= 0 {
			w.sweepWait = sweepEvery
			w.sweep()
		}
	}
	return true
}

// Advance moves the wheel's time to now and calls fire for every timer whose
// rounded-up deadline is at or before now, each exactly once, in
// non-decreasing deadline order up to the resolution (timers that were
// already past due when added come first, sorted by deadline). A timer never
// fires while now is before its deadline. If now is earlier than a previous
// Advance, nothing happens: the wheel's time never goes back.
//
// fire may call Add and Remove on this wheel but not Advance. Timers it adds
// that are already due fire on the next Advance.
func (w *Wheel) Advance(now time.Time, fire func(id uint64, due time.Time)) {
	target := bias(floorTick(toNanos(now), w.res))
	if target < w.now {
		return
	}
	w.fireReady(fire)
	for {
		if lvl, slot, ok := w.lowest(); ok {
			start := w.slotStart(lvl, slot)
			if start > target {
				break
			}
			w.now = start
			list := uint32(lvl*slotsPerLevel + slot)
			w.drain(list, fire)
			if w.lists[list].n == 0 {
				w.occ[lvl] &^= 1 << slot
			}
			continue
		}
		if w.lists[w.overflow].n == 0 {
			break
		}
		start := w.ovMin &^ (1<<(slotBits*w.levels) - 1)
		if start > target {
			break
		}
		// The wheel is empty and time reaches the top-level rotation of the
		// earliest overflow timer: re-place the whole overflow list.
		w.now = start
		w.ovMin = math.MaxUint64
		w.drain(w.overflow, fire)
	}
	w.now = target
}

// Next returns the earliest time at which Advance may have something to
// do, and false if the wheel has no pending timer. The time is never later
// than the earliest rounded-up deadline, but it may be earlier: the start
// of a coarse slot whose timers must move to finer levels, or of a slot
// that only holds cancelled timers, or a time in the past if timers are
// already due. It finds the slot with per-level occupancy bitmaps, without
// scanning empty slots.
func (w *Wheel) Next() (time.Time, bool) {
	if w.count == 0 {
		return time.Time{}, false
	}
	var t uint64
	switch lvl, slot, ok := w.lowest(); {
	case w.lists[w.ready].n != 0:
		t = w.now
	case ok:
		t = w.slotStart(lvl, slot)
	case w.lists[w.overflow].n != 0:
		t = w.ovMin &^ (1<<(slotBits*w.levels) - 1)
	default:
		// Only while Advance is firing, with the pending timers in its
		// batch or in the overflow list it is placing again.
		t = w.now
	}
	return tickTime(unbias(t), w.res), true
}

// dueTick converts a deadline to the biased tick at which it fires.
func (w *Wheel) dueTick(n int64) uint64 { return bias(ceilTick(n, w.res)) }

// place appends a timer, due at biased tick t, to the list where it
// belongs relative to w.now. A timer whose tick differs from w.now first in
// bits [6l, 6l+6) goes to level l, in the slot given by those bits of t.
func (w *Wheel) place(due int64, id uint64, idx uint32, t uint64) {
	list := w.ready
	if t > w.now {
		lvl := uint(bits.Len64(t^w.now)-1) / slotBits
		if lvl < uint(w.levels) && lvl < maxLevels { // (the second lets w.occ[lvl] go unchecked)
			slot := t >> (slotBits * lvl) & slotMask
			list = uint32(lvl*slotsPerLevel) + uint32(slot)
			w.occ[lvl] |= 1 << slot
		} else {
			list = w.overflow
			w.ovMin = min(w.ovMin, t)
		}
	}
	w.s.push(&w.lists[list], due, id, idx)
}

// drain empties list at the current time: timers due now fire, the rest are
// placed again (on finer levels, for a cascading slot) and tombstones are
// dropped. The list is detached first and its chunks are walked in place:
// fire may Add (to other lists: a timer due after now never belongs in the
// slot that starts now) and Remove (which only clears a bit, checked just
// before a timer fires).
func (w *Wheel) drain(list uint32, fire func(uint64, time.Time)) {
	d := w.lists[list]
	w.lists[list] = deque{}
	if list == w.sweepList {
		w.sweepLeft = 0 // its cursor is gone
	}
	c, off, n := d.head, d.headOff, d.n
	for n != 0 {
		ch := w.s.chunk(c)
		next := *w.s.next(c)
		if next != 0 {
			prefetchChunk(w.s.chunk(next))
		}
		end := min(chunkCap, off+n)
		n -= end - off
		for ; off < end; off++ {
			o := off & (chunkCap - 1)
			i := ch.idx[o]
			if !w.s.pending(i) {
				w.s.freeIndex(i)
				w.dead--
				continue
			}
			due := ch.due[o]
			if t := w.dueTick(due); t > w.now {
				w.place(due, ch.id[o], i, t)
				continue
			}
			w.s.take(i)
			w.count--
			fire(ch.id[o], time.Unix(0, due))
		}
		w.s.releaseChunk(c)
		c, off = next, 0
	}
}

// fireReady fires the timers that were already due when added, sorted by
// deadline. fire may Remove the ones it has not reached: their pending bit
// is checked just before each fires.
func (w *Wheel) fireReady(fire func(uint64, time.Time)) {
	d := &w.lists[w.ready]
	if d.n == 0 {
		return
	}
	if w.sweepList == w.ready {
		w.sweepLeft = 0 // its cursor is gone
	}
	b := w.batch[:0]
	for d.n != 0 {
		ch, o := w.s.front(d)
		b = append(b, entry{ch.due[o], ch.id[o], ch.idx[o]})
		w.s.dropFront(d)
	}
	if !slices.IsSortedFunc(b, cmpEntry) {
		slices.SortStableFunc(b, cmpEntry)
	}
	w.batch = b
	for _, e := range b {
		if !w.s.pending(e.idx) {
			w.s.freeIndex(e.idx)
			w.dead--
			continue
		}
		w.s.take(e.idx)
		w.count--
		fire(e.id, time.Unix(0, e.due))
	}
	w.batch = b[:0]
	if cap(b) > 4096 {
		w.batch = nil // let a burst's buffer be collected
	}
}

func cmpEntry(x, y entry) int { return cmp.Compare(x.due, y.due) }

// sweep reclaims tombstones, looking at up to sweepBudget cells (an empty
// list counts as one). It goes round the lists with a cursor; a
// tombstone's cell is filled with the list's first cell, which the cursor
// has passed, so pending timers' cells are only read and a list shrinks
// from the front. Remove calls it every sweepEvery Removes while the
// tombstones exceed a quarter of the pending timers plus sweepSlack, so a
// wheel that is not advanced (or whose cancelled timers sit in coarse
// slots for hours) still holds few: every tombstone is reached within one
// round of the lists, and a round of C cells in L lists takes
// (C+L)*sweepEvery/sweepBudget Removes, during which as many tombstones
// may appear: about 0.3 per pending timer at most, all told.
func (w *Wheel) sweep() {
	s := &w.s
	for budget := uint32(sweepBudget); budget > 0; {
		if w.sweepLeft == 0 {
			w.sweepList++
			if w.sweepList == uint32(len(w.lists)) {
				w.sweepList = 0
			}
			d := &w.lists[w.sweepList]
			w.sweepLeft, w.sweepC, w.sweepO = d.n, d.head, d.headOff
			budget--
			continue
		}
		d := &w.lists[w.sweepList]
		c, o := w.sweepC, w.sweepO
		k := min(w.sweepLeft, budget)
		w.sweepLeft -= k
		budget -= k
		live := s.live
		for k > 0 {
			ch, next := s.chunk(c), *s.next(c)
			if o == 0 && next != 0 {
				// All of it: filling holes writes due and id too.
				prefetchChunk(s.chunk(next))
			}
			m := min(k, chunkCap-o)
			k -= m
			// The tombstones among cells [o, o+m), as a bit mask: the
			// loads of their pending bits do not wait for one another.
			var dead uint32
			for j := range m {
				i := ch.idx[(o+j)&(chunkCap-1)]
				dead |= uint32(^live[i>>livePageBits][i>>6&(livePageWords-1)]>>(i&63)&1) << j
			}
			for ; dead != 0; dead &= dead - 1 {
				p := o + uint32(bits.TrailingZeros32(dead))
				x := p & (chunkCap - 1)
				s.freeIndex(ch.idx[x])
				w.dead--
				// The list's first cell, passed by the cursor, fills the
				// hole. (It was pending then; if it has been cancelled
				// since, it waits for the next round. If it is the
				// tombstone itself, this just drops it.)
				hc, h := s.front(d)
				ch.due[x], ch.id[x], ch.idx[x] = hc.due[h], hc.id[h], hc.idx[h]
				if h == 0 {
					if hn := *s.next(d.head); hn != 0 {
						prefetchChunk(s.chunk(hn))
					}
				}
				s.dropFront(d)
			}
			o += m
			if o == chunkCap {
				// next was read before dropFront could release c.
				c, o = next, 0
			}
		}
		w.sweepC, w.sweepO = c, o
		if d.n == 0 {
			switch l := w.sweepList; {
			case l < w.overflow:
				w.occ[l/slotsPerLevel] &^= 1 << (l % slotsPerLevel)
			case l == w.overflow:
				w.ovMin = math.MaxUint64
			}
		}
	}
}

// lowest returns the first occupied slot of the finest non-empty level: the
// earliest slot in the wheel, since a level only holds timers later than
// every slot of the levels below it.
func (w *Wheel) lowest() (lvl, slot int, ok bool) {
	for l := 0; l < w.levels; l++ {
		if o := w.occ[l]; o != 0 {
			return l, bits.TrailingZeros64(o), true
		}
	}
	return 0, 0, false
}

// slotStart is the first tick of slot s of level l in the current rotation.
func (w *Wheel) slotStart(l, s int) uint64 {
	return w.now&^(1<<(slotBits*(l+1))-1) | uint64(s)<<(slotBits*l)
}
