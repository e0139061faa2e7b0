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
			c, off = s.meta(c).next, 0
		}
		ids = append(ids, s.chunk(c)[off].id())
		off++
	}
	return ids
}

// TestStore_Deque checks push, popFront and removeAt (which moves the last
// cell into the hole) across chunk boundaries against a slice, and that
// every handle record keeps pointing at its timer's cell.
func TestStore_Deque(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	var s store
	s.init()
	ds := make([]deque, 3)
	models := make([][]uint64, len(ds))
	hidx := map[uint64]uint32{}
	next := uint64(1)
	for op := range 20000 {
		k := r.Intn(len(ds))
		d, m := &ds[k], models[k]
		switch p := r.Intn(10); {
		case p < 5 || len(m) == 0:
			i, _ := s.newHandle()
			s.push(d, uint32(k), int64(next)*7, next, i)
			hidx[next] = i
			m = append(m, next)
			next++
		case p < 7:
			due, id, i := s.popFront(d)
			if id != m[0] || due != int64(id)*7 || i != hidx[id] {
				t.Fatalf("op %d: popFront = (%d, %d, %d), want id %d", op, due, id, i, m[0])
			}
			s.releaseHandle(i)
			delete(hidx, id)
			m = m[1:]
		default:
			j := r.Intn(len(m))
			id := m[j]
			pos := s.handle(hidx[id]).pos
			if got := s.cell(pos).id(); got != id {
				t.Fatalf("op %d: handle of %d points at %d", op, id, got)
			}
			if got := s.chunkList[pos>>chunkBits]; got != uint16(k) {
				t.Fatalf("op %d: chunk of %d in list %d, want %d", op, id, got, k)
			}
			s.removeAt(d, pos)
			s.releaseHandle(hidx[id])
			delete(hidx, id)
			m[j] = m[len(m)-1]
			m = m[:len(m)-1]
		}
		models[k] = m
		if got := contents(&s, d); !slices.Equal(got, m) {
			t.Fatalf("op %d: list %d holds %v, want %v", op, k, got, m)
		}
	}
	for id, i := range hidx {
		if got := s.cell(s.handle(i).pos).id(); got != id {
			t.Errorf("handle of %d points at %d", id, got)
		}
	}
}
