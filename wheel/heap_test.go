package wheel

import "container/heap"

// timerHeap is the baseline the benchmarks compare against: the usual
// container/heap priority queue of pointers to 4-field items, whose index
// field makes cancellation O(log n).
type timerHeap []*heapItem

type heapItem struct {
	due   int64
	id    uint64
	seq   uint64 // insertion order, to break ties like the wheel does
	index int    // position in the heap; -1 once popped or removed
}

var _ heap.Interface = (*timerHeap)(nil)

func (h timerHeap) Len() int { return len(h) }

func (h timerHeap) Less(i, j int) bool {
	if h[i].due != h[j].due {
		return h[i].due < h[j].due
	}
	return h[i].seq < h[j].seq
}

func (h timerHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index = i
	h[j].index = j
}

func (h *timerHeap) Push(x any) {
	it := x.(*heapItem)
	it.index = len(*h)
	*h = append(*h, it)
}

func (h *timerHeap) Pop() any {
	old := *h
	n := len(old) - 1
	it := old[n]
	old[n] = nil
	it.index = -1
	*h = old[:n]
	return it
}

// remove cancels it and reports whether it was still pending.
func (h *timerHeap) remove(it *heapItem) bool {
	if it.index < 0 {
		return false
	}
	heap.Remove(h, it.index)
	return true
}
