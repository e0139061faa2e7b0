package clock

import (
	"context"
	"sort"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
)

// Guard is a per-term leader service: a leader whose clock is off
// from the cluster's by more than -max-clock-skew hands leadership to the
// member whose clock is nearest the cluster's. It checks when the term
// starts, before the other leader services (Monitor.Guard), and once
// per interval while the term lasts. A leader that finds no member to
// hand over to stays, keeping to the cluster's time (Base), so it
// does not fire early either.
type Guard struct {
	mon      *Monitor
	transfer func(ctx context.Context, id string) error
	log      hclog.Logger

	mu     sync.Mutex
	warned time.Time // last "no member to hand over to" (raw clock)
}

func newGuard(mon *Monitor, transfer func(ctx context.Context, id string) error, log hclog.Logger) *Guard {
	return &Guard{mon: mon, transfer: transfer, log: log.Named("clock")}
}

// Guard runs at the start of a term, after the barrier: it decides
// on this node's clock (measuring at once if the monitor has no recent
// verdict) and, if the clock is off, hands leadership over and waits (at
// most 5s) for the term to end, so that no leader service starts on a
// clock that is off. It returns the guard that keeps checking for the
// rest of the term (a term service). The guard hands leadership over with
// transfer.
func (m *Monitor) Guard(ctx context.Context, transfer func(ctx context.Context, id string) error) *Guard {
	g := newGuard(m, transfer, m.log)
	v := m.current()
	if !v.usable(m.raw.Now(), m.staleAfter()) {
		v = m.Measure(ctx)
	}
	if g.check(ctx, v) {
		select {
		case <-ctx.Done():
		case <-time.After(5 * time.Second):
		}
	}
	return g
}

// Run checks this node's clock once per interval until ctx ends.
func (g *Guard) Run(ctx context.Context) error {
	t := time.NewTicker(g.mon.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			g.check(ctx, g.mon.current())
		}
	}
}

// check hands leadership over if v finds this node's clock off, trying
// the members guardDecision proposes in turn, and reports whether it did.
func (g *Guard) check(ctx context.Context, v view) bool {
	off, targets := guardDecision(v, g.mon.maxSkew, g.mon.recent(), g.mon.raw.Now())
	if !off {
		return false
	}
	if len(targets) == 0 {
		g.mu.Lock()
		now := g.mon.raw.Now()
		quiet := !g.warned.IsZero() && now.Sub(g.warned) < time.Minute
		if !quiet {
			g.warned = now
		}
		g.mu.Unlock()
		if !quiet {
			g.log.Warn("this leader's clock is off from the cluster's and no member with a good clock can take over; leading on the cluster's time",
				"offset", v.self, "max_clock_skew", g.mon.maxSkew)
		}
		return false
	}
	for _, target := range targets {
		g.log.Warn("this leader's clock is off from the cluster's; handing leadership over", "offset", v.self,
			"max_clock_skew", g.mon.maxSkew, "to", target)
		// Not under ctx: a transfer that succeeds ends the term, which
		// would cancel the wait for its own answer.
		tctx, cancel := context.WithTimeout(context.Background(), transferTimeout)
		err := g.transfer(tctx, target)
		cancel()
		if err == nil {
			g.mon.handedOver()
			g.log.Info("handed leadership over: this node's clock is off", "to", target, "offset", v.self)
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		g.log.Warn("handing leadership over failed; leading on the cluster's time meanwhile", "to", target, "error", err)
	}
	return false
}

// transferTimeout bounds one leadership transfer (Raft gives up on one
// after an election timeout, 1s by default).
const transferTimeout = 2 * time.Second

// guardDecision says whether v finds this node's clock off and, if so,
// the voters to hand leadership to, best first: those that answered
// within recent of now (a member that stopped answering may be gone) and
// whose clock is within the bound, the most recently heard first.
func guardDecision(v view, maxSkew, recent time.Duration, now time.Time) (off bool, targets []string) {
	if !v.quorum || abs(v.self) <= maxSkew {
		return false, nil
	}
	var ok []memberClock
	for _, m := range v.members {
		if !m.self && m.voter && m.age+now.Sub(v.at) <= recent && abs(m.offset) <= maxSkew {
			ok = append(ok, m)
		}
	}
	sort.SliceStable(ok, func(i, j int) bool { return ok[i].age < ok[j].age })
	for _, m := range ok {
		targets = append(targets, m.id)
	}
	return true, targets
}
