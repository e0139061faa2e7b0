package wheel

import (
	"container/heap"
	"fmt"
	"math/rand"
	"runtime"
	"sync"
	"testing"
	"time"
)

// The benchmarks compare the wheel with a container/heap priority queue and
// with runtime timers (time.AfterFunc) at 1M and 10M pending timers. Each
// benchmark iteration is one round over all n timers (fill an empty
// structure; cancel every timer of a full one in random order; expire every
// timer of a full one), with the setup of the round untimed, and ns/op,
// B/op and allocs/op are overridden to be per timer. Cancels take the
// handles from a slice in random timer order, so that the caller's own
// lookup is not measured. B/timer is the live heap the structure holds once
// filled, measured with runtime.MemStats after a GC.
//
// Deadlines are uniformly random in [1m, 61m) from the start, at 1ms
// resolution (runtime timers are never due during a benchmark). The 10M
// cases are skipped with -short.

var benchSizes = []struct {
	name string
	n    int
}{
	{"1M", 1_000_000},
	{"10M", 10_000_000},
}

type benchData struct {
	dues []int64 // deadline offsets from the start, ns
	perm []int32 // random order for cancelling
}

var (
	benchMu    sync.Mutex
	benchCache = map[int]*benchData{}
)

func dataFor(n int) *benchData {
	benchMu.Lock()
	defer benchMu.Unlock()
	if d, ok := benchCache[n]; ok {
		return d
	}
	r := rand.New(rand.NewSource(int64(n)))
	d := &benchData{dues: make([]int64, n), perm: make([]int32, n)}
	for i := range d.dues {
		d.dues[i] = int64(time.Minute) + r.Int63n(int64(time.Hour))
	}
	for i, p := range r.Perm(n) {
		d.perm[i] = int32(p)
	}
	benchCache[n] = d
	return d
}

func forSizes(b *testing.B, f func(b *testing.B, n int, d *benchData)) {
	for _, s := range benchSizes {
		b.Run(s.name, func(b *testing.B) {
			if testing.Short() && s.n > 1_000_000 {
				b.Skip("10M timers skipped with -short")
			}
			f(b, s.n, dataFor(s.n))
		})
	}
}

func liveHeap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// rounds runs setup (untimed), round (timed, n operations) and teardown
// (untimed) once per iteration, after an untimed warm-up round, and reports
// ns/op, B/op and allocs/op per operation (overriding the framework's
// per-iteration values). If measure is set, it also reports B/timer: the
// live heap the warm-up round added, per timer. (The warm-up round starts
// from a clean heap: later rounds could find the runtime still holding the
// previous round's stopped timers.)
func rounds(b *testing.B, n int, measure bool, setup, round, teardown func()) {
	// The warm-up round also means that every timed round finds the heap
	// grown and its pages faulted in, as in a long-running process.
	setup()
	var base, live uint64
	if measure {
		base = liveHeap()
	}
	round()
	if measure {
		live = liveHeap() - base
	}
	teardown()

	var (
		m0, m1              runtime.MemStats
		allocBytes, mallocs uint64
	)
	for b.Loop() {
		b.StopTimer()
		setup()
		runtime.ReadMemStats(&m0)
		b.StartTimer()
		round()
		b.StopTimer()
		runtime.ReadMemStats(&m1)
		allocBytes += m1.TotalAlloc - m0.TotalAlloc
		mallocs += m1.Mallocs - m0.Mallocs
		teardown()
		b.StartTimer()
	}
	ops := float64(b.N) * float64(n)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/ops, "ns/op")
	b.ReportMetric(float64(allocBytes)/ops, "B/op")
	b.ReportMetric(float64(mallocs)/ops, "allocs/op")
	if measure { // after b.Loop, which deletes metrics reported before it
		b.ReportMetric(float64(live)/float64(n), "B/timer")
	}
}

var benchStart = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

// Wheel rounds.

func wheelFill(w *Wheel, dues []int64, hs []Handle) {
	base := benchStart.UnixNano()
	for i, d := range dues {
		hs[i] = w.Add(uint64(i), time.Unix(0, base+d))
	}
}

func wheelCancel(w *Wheel, hs []Handle) {
	for _, h := range hs {
		if !w.Remove(h) {
			panic("wheel: Remove failed")
		}
	}
}

func wheelExpire(w *Wheel, want int) {
	n := 0
	fire := func(uint64, time.Time) { n++ }
	for {
		t, ok := w.Next()
		if !ok {
			break
		}
		w.Advance(t, fire)
	}
	if n != want {
		panic(fmt.Sprintf("wheel: fired %d, want %d", n, want))
	}
}

// Heap rounds.

