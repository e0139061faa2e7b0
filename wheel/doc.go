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
// cascade first; it is never later than the earliest rounded-up deadline.
//
// # Storage and generation counters
//
// Nothing per timer holds a Go pointer, so the garbage collector does not
// scan the timers. Each list (slot, overflow, ready) is a deque of chunks of
// 32 cells of 20 bytes (deadline, id, handle index); cascading and firing
// stream through chunks rather than chase one pointer per timer, which is
// what makes expiry fast at millions of timers. A handle record of 8 bytes
// per timer holds its cell position and a 32-bit generation; the Handle
// returned by Add is the record's index and generation. Remove checks the
// generation, moves the list's last cell into the hole and updates that
// cell's record, in O(1). Firing or removing a timer frees its record,
// and reusing the record increments the generation, so a stale Handle
// never cancels a different timer (until a record is reused 2^32 times).
// Chunks and records live in fixed-size pages allocated on demand: about
// 28.5 bytes per timer, never copied on growth. Memory is reused but not
// returned after a peak.
package wheel
