package wheel

import (
	"testing"
	"time"
)

func BenchmarkExpireOneShot(b *testing.B) {
	for _, n := range []int{1_000_000, 10_000_000} {
		d := dataFor(n)
		b.Run(map[int]string{1_000_000: "1M", 10_000_000: "10M"}[n], func(b *testing.B) {
			hs := make([]Handle, n)
			var w *Wheel
			rounds(b, n, false, func() {
				w = New(Config{Start: benchStart})
				wheelFill(w, d.dues, hs)
			}, func() {
				c := 0
				w.Advance(benchStart.Add(2*time.Hour), func(uint64, time.Time) { c++ })
				if c != n {
					panic("x")
				}
			}, func() { w = nil })
		})
	}
}