func heapFill(h *timerHeap, dues []int64, its []*heapItem) {
	base := benchStart.UnixNano()
	for i, d := range dues {
		it := &heapItem{due: base + d, id: uint64(i), seq: uint64(i)}
		heap.Push(h, it)
		its[i] = it
	}
}

func heapCancel(h *timerHeap, its []*heapItem) {
	for _, it := range its {
		if !h.remove(it) {
			panic("heap: remove failed")
		}
	}
}

func heapExpire(h *timerHeap, want int) {
	n := 0
	for h.Len() > 0 {
		now := (*h)[0].due // like the wheel: wake at the next deadline
		for h.Len() > 0 && (*h)[0].due <= now {
			heap.Pop(h)
			n++
		}
	}
	if n != want {
		panic(fmt.Sprintf("heap: fired %d, want %d", n, want))
	}
}

// time.AfterFunc rounds.

func afterFill(dues []int64, ts []*time.Timer, fired func(uint64)) {
	for i, d := range dues {
		id := uint64(i)
		ts[i] = time.AfterFunc(time.Duration(d), func() { fired(id) })
	}
}

func afterCancel(ts []*time.Timer) {
	for _, t := range ts {
		if !t.Stop() {
			panic("AfterFunc: Stop failed")
		}
	}
}

// permute reorders xs by perm, so that cancelling walks the handles
// sequentially while hitting the timers in random order.
func permute[T any](xs []T, perm []int32) {
	tmp := make([]T, len(xs))
	for k, i := range perm {
		tmp[k] = xs[i]
	}
	copy(xs, tmp)
}

func BenchmarkInsert(b *testing.B) {
	forSizes(b, func(b *testing.B, n int, d *benchData) {
		b.Run("wheel", func(b *testing.B) {
			hs := make([]Handle, n)
			var w *Wheel
			rounds(b, n, true, func() {}, func() {
				w = New(Config{Start: benchStart})
				wheelFill(w, d.dues, hs)
			}, func() { w = nil })
		})
		b.Run("heap", func(b *testing.B) {
			its := make([]*heapItem, n)
			var h *timerHeap
			rounds(b, n, true, func() {}, func() {
				h = new(timerHeap)
				heapFill(h, d.dues, its)
			}, func() { h = nil; clear(its) })
		})
		b.Run("afterfunc", func(b *testing.B) {
			ts := make([]*time.Timer, n)
			fired := func(uint64) { panic("AfterFunc timer fired during the benchmark") }
			rounds(b, n, true, func() {}, func() {
				afterFill(d.dues, ts, fired)
			}, func() {
				for _, t := range ts {
					t.Stop()
				}
				clear(ts)
			})
		})
	})
}

func BenchmarkCancel(b *testing.B) {
	forSizes(b, func(b *testing.B, n int, d *benchData) {
		b.Run("wheel", func(b *testing.B) {
			hs := make([]Handle, n)
			var w *Wheel
			rounds(b, n, false, func() {
				w = New(Config{Start: benchStart})
				wheelFill(w, d.dues, hs)
				permute(hs, d.perm)
			}, func() { wheelCancel(w, hs) }, func() { w = nil })
		})
		b.Run("heap", func(b *testing.B) {
			its := make([]*heapItem, n)
			var h *timerHeap
			rounds(b, n, false, func() {
				h = new(timerHeap)
				heapFill(h, d.dues, its)
				permute(its, d.perm)
			}, func() { heapCancel(h, its) }, func() { h = nil; clear(its) })
		})
		b.Run("afterfunc", func(b *testing.B) {
			ts := make([]*time.Timer, n)
			fired := func(uint64) { panic("AfterFunc timer fired during the benchmark") }
			rounds(b, n, false, func() {
				afterFill(d.dues, ts, fired)
				permute(ts, d.perm)
			}, func() { afterCancel(ts) }, func() { clear(ts) })
		})
	})
}

// BenchmarkExpire fires every timer of a full structure, waking at each next
// deadline as a driver would. time.AfterFunc is left out: its expiry runs
// on the wall clock, one goroutine per timer, and cannot be driven faster.
func BenchmarkExpire(b *testing.B) {
	forSizes(b, func(b *testing.B, n int, d *benchData) {
		b.Run("wheel", func(b *testing.B) {
			hs := make([]Handle, n)
			var w *Wheel
			rounds(b, n, false, func() {
				w = New(Config{Start: benchStart})
				wheelFill(w, d.dues, hs)
			}, func() { wheelExpire(w, n) }, func() { w = nil })
		})
		b.Run("heap", func(b *testing.B) {
			its := make([]*heapItem, n)
			var h *timerHeap
			rounds(b, n, false, func() {
				h = new(timerHeap)
				heapFill(h, d.dues, its)
			}, func() { heapExpire(h, n) }, func() { h = nil; clear(its) })
		})
	})
}
