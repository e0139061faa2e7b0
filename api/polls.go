package api

import "sync"

// maxPollsPerExecutor caps the long-polls one executor name may hold open
// on a node at once: an executor needs one (a few while it restarts), and
// each parked poll holds a connection and a goroutine.
const maxPollsPerExecutor = 4

// pollCounter counts the open long-polls per executor name.
type pollCounter struct {
	mu sync.Mutex
	n  map[string]int
}

// acquire takes a poll slot for executor; ok is false when it has none
// left. release gives the slot back.
func (p *pollCounter) acquire(executor string) (release func(), ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.n == nil {
		p.n = map[string]int{}
	}
	if p.n[executor] >= maxPollsPerExecutor {
		return nil, false
	}
	p.n[executor]++
	return func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.n[executor]--; p.n[executor] <= 0 {
			delete(p.n, executor)
		}
	}, true
}
