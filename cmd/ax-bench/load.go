package main

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
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

// percentiles returns the p50, p99 and max of ds, rounded to ms.
func percentiles(ds []time.Duration) (p50, p99, mx time.Duration) {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	at := func(p float64) time.Duration { return s[min(len(s)-1, int(p*float64(len(s))))].Round(time.Millisecond) }
	return at(0.5), at(0.99), s[len(s)-1].Round(time.Millisecond)
}

// parseCounts parses a comma-separated list of positive numbers, the
// value of flag name.
func parseCounts(name, s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || v < 1 {
			return nil, fmt.Errorf("bad %s entry %q: want positive numbers, comma-separated", name, f)
		}
		out = append(out, v)
	}
	return out, nil
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// eachInstance calls fn with every instance f selects, read consistently
// page after page, until fn returns false.
func eachInstance(ctx context.Context, cl *client.Client, f model.InstanceFilter, fn func(*model.Instance) bool) error {
	for {
		page, err := cl.ListInstances(ctx, f)
		if err != nil {
			return err
		}
		for i := range page.Instances {
			if !fn(&page.Instances[i]) {
				return nil
			}
		}
		if page.NextCursor == "" {
			return nil
		}
		f.Cursor = page.NextCursor
	}
}
