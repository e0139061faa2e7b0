package main

import (
	"context"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ax-scheduler/ax/client"
	"github.com/ax-scheduler/ax/model"
)

// benchTask writes a high-volume event task: no executor runs it in most
// scenarios, so its fired instances stay READY (a concurrency limit of 1
// would queue them as BLOCKED).
func benchTask(ctx context.Context, cl *client.Client, name string) error {
	_, err := cl.PutTask(ctx, &model.Task{Name: name, Trigger: model.Trigger{Type: model.TriggerEvent},
		Action: model.Action{Type: model.ActionShell, Command: "true"}, Policy: model.Policy{MaxConcurrency: 1_000_000}})
	return err
}

// loadResult is what a load run measured.
type loadResult struct {
	n             int
	elapsed       time.Duration
	p50, p99, max time.Duration
}

// rate is the operations per second.
func (r *loadResult) rate() float64 { return float64(r.n) / r.elapsed.Seconds() }

// runLoad runs op n times from the given number of goroutines; the first
// error stops the run.
func runLoad(ctx context.Context, clients, n int, op func() error) (*loadResult, error) {
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
	return summarize(lat, time.Since(start)), nil
}

// summarize sorts the latencies of a finished load run into its result.
func summarize(lat []time.Duration, el time.Duration) *loadResult {
	if len(lat) == 0 {
		return &loadResult{elapsed: el}
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	pct := func(p float64) time.Duration {
		return lat[min(len(lat)-1, int(p*float64(len(lat))))].Round(10 * time.Microsecond)
	}
	return &loadResult{n: len(lat), elapsed: el, p50: pct(0.5), p99: pct(0.99), max: lat[len(lat)-1].Round(10 * time.Microsecond)}
}
