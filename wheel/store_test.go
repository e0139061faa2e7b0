package wheel

import (
	"math/rand"
	"slices"
	"testing"
)

// contents walks d's chunks and returns the timer ids in order.
func contents(s *store, d *deque) []uint64 {
	var ids []uint64
	c, off := d.head, d.headOff
	for range d.n {
		if off == chunkCap {
			c, off = *s.next(c), 0
		}
		ids = append(ids, s.chunk(c).id[off])
		off++
	}
	return ids
}

// TestStore_Deque checks push, front and dropFront across chunk boundaries against
// a slice, with chunks shared between lists through the free list.
func TestStore_Deque(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	var s store
	s.init()
	ds := make([]deque, 3)
	models := make([][]uint64, len(ds))
	next := uint64(1)
	for op := range 20000 {
		k := r.Intn(len(ds))
		d, m := &ds[k], models[k]
		if r.Intn(10) < 5 || len(m) == 0 {
			s.push(d, int64(next)*7, next, uint32(next))
			m = append(m, next)
			next++
		} else {
			ch, o := s.front(d)
			if id := ch.id[o]; id != m[0] || ch.due[o] != int64(id)*7 || ch.idx[o] != uint32(id) {
				t.Fatalf("op %d: front = (%d, %d, %d), want id %d", op, ch.due[o], id, ch.idx[o], m[0])
			}
			s.dropFront(d)
			m = m[1:]
		}
		models[k] = m
		if got := contents(&s, d); !slices.Equal(got, m) {
			t.Fatalf("op %d: list %d holds %v, want %v", op, k, got, m)
		}
	}
}

// TestStore_Indices checks the life of timer indices: a cancelled index
// stays in use (by its tombstone) until freed, a freed one is reused with a
// new generation, and cancel only accepts the current generation of a
// pending index.
func TestStore_Indices(t *testing.T) {
	r := rand.New(rand.NewSource(2))
	var s store
	s.init()
	type idxState struct {
		gen     uint32
		pending bool // false: cancelled, waiting for freeIndex
	}
	inUse := map[uint32]*idxState{}
	stale := map[[2]uint32]bool{} // (index, generation) pairs no longer valid
	for op := range 200000 {
		switch p := r.Intn(10); {
		case p < 4 || len(inUse) == 0:
			i, gen := s.newIndex()
			if i == 0 || inUse[i] != nil {
				t.Fatalf("op %d: newIndex returned %d, in use", op, i)
			}
			if stale[[2]uint32{i, gen}] {
				t.Fatalf("op %d: newIndex reused generation %d of %d", op, gen, i)
			}
			inUse[i] = &idxState{gen, true}
		default:
			// Pick some index in use (map order is random enough).
			var i uint32
			var st *idxState
			for i, st = range inUse {
				break
			}
			switch {
			case st.pending && p < 7: // cancel
				if !s.cancel(i, st.gen) {
					t.Fatalf("op %d: cancel(%d, %d) = false", op, i, st.gen)
				}
				if s.cancel(i, st.gen) {
					t.Fatalf("op %d: second cancel(%d) = true", op, i)
				}
				st.pending = false
			case st.pending: // fire
				s.take(i)
				stale[[2]uint32{i, st.gen}] = true
				delete(inUse, i)
			default: // reclaim a tombstone
				s.freeIndex(i)
				stale[[2]uint32{i, st.gen}] = true
				delete(inUse, i)
			}
		}
		if op%1000 == 0 {
			for k := range stale {
				if s.cancel(k[0], k[1]) {
					t.Fatalf("op %d: stale cancel(%d, %d) = true", op, k[0], k[1])
				}
			}
			for i, st := range inUse {
				if s.pending(i) != st.pending {
					t.Fatalf("op %d: pending(%d) = %v, want %v", op, i, s.pending(i), st.pending)
				}
			}
		}
	}
}
