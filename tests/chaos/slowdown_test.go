package chaos

import (
	"context"
	"crypto/sha256"
	"slices"
	"sync"
	"time"
)

// The timing checks (firing and dispatch resume) hold a history to
// bounds measured on a machine that gives ax its CPU. Under CPU hogs
// (stress-ng, the starved scenarios, or a busy CI host) everything ax
// does, an election included, runs slower by about the share of CPU it
// gets; so the suite measures that slowdown while a scenario runs and
// scales those two bounds by it. The safety checks (overlap, duplicates,
// charged attempts, attempt order, lost writes) are never scaled.

// workUnit is a fixed piece of CPU work: 1 MiB hashed 8 times, about
// 4 ms on an idle core of the CI machine.
func workUnit() {
	var buf [1 << 10]byte
	h := sha256.New()
	for range 8 << 10 {
		h.Write(buf[:])
	}
	h.Sum(nil)
}

// timeWork returns how long one workUnit takes now, in wall time.
func timeWork() time.Duration {
	start := time.Now()
	workUnit()
	return time.Since(start)
}

// baseWork is the least a workUnit took over a few tries: the idle
// speed, or near it even on a busy machine (a 4 ms piece often runs in
// one scheduler slice).
var baseWork = sync.OnceValue(func() time.Duration {
	least := timeWork()
	for range 24 {
		least = min(least, timeWork())
	}
	return least
})

// maxSlowdown caps the scaling: a machine more than this much slower
// fails the timing checks, as it should be told.
const maxSlowdown = 5.0

// slowdownMeter samples how much slower than baseWork a workUnit runs,
// every 250 ms while it runs.
type slowdownMeter struct {
	mu      sync.Mutex
	samples []float64
	done    chan struct{}
}

// startSlowdown starts a meter; stop it with stop.
func startSlowdown(ctx context.Context) *slowdownMeter {
	base := baseWork()
	m := &slowdownMeter{done: make(chan struct{})}
	go func() {
		defer close(m.done)
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			r := float64(timeWork()) / float64(base)
			m.mu.Lock()
			m.samples = append(m.samples, r)
			m.mu.Unlock()
		}
	}()
	return m
}

// factor is the slowdown the bounds are scaled by: the median of the
// samples (a resume is a chain of many short steps, so what it meets is
// the typical slowdown, not the worst moment), between 1 and
// maxSlowdown (1 with no samples).
func (m *slowdownMeter) factor() float64 {
	m.mu.Lock()
	s := slices.Clone(m.samples)
	m.mu.Unlock()
	return slowdownFactor(s)
}

// slowdownFactor is factor's rule over samples.
func slowdownFactor(samples []float64) float64 {
	if len(samples) == 0 {
		return 1
	}
	slices.Sort(samples)
	median := samples[(len(samples)-1)/2]
	return min(max(median, 1), maxSlowdown)
}

// scaled returns b with its bounds multiplied by f.
func (b Bounds) scaled(f float64) Bounds {
	return Bounds{Firing: time.Duration(float64(b.Firing) * f), Dispatch: time.Duration(float64(b.Dispatch) * f)}
}
