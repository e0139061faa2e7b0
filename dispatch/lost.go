package dispatch

import (
	"sort"
	"time"
)

// LostExecutor is an executor the dispatcher counts as lost: it held
// leases and has not been heard from (polled or heartbeat) for a lease.
type LostExecutor struct {
	Name string
	// LastSeen is when it was last heard from in this term (zero: not
	// in this term).
	LastSeen time.Time
	// Running is how many attempts are still leased to it; Expired how
	// many of its leases this term expired while it was silent.
	Running, Expired int
}

// noteLost is told, with d.mu held, that the leases of proposed expired:
// those of executors silent for a lease count them as lost.
func (d *Dispatcher) noteLost(proposed []lease, now time.Time) {
	for _, l := range proposed {
		if d.silentFor(l.executor, now) > d.cfg.Lease {
			d.lost[l.executor]++
		}
	}
}

// silentFor is how long an executor has not been heard from in this
// term (since the term started if never). Called with d.mu held.
func (d *Dispatcher) silentFor(name string, now time.Time) time.Duration {
	last := d.started
	if e := d.seen[name]; e != nil {
		last = e.LastSeen.Time
	}
	return now.Sub(last)
}

// LostExecutors returns the executors with attempts leased to them that
// have been silent for more than a lease, and those whose leases expired
// while they were silent and that have not polled or heartbeat since,
// by name. It costs the running attempts.
func (d *Dispatcher) LostExecutors() []LostExecutor {
	now := d.cfg.Now()
	d.mu.Lock()
	defer d.mu.Unlock()
	byName := map[string]*LostExecutor{}
	get := func(name string) *LostExecutor {
		le := byName[name]
		if le == nil {
			le = &LostExecutor{Name: name}
			if e := d.seen[name]; e != nil {
				le.LastSeen = e.LastSeen.Time
			}
			byName[name] = le
		}
		return le
	}
	for _, l := range d.leases {
		if l.executor != "" && d.silentFor(l.executor, now) > d.cfg.Lease {
			get(l.executor).Running++
		}
	}
	for name, n := range d.lost {
		get(name).Expired = n
	}
	out := make([]LostExecutor, 0, len(byName))
	for _, le := range byName {
		out = append(out, *le)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// HeardFrom reports whether an executor has polled or heartbeat in this
// term.
func (d *Dispatcher) HeardFrom(name string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.seen[name] != nil
}
