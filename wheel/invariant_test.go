package wheel

import (
	"fmt"
	"math/bits"
)

// invariantError reports the first broken invariant of w's bookkeeping, or
// nil. It walks every list and chunk, so tests call it between operations:
//
//   - every index below hiIdx is either held by exactly one cell or on the
//     free stack, exactly once;
//   - a cell's index is pending for exactly w.count cells (whose timers are
//     pending) and not for w.dead cells (tombstones), and no free index is
//     pending;
//   - every cell is in the list its tick belongs to relative to w.now, and
//     the occupancy bitmaps mark exactly the non-empty slots;
//   - every chunk is in exactly one list or on the free list.
func invariantError(w *Wheel) error {
	s := &w.s
	held := make(map[uint32]bool)
	chunks := make(map[uint32]bool)
	pending, dead := 0, 0
	for l := range w.lists {
		d := &w.lists[l]
		if d.n == 0 {
			if *d != (deque{}) {
				return fmt.Errorf("list %d: empty but %+v", l, *d)
			}
		} else if d.headOff >= chunkCap || d.tailOff == 0 || d.tailOff > chunkCap {
			return fmt.Errorf("list %d: bad offsets %+v", l, *d)
		}
		if l < int(w.overflow) {
			lvl, slot := l/slotsPerLevel, l%slotsPerLevel
			if occ := w.occ[lvl]>>slot&1 != 0; occ != (d.n != 0) {
				return fmt.Errorf("list %d: occupancy bit %v with %d cells", l, occ, d.n)
			}
		}
		c, off := d.head, d.headOff
		for k := uint32(0); k < d.n; k++ {
			if off == chunkCap {
				c, off = *s.next(c), 0
			}
			if off == 0 || k == 0 {
				if c == 0 || c >= s.hiChunk || chunks[c] {
					return fmt.Errorf("list %d: chunk %d missing, out of range or shared", l, c)
				}
				chunks[c] = true
			}
			ch := s.chunk(c)
			i, due := ch.idx[off], ch.due[off]
			off++
			if i == 0 || i >= s.hiIdx || held[i] {
				return fmt.Errorf("list %d: index %d zero, out of range or held twice", l, i)
			}
			held[i] = true
			if s.pending(i) {
				pending++
			} else {
				dead++
			}
			t := w.dueTick(due)
			switch {
			case uint32(l) == w.ready:
				if t > w.now {
					return fmt.Errorf("ready list: tick %d after now %d", t, w.now)
				}
			case uint32(l) == w.overflow:
				if t < w.ovMin {
					return fmt.Errorf("overflow list: tick %d before its bound %d", t, w.ovMin)
				}
			default:
				lvl := (bits.Len64(t^w.now) - 1) / slotBits
				slot := int(t >> (slotBits * lvl) & slotMask)
				if t <= w.now || lvl*slotsPerLevel+slot != l {
					return fmt.Errorf("list %d: tick %d belongs in level %d slot %d at now %d", l, t, lvl, slot, w.now)
				}
			}
		}
		if d.n != 0 && (c != d.tail || off != d.tailOff || *s.next(c) != 0) {
			return fmt.Errorf("list %d: cells end at chunk %d+%d, tail %d+%d", l, c, off, d.tail, d.tailOff)
		}
	}
	for c := s.freeChunk; c != 0; c = *s.next(c) {
		if chunks[c] {
			return fmt.Errorf("free chunk %d in use or free twice", c)
		}
		chunks[c] = true
	}
	if len(chunks) != int(s.hiChunk)-1 {
		return fmt.Errorf("%d chunks accounted for, %d handed out", len(chunks), s.hiChunk-1)
	}
	for k := range s.nFree {
		i := s.free[k>>stackPageBits][k&stackPageMask]
		if i == 0 || i >= s.hiIdx || held[i] || s.pending(i) {
			return fmt.Errorf("free index %d zero, out of range, held or pending", i)
		}
		held[i] = true
	}
	if len(held) != int(s.hiIdx)-1 {
		return fmt.Errorf("%d indices accounted for, %d handed out", len(held), s.hiIdx-1)
	}
	if pending != w.count || dead != w.dead {
		return fmt.Errorf("cells: %d pending, %d tombstones; want count %d, dead %d", pending, dead, w.count, w.dead)
	}
	return nil
}
