package clock

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/model/member"
)

// What a node does with its clock's steps (step.go): logs them, wakes
// the scheduler (MonitorConfig.OnStep), reports them in /healthz and to
// the watchdog's clock_jump rule (MemberJumps).

// stepCheck is how often the step watcher reads the time base, so that a
// step is seen within it even on a node nothing else reads it on.
const stepCheck = time.Second

// Run runs the monitor until ctx ends: it measures every interval, and
// watches the time base for steps (watchSteps).
func (m *Monitor) Run(ctx context.Context) {
	steps := make(chan struct{})
	go func() { defer close(steps); m.watchSteps(ctx) }()
	m.measureLoop(ctx)
	<-steps
}

// watchSteps reads the time base every stepCheck and acts on its changes
// until ctx ends: it logs them, has the clock monitor compare clocks at
// once after a step (the samples taken before no longer count) and wakes
// the scheduler, whose time may have jumped.
func (m *Monitor) watchSteps(ctx context.Context) {
	if m.clock.events == nil {
		return // a clock whose steps cannot be seen
	}
	log := m.log
	t := time.NewTicker(stepCheck)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			m.clock.Now()
		case ev := <-m.clock.events:
			logStep(log, ev, m.maxSkew)
			if ev.kind == stepSeen {
				m.measureSoon()
				m.noteStep()
			}
			if m.onStep != nil {
				m.onStep()
			}
		}
	}
}

// Stepped is signalled when a member's clock stepped (this node's
// included): the watchdog evaluates at once.
func (m *Monitor) Stepped() <-chan struct{} { return m.stepped }

// Problem is why /healthz answers 503 for this node's clock, or "", given
// hwm, the latest leader time the state machine applied (Unix ms):
// on a node with no other voter, its time base is behind the latest
// leader time the state machine applied (which it stamped itself) by more
// than twice -max-clock-skew, which it never is unless its clock went back
// further than it could hold (or before it restarted): it fires nothing
// until its clock passes the times already fired. With other voters the
// clock monitor keeps each node to the cluster's clock; a cluster behind
// the mark was led by a node whose clock was ahead, and its stamper says
// so.
func (m *Monitor) Problem(hwm int64) string {
	if hwm == 0 || !m.solo.Load() {
		return ""
	}
	now := m.clock.Now()
	behind := time.UnixMilli(hwm).Sub(now)
	if behind <= 2*m.maxSkew {
		return ""
	}
	return fmt.Sprintf("this node's time %s is %s behind the latest leader time applied, %s (its clock went back: see clock.jump); "+
		"it fires nothing until its clock is past the times already fired",
		now.UTC().Format(model.TimeLayout), behind.Round(time.Millisecond), time.UnixMilli(hwm).UTC().Format(model.TimeLayout))
}

// MemberJumps returns the latest clock step each member reports (nil:
// none), this node's included, and the members that have not answered
// the monitor recently, whose steps it cannot tell.
func (m *Monitor) MemberJumps() (jumps map[string]*member.ClockJump, unknown map[string]bool) {
	jumps = map[string]*member.ClockJump{m.self: m.clock.Jump()}
	unknown = map[string]bool{}
	now := m.raw.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	for id := range m.listed {
		if last, ok := m.answered[id]; ok && now.Sub(last) <= m.staleAfter() {
			jumps[id] = m.jumps[id]
		} else {
			unknown[id] = true
		}
	}
	return jumps, unknown
}

var (
	clockStepsDesc = prometheus.NewDesc("ax_clock_steps_total",
		"Steps of this node's wall clock against its monotonic clock larger than -max-clock-skew, by direction.", []string{"direction"}, nil)
	clockHeldDesc = prometheus.NewDesc("ax_clock_step_held_seconds",
		"How much this node's time base adds to its wall clock for a step: positive, a step back being absorbed; negative, a forward step held until the members' clocks are compared.", nil, nil)
)

// collectSteps sends the step metrics of c.
func collectSteps(c *Base, ch chan<- prometheus.Metric) {
	fwd, back, held := c.stepCounts()
	ch <- prometheus.MustNewConstMetric(clockStepsDesc, prometheus.CounterValue, float64(fwd), "forward")
	ch <- prometheus.MustNewConstMetric(clockStepsDesc, prometheus.CounterValue, float64(back), "backward")
	ch <- prometheus.MustNewConstMetric(clockHeldDesc, prometheus.GaugeValue, held.Seconds())
}

// stepCounts returns the steps seen each way and the hold in force.
func (c *Base) stepCounts() (forward, backward uint64, held time.Duration) {
	if c.read == nil {
		return 0, 0, 0
	}
	_, _, hold, _ := c.observe()
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.st.forward, c.st.backward, hold
}
