// Package wheel is a hierarchical timing wheel for the scheduler's leader:
// millions of pending (id, deadline) timers with O(1) insert and cancel,
// fired in deadline order.
//
// # Pure core and driver
//
// Wheel has no goroutines and no clock. Add and Remove change the set of
// timers; Advance(now, fire) moves the wheel's time to now and calls fire
// for every timer that came due; Next reports when Advance next has work.
// Driver owns the goroutine: it reads an injected Clock, sleeps until Next
// (an idle wheel arms no timer at all), is woken by an Add that brings an
// earlier deadline, and hands each Advance's expired timers to its callback
// as one batch, so the caller can put them in one Raft entry. RealClock is
// the system clock; FakeClock is moved by tests, here and in other packages.
// A Clock that is also a DeadlineClock (FakeClock is) gets timers armed for
// the next deadline itself rather than for the wait until it, so that
// moving the clock while the Driver goes to sleep does not make it
// oversleep.
//
// # Ticks, levels and slots
//
// Times are int64 Unix nanoseconds (saturated to the years 1678-2262) and,
// inside the wheel, ticks of Config.Resolution (1 ms by default, at most
// 10 ms). There are 8 levels of 64 slots. A slot of level l spans 64^l
// ticks, so a level spans 64^(l+1): at 1 ms, level 0 slots are 1 ms wide
// (a 64 ms level), level 1 slots 64 ms, level 2 4.1 s, level 3 4.4 min,
// level 4 4.7 h, level 5 12 days, level 6 2.2 years and level 7 140 years,
// 8,900 years in all. A timer is placed by comparing its tick t with the
// wheel's current tick now: if they first differ in bits [6l, 6l+6), the
// timer goes to level l, slot (t >> 6l) & 63. When time reaches the start of
// a level-l slot (l > 0), the slot cascades: its timers are placed again,
// now on finer levels. A timer thus moves down at most 7 times and fires
// from level 0. Timers beyond the top level (in practice only with
// resolutions finer than about 65µs) wait in an overflow list that is re-placed when the wheel is
// empty and time reaches the top-level rotation of its earliest timer.
//
// # Never early
//
// A deadline is rounded up to the next tick boundary and Advance's time down
// to the previous one, and a timer fires when the first reaches the second:
// a timer never fires while now is before its deadline, and fires at the
// first Advance at or after its rounded-up deadline. Timers added with a
// deadline at or before the wheel's time go to a ready list that the next
// Advance fires first, sorted by deadline. The order of timers within one
// tick is unspecified.
//
// # Occupancy bitmaps
//
// Each level keeps a 64-bit bitmap of its non-empty slots. The earliest
// pending slot is the lowest set bit of the finest non-empty level, found
// with a few TrailingZeros instructions, so Next and Advance jump straight
// to it instead of stepping through empty ticks. Next may return the start
// of a coarse slot, earlier than any deadline in it, because that slot must
// cascade first, or of a slot that only holds cancelled timers (see below);
// it is never later than the earliest rounded-up deadline, and it reports
// an empty wheel once no timer is pending.
//
// # Storage and lazy cancellation
//
// Nothing per timer holds a Go pointer, so the garbage collector does not
// scan the timers. Each list (slot, overflow, ready) is a deque of chunks
// of 32 cells; a cell is a timer's deadline, id and index, 20 bytes, kept
// in three arrays per chunk. Cascading and firing stream through chunks,
// prefetching the next one while working through the current one, rather
// than chase one pointer per timer; and nothing records where a timer's
// cell is, so moving cells writes nothing at random addresses. That is what
// makes expiry fast at millions of timers.
//
// Per index the wheel keeps a 32-bit generation and a pending bit; the
// Handle returned by Add is the index and its generation. Remove checks
// both and clears the bit, in O(1), touching one random cache line besides
// the bitmap (a bit per timer, which mostly stays in cache); the timer's
// cell stays in its list as a tombstone. Advance checks the bit of every
// cell it fires or cascades, so a cancelled timer never fires, and drops
// tombstones as it meets them. An index is not reused while its tombstone
// is in a list; after that it goes on a free stack, and reusing it
// increments its generation, so a stale Handle never cancels a different
// timer (until an index is reused 2^32 times).
//
// Tombstones in coarse slots may wait hours for Advance, so Remove also
// sweeps: while the tombstones exceed a quarter of the pending timers plus
// 1024, every 8th Remove looks at 256 more cells (a few microseconds),
// going round the lists with a cursor and filling each tombstone's cell
// with its list's first cell. Even if cancelled timers never come due,
// the tombstones stay below about 0.3 per pending timer, beyond the first
// 1024.
//
// That makes 24 bytes per pending timer (20 for the cell, 4 for the
// generation, and a bit), about 7 more in the worst case for tombstones,
// and the partly filled chunks at the ends of each list. Chunks,
// generations, bits and the free stack live in fixed-size pages allocated
// on demand, never copied on growth. Memory is reused but not returned
// after a peak.
package wheel
