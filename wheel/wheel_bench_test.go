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
// benchmark iteration is one round of n operations, with the setup of the
// round untimed, and ns/op, B/op and allocs/op are overridden to be per
// operation:
//
//   - Insert fills an empty structure with n timers. B/timer is the live
//     heap the structure then holds, measured with runtime.MemStats after a
//     GC.
//   - Cancel cancels n random timers of 2n, so that every cancel hits a
//     random pending timer while at least n are pending (cancelling all of
//     them would measure an ever smaller, eventually cache-resident
//     structure).
//   - Churn keeps n timers pending: each operation cancels a random pending
//     timer and adds a new one, as a caller rescheduling timers does, and
//     time does not move. This is where the wheel's lazy cancellation pays
//     for reclaiming what it left behind, and B/timer is the live heap the
//     structure holds after the round, cancelled timers not yet reclaimed
//     included, per pending timer.
//   - Expire fires every timer of a full structure, waking at each next
//     deadline as a driver would.
//
// Cancels take the handles from a slice in random timer order, so that the
// caller's own lookup is not measured. Deadlines are uniformly random in
// [1m, 61m) from the start, at 1ms resolution (runtime timers are never due
// during a benchmark). The 10M cases are skipped with -short.

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

// What rounds reports as B/timer.
const (
	measureNone  = iota
	measureRound // the live heap the round adds
	measureAll   // the live heap after the round, setup included
)

