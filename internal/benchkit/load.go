package benchkit

import (
	"context"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// LoadResult is what a load run measured.
type LoadResult struct {
	N             int
	Elapsed       time.Duration
	P50, P99, Max time.Duration
}

// Rate is the operations per second.
func (r *LoadResult) Rate() float64 { return float64(r.N) / r.Elapsed.Seconds() }

// RunLoad runs op n times from the given number of goroutines; the first
// error stops the run.
func RunLoad(ctx context.Context, clients, n int, op func() error) (*LoadResult, error) {
	var next atomic.Int64
	lat := make([]time.Duration, n)
	var wg sync.WaitGroup
	var firstErr error
	var mu sync.Mutex
	start := time.Now()
	for w := 0; w < clients; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n || ctx.Err() != nil {
					return
				}
				t0 := time.Now()
				if err := op(); err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
					return
				}
				lat[i] = time.Since(t0)
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return Summarize(lat, time.Since(start)), nil
}

// Summarize sorts the latencies of a finished load run into its result.
func Summarize(lat []time.Duration, el time.Duration) *LoadResult {
	if len(lat) == 0 {
		return &LoadResult{Elapsed: el}
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	pct := func(p float64) time.Duration {
		return lat[min(len(lat)-1, int(p*float64(len(lat))))].Round(10 * time.Microsecond)
	}
	return &LoadResult{N: len(lat), Elapsed: el, P50: pct(0.5), P99: pct(0.99), Max: lat[len(lat)-1].Round(10 * time.Microsecond)}
}
