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
	count  int
	ovMin  uint64 // lower bound of the overflow list's ticks
	occ    [maxLevels]uint64

	// lists are the wheel's slots (slot s of level l at l*slotsPerLevel+s),
	// then these three.
	lists    []deque
	overflow uint32 // timers beyond the top level's range
	ready    uint32 // timers already due, fired by the next Advance
	scratch  uint32 // the overflow list while it is being re-placed

	s     store
	batch []entry // the timers fireReady is firing
}

// entry is a timer waiting in fireReady's batch; hidx is 0 once removed.
type entry struct {
	due  int64
	id   uint64
	hidx uint32
}

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
	w := &Wheel{res: int64(res), levels: levels, ovMin: math.MaxUint64}
	start := int64(0)
	if !cfg.Start.IsZero() {
		start = toNanos(cfg.Start)
	}
	w.now = bias(floorTick(start, w.res))
	n := uint32(levels * slotsPerLevel) // + 3 lists must fit in uint16
	w.overflow, w.ready, w.scratch = n, n+1, n+2
	w.lists = make([]deque, n+3)
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
	i, gen := w.s.newHandle()
	w.count++
	w.place(n, id, i, w.dueTick(n))
	return Handle{idx: i, gen: gen}
}

// Remove cancels the timer h refers to, in O(1). It returns false, and
// changes nothing, if h is stale (its timer already fired or was removed,
// even if the storage has since been reused) or zero. h must come from this
// Wheel's Add.
func (w *Wheel) Remove(h Handle) bool {
	if h.idx == 0 || h.idx >= w.s.hiHandle {
		return false
	}
	r := w.s.handle(h.idx)
	if r.gen != h.gen || r.pos&freeBit != 0 {
		return false
	}
	if r.pos&batchBit != 0 {
		w.batch[r.pos&^batchBit].hidx = 0
		w.s.releaseHandle(h.idx)
		w.count--
		return true
	}
	list := uint32(w.s.chunkList[r.pos>>chunkBits])
	d := &w.lists[list]
	w.s.removeAt(d, r.pos)
	if d.n == 0 && list < w.overflow {
		w.occ[list/slotsPerLevel] &^= 1 << (list % slotsPerLevel)
	}
	w.s.releaseHandle(h.idx)
	w.count--
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
			w.occ[lvl] &^= 1 << slot
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
		w.s.moveAll(&w.lists[w.overflow], &w.lists[w.scratch], w.scratch)
		w.drain(w.scratch, fire)
	}
	w.now = target
}

// Next returns the earliest time at which Advance may have something to
// do, and false if the wheel is empty. The time is never later than the
// earliest rounded-up deadline, but it may be earlier: the start of a
// coarse slot whose timers must move to finer levels, or a time in the
// past if timers are already due. It finds the slot with per-level
// occupancy bitmaps, without scanning empty slots.
func (w *Wheel) Next() (time.Time, bool) {
	var t uint64
	switch lvl, slot, ok := w.lowest(); {
	case w.lists[w.ready].n != 0:
		t = w.now
	case ok:
		t = w.slotStart(lvl, slot)
	case w.lists[w.overflow].n != 0:
		t = w.ovMin &^ (1<<(slotBits*w.levels) - 1)
	default:
		return time.Time{}, false
	}
	return tickTime(unbias(t), w.res), true
}

// dueTick converts a deadline to the biased tick at which it fires.
func (w *Wheel) dueTick(n int64) uint64 { return bias(ceilTick(n, w.res)) }

// place appends a timer, due at biased tick t, to the list where it belongs
// relative to w.now. A timer whose tick differs from w.now first in bits
// [6l, 6l+6) goes to level l, in the slot given by those bits of t.
func (w *Wheel) place(due int64, id uint64, hidx uint32, t uint64) {
	var list uint32
	switch {
	case t <= w.now:
		list = w.ready
	default:
		lvl := (bits.Len64(t^w.now) - 1) / slotBits
		if lvl >= w.levels {
			list = w.overflow
			w.ovMin = min(w.ovMin, t)
			break
		}
		slot := t >> (slotBits * lvl) & slotMask
		list = uint32(lvl*slotsPerLevel) + uint32(slot)
		w.occ[lvl] |= 1 << slot
	}
	w.s.push(&w.lists[list], list, due, id, hidx)
}

// drain empties list at the current time: timers due now fire, the rest are
// placed again (on finer levels, for a cascading slot). Cells are popped one
// at a time so that fire may Add and Remove.
func (w *Wheel) drain(list uint32, fire func(uint64, time.Time)) {
	d := &w.lists[list]
	for d.n != 0 {
		due, id, hidx := w.s.popFront(d)
		if t := w.dueTick(due); t > w.now {
			w.place(due, id, hidx, t)
			continue
		}
		w.s.releaseHandle(hidx)
		w.count--
		fire(id, time.Unix(0, due))
	}
}

// fireReady fires the timers that were already due when added, sorted by
// deadline. Their handles point into the batch meanwhile, so that fire can
// still Remove the ones it has not reached.
func (w *Wheel) fireReady(fire func(uint64, time.Time)) {
	d := &w.lists[w.ready]
	if d.n == 0 {
		return
	}
	b := w.batch[:0]
	for d.n != 0 {
		due, id, hidx := w.s.popFront(d)
		b = append(b, entry{due, id, hidx})
	}
	if !slices.IsSortedFunc(b, cmpEntry) {
		slices.SortStableFunc(b, cmpEntry)
	}
	for k, e := range b {
		w.s.handle(e.hidx).pos = batchBit | uint32(k)
	}
	w.batch = b
	for k := range b {
		e := b[k]
		if e.hidx == 0 {
			continue // removed by fire
		}
		w.s.releaseHandle(e.hidx)
		w.count--
		fire(e.id, time.Unix(0, e.due))
	}
	w.batch = b[:0]
	if cap(b) > 4096 {
		w.batch = nil // let a burst's buffer be collected
	}
}

func cmpEntry(x, y entry) int { return cmp.Compare(x.due, y.due) }

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