// rounds runs setup (untimed), round (timed, n operations) and teardown
// (untimed) once per iteration, after an untimed warm-up round, and reports
// ns/op, B/op and allocs/op per operation (overriding the framework's
// per-iteration values). Unless measure is measureNone, it also reports
// B/timer: the live heap the warm-up round added, or that its setup and
// round added, per timer. (The warm-up round starts from a clean heap:
// later rounds could find the runtime still holding the previous round's
// stopped timers.)
func rounds(b *testing.B, n int, measure int, setup, round, teardown func()) {
	// The warm-up round also means that every timed round finds the heap
	// grown and its pages faulted in, as in a long-running process.
	var base, live uint64
	if measure == measureAll {
		base = liveHeap()
	}
	setup()
	if measure == measureRound {
		base = liveHeap()
	}
	round()
	if measure != measureNone {
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
	if measure != measureNone { // after b.Loop, which deletes metrics reported before it
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

// pick sets dst[k] to all[victims[k]], so that cancelling walks dst
// sequentially while hitting the timers in random order.
func pick[T any](dst, all []T, victims []int32) {
	for k, i := range victims {
		dst[k] = all[i]
	}
}

func BenchmarkInsert(b *testing.B) {
	forSizes(b, func(b *testing.B, n int, d *benchData) {
		b.Run("wheel", func(b *testing.B) {
			hs := make([]Handle, n)
			var w *Wheel
			rounds(b, n, measureRound, func() {}, func() {
				w = New(Config{Start: benchStart})
				wheelFill(w, d.dues, hs)
			}, func() { w = nil })
		})
		b.Run("heap", func(b *testing.B) {
			its := make([]*heapItem, n)
			var h *timerHeap
			rounds(b, n, measureRound, func() {}, func() {
				h = new(timerHeap)
				heapFill(h, d.dues, its)
			}, func() { h = nil; clear(its) })
		})
		b.Run("afterfunc", func(b *testing.B) {
			ts := make([]*time.Timer, n)
			fired := func(uint64) { panic("AfterFunc timer fired during the benchmark") }
			rounds(b, n, measureRound, func() {}, func() {
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
	forSizes(b, func(b *testing.B, n int, _ *benchData) {
		d := dataFor(2 * n)
		victims := d.perm[:n] // n random timers of 2n
		b.Run("wheel", func(b *testing.B) {
			all, hs := make([]Handle, 2*n), make([]Handle, n)
			var w *Wheel
			rounds(b, n, measureNone, func() {
				w = New(Config{Start: benchStart})
				wheelFill(w, d.dues, all)
				pick(hs, all, victims)
			}, func() { wheelCancel(w, hs) }, func() { w = nil })
		})
		b.Run("heap", func(b *testing.B) {
			all, its := make([]*heapItem, 2*n), make([]*heapItem, n)
			var h *timerHeap
			rounds(b, n, measureNone, func() {
				h = new(timerHeap)
				heapFill(h, d.dues, all)
				pick(its, all, victims)
			}, func() { heapCancel(h, its) }, func() { h = nil; clear(all); clear(its) })
		})
		b.Run("afterfunc", func(b *testing.B) {
			all, ts := make([]*time.Timer, 2*n), make([]*time.Timer, n)
			fired := func(uint64) { panic("AfterFunc timer fired during the benchmark") }
			rounds(b, n, measureNone, func() {
				afterFill(d.dues, all, fired)
				pick(ts, all, victims)
			}, func() { afterCancel(ts) }, func() {
				for _, t := range all {
					t.Stop()
				}
				clear(all)
				clear(ts)
			})
		})
	})
}

// BenchmarkChurn keeps n timers pending while each operation cancels a
// random one and adds a new one; see the top of this file.
func BenchmarkChurn(b *testing.B) {
	forSizes(b, func(b *testing.B, n int, _ *benchData) {
		d := dataFor(2 * n)
		dues, more := d.dues[:n], d.dues[n:] // initial timers, replacements
		order := dataFor(n).perm             // the order in which they are replaced
		base := benchStart.UnixNano()
		b.Run("wheel", func(b *testing.B) {
			all, hs := make([]Handle, n), make([]Handle, n)
			var w *Wheel
			rounds(b, n, measureAll, func() {
				w = New(Config{Start: benchStart})
				wheelFill(w, dues, all)
				pick(hs, all, order)
			}, func() {
				for k, h := range hs {
					if !w.Remove(h) {
						panic("wheel: Remove failed")
					}
					hs[k] = w.Add(uint64(n+k), time.Unix(0, base+more[k]))
				}
			}, func() { w = nil })
		})
		b.Run("heap", func(b *testing.B) {
			all, its := make([]*heapItem, n), make([]*heapItem, n)
			var h *timerHeap
			rounds(b, n, measureAll, func() {
				h = new(timerHeap)
				heapFill(h, dues, all)
				pick(its, all, order)
				clear(all)
			}, func() {
				for k, it := range its {
					if !h.remove(it) {
						panic("heap: remove failed")
					}
					it = &heapItem{due: base + more[k], id: uint64(n + k), seq: uint64(n + k)}
					heap.Push(h, it)
					its[k] = it
				}
			}, func() { h = nil; clear(its) })
		})
		b.Run("afterfunc", func(b *testing.B) {
			all, ts := make([]*time.Timer, n), make([]*time.Timer, n)
			fired := func(uint64) { panic("AfterFunc timer fired during the benchmark") }
			rounds(b, n, measureAll, func() {
				afterFill(dues, all, fired)
				pick(ts, all, order)
				clear(all)
			}, func() {
				for k, t := range ts {
					if !t.Stop() {
						panic("AfterFunc: Stop failed")
					}
					id := uint64(n + k)
					ts[k] = time.AfterFunc(time.Duration(more[k]), func() { fired(id) })
				}
			}, func() {
				for _, t := range ts {
					t.Stop()
				}
				clear(ts)
			})
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
			rounds(b, n, measureNone, func() {
				w = New(Config{Start: benchStart})
				wheelFill(w, d.dues, hs)
			}, func() { wheelExpire(w, n) }, func() { w = nil })
		})
		b.Run("heap", func(b *testing.B) {
			its := make([]*heapItem, n)
			var h *timerHeap
			rounds(b, n, measureNone, func() {
				h = new(timerHeap)
				heapFill(h, d.dues, its)
			}, func() { heapExpire(h, n) }, func() { h = nil; clear(its) })
		})
	})
}
