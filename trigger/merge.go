package trigger

import (
	"container/heap"
	"time"
)

// Fire is one fire time of the schedule at Index in the list given to
// Merge.
type Fire struct {
	Index int
	Time  time.Time
}

// Merge returns the fire times of every schedule in [from, to], in time
// order (ties by index), at most limit of them; truncated reports that more
// fall in the range. It is a k-way merge: a min-heap holds each schedule's
// next fire time, so a schedule is iterated only as far as the fires that
// are returned (plus one), never to the end of the range. A nil schedule
// never fires.
func Merge(scheds []Schedule, from, to time.Time, limit int) (fires []Fire, truncated bool) {
	return MergeCapped(scheds, nil, from, to, limit)
}

// MergeCapped is Merge with at most caps[i] fire times of schedule i
// (what a trigger's maxRuns leaves of it, RunsLeft); a negative cap, or
// caps shorter than scheds, is no cap.
func MergeCapped(scheds []Schedule, caps []int, from, to time.Time, limit int) (fires []Fire, truncated bool) {
	if limit <= 0 || to.Before(from) {
		return nil, false
	}
	// Next is strictly after its argument: start just before from so
	// that a fire at from counts.
	start := from.Add(-time.Nanosecond)
	h := make(fireHeap, 0, len(scheds))
	for i, s := range scheds {
		if s == nil || (i < len(caps) && caps[i] == 0) {
			continue
		}
		if t := s.Next(start); !t.IsZero() && !t.After(to) && t.After(start) {
			h = append(h, Fire{Index: i, Time: t})
		}
	}
	heap.Init(&h)
	taken := make([]int, len(caps))
	for h.Len() > 0 {
		if len(fires) == limit {
			return fires, true
		}
		f := h[0]
		fires = append(fires, f)
		capped := false
		if f.Index < len(caps) && caps[f.Index] >= 0 {
			taken[f.Index]++
			capped = taken[f.Index] >= caps[f.Index]
		}
		if t := scheds[f.Index].Next(f.Time); !capped && !t.IsZero() && !t.After(to) && t.After(f.Time) {
			h[0].Time = t
			heap.Fix(&h, 0)
		} else {
			heap.Pop(&h)
		}
	}
	return fires, false
}

// fireHeap is a min-heap of fires by time, then index.
type fireHeap []Fire

func (h fireHeap) Len() int { return len(h) }
func (h fireHeap) Less(i, j int) bool {
	if !h[i].Time.Equal(h[j].Time) {
		return h[i].Time.Before(h[j].Time)
	}
	return h[i].Index < h[j].Index
}
func (h fireHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *fireHeap) Push(x any)   { *h = append(*h, x.(Fire)) }
func (h *fireHeap) Pop() any {
	old := *h
	f := old[len(old)-1]
	*h = old[:len(old)-1]
	return f
}
