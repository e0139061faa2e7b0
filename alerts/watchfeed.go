package alerts

import (
	"sync"
	"time"

	"github.com/ax-scheduler/ax/fsm"
	"github.com/ax-scheduler/ax/model"
)

// watchFeed is what the watchdog learns from the state machine's
// observer, on every node (so a follower that becomes leader knows what
// it applied): the newest schedule fire, the tasks that fired since the
// last evaluation with their recent fire times, and the maxQueued
// overflows. It is memory only: after a restart it starts empty, which
// can only delay an alert, never raise a false one (cluster_silence
// counts from the feed's start).
type watchFeed struct {
	mu        sync.Mutex
	window    time.Duration       // how long fire times are kept (-anomaly-window)
	start     int64               // Unix ms: when the feed started
	lastFire  int64               // Unix ms: the newest schedule fire's commit time
	fires     map[string][]int64  // task -> ScheduledAt of its schedule fires within window, oldest first
	fired     map[string]bool     // tasks that fired since the last take
	queueFull map[string]overflow // task -> its latest maxQueued overflow
}

// overflow is a task's latest maxQueued overflow.
type overflow struct {
	at int64 // Unix ms
	id uint64
	n  int // overflows seen while its alert's quiet period ran
}

// maxFeedFires bounds the fire times kept per task.
const maxFeedFires = 4096

func newWatchFeed(now time.Time, window time.Duration) *watchFeed {
	return &watchFeed{window: window, start: now.UnixMilli(), fires: map[string][]int64{}, fired: map[string]bool{},
		queueFull: map[string]overflow{}}
}

// isSchedule reports whether an instance source is a schedule's fire.
func isSchedule(source string) bool {
	return source == model.SourceCron || source == model.SourceInterval || source == model.SourceOnce
}

// observe takes one instance change. It is called for every change the
// state machine applies and must stay cheap.
func (f *watchFeed) observe(c *fsm.InstanceChange) {
	if f == nil || c.From != "" && c.Reason == "" || c.Parent != 0 {
		return // a shard is not a fire
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if c.Reason == "queue_full" {
		o := f.queueFull[c.Task]
		f.queueFull[c.Task] = overflow{at: max(o.at, c.At), id: c.ID, n: o.n + 1}
	}
	if c.From != "" || !isSchedule(c.Source) {
		return
	}
	f.lastFire = max(f.lastFire, c.At)
	f.fired[c.Task] = true
	l := append(f.fires[c.Task], c.ScheduledAt)
	cut := c.At - f.window.Milliseconds()
	i := 0
	for i < len(l) && (l[i] <= cut || len(l)-i > maxFeedFires) {
		i++
	}
	f.fires[c.Task] = l[i:]
}

// take returns the tasks that fired since the last take.
func (f *watchFeed) take() map[string]bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := f.fired
	f.fired = map[string]bool{}
	return out
}

// firesIn counts a task's schedule fires scheduled within (from, to].
func (f *watchFeed) firesIn(task string, from, to int64) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, at := range f.fires[task] {
		if at > from && at <= to {
			n++
		}
	}
	return n
}

// last returns the newest schedule fire, or the feed's start if none.
func (f *watchFeed) last() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return max(f.lastFire, f.start)
}

// overflows returns the tasks whose latest overflow is within quiet of
// now, and forgets the older ones.
func (f *watchFeed) overflows(now time.Time, quiet time.Duration) map[string]overflow {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]overflow{}
	for task, o := range f.queueFull {
		if now.Sub(time.UnixMilli(o.at)) > quiet {
			delete(f.queueFull, task)
			continue
		}
		out[task] = o
	}
	return out
}

// forgetTask drops a deleted task's fire times.
func (f *watchFeed) forgetTask(task string) {
	f.mu.Lock()
	delete(f.fires, task)
	f.mu.Unlock()
}
