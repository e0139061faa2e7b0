// Package benchkit holds the measuring helpers of the load tools
// (cmd/ax-bench): load runs over clients and over raw keep-alive HTTP
// connections, percentiles, paced sleeps, reading every instance of a
// task back, waiting for a timer to fire, and a process's memory and a
// directory's disk use.
package benchkit

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ax-scheduler/ax/client"
	"github.com/ax-scheduler/ax/internal/localcluster"
	"github.com/ax-scheduler/ax/model"
)

// Percentiles returns the p50, p99 and max of ds, rounded to ms.
func Percentiles(ds []time.Duration) (p50, p99, mx time.Duration) {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	at := func(p float64) time.Duration { return s[min(len(s)-1, int(p*float64(len(s))))].Round(time.Millisecond) }
	return at(0.5), at(0.99), s[len(s)-1].Round(time.Millisecond)
}

// ParseCounts parses a comma-separated list of positive numbers, the
// value of flag name.
func ParseCounts(name, s string) ([]int, error) {
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

// Sleep waits d or until ctx ends.
func Sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// EachInstance calls fn with every instance f selects, read consistently
// page after page, until fn returns false.
func EachInstance(ctx context.Context, cl *client.Client, f model.InstanceFilter, fn func(*model.Instance) bool) error {
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

// PercentileOf sorts late and returns its percentile function (p in
// [0, 1]; 0 for no values).
func PercentileOf(late []time.Duration) func(p float64) time.Duration {
	sort.Slice(late, func(i, j int) bool { return late[i] < late[j] })
	return func(p float64) time.Duration {
		if len(late) == 0 {
			return 0
		}
		return late[min(len(late)-1, int(p*float64(len(late))))]
	}
}

// NextFired waits until the first of the submitted timers due after
// kill has fired and answers its firedAt after kill. Every timer due while
// there was no leader fires as soon as the new leader has loaded its
// wheel, so this is when the new leader's timers fire again (unless it
// was ready before that timer was due, at most the timers' spacing after
// the kill).
func NextFired(ctx context.Context, cl *client.Client, timers []model.Submitted, kill time.Time) (time.Duration, error) {
	next := -1
	for i, s := range timers {
		if s.ScheduledAt.After(kill) {
			next = i
			break
		}
	}
	if next < 0 {
		return 0, fmt.Errorf("every timer was due before the kill (their submission took longer than they were spread over)")
	}
	var d time.Duration
	err := localcluster.WaitFor(ctx, 60*time.Second, func() error {
		in, err := cl.GetInstance(ctx, timers[next].ID)
		if err != nil {
			return err
		}
		if in.FiredAt.IsZero() {
			return fmt.Errorf("timer %s due %s after the kill is %s", in.ID, in.ScheduledAt.Sub(kill).Round(time.Millisecond), in.State)
		}
		d = in.FiredAt.Sub(kill)
		return nil
	})
	return d, err
}

// Every calls fn every d until the returned stop is called (and has
// waited for a call under way).
func Every(d time.Duration, fn func()) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(d)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				fn()
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}
