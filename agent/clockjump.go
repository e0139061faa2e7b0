package agent

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ax-scheduler/ax/model"
)

// What the agent does with its clock's steps (clockstep.go): logs them,
// wakes the scheduler, reports them in /healthz and to the watchdog's
// clock_jump rule.

// stepCheck is how often the step watcher reads the time base, so that a
// step is seen within it even on a node nothing else reads it on.
const stepCheck = time.Second

// watchSteps reads the time base every stepCheck and acts on its changes
// until ctx ends: it logs them, has the clock monitor compare clocks at
// once after a step (the samples taken before no longer count) and wakes
// the scheduler, whose time may have jumped.
func (a *Agent) watchSteps(ctx context.Context) {
	if a.clock.events == nil {
		return // a clock whose steps cannot be seen
	}
	log := a.log.Named("clock")
	t := time.NewTicker(stepCheck)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			a.clock.Now()
		case ev := <-a.clock.events:
			logStep(log, ev, a.cfg.MaxClockSkew)
			if ev.kind == stepSeen {
				a.clockMon.measureSoon()
				a.clockMon.noteStep()
			}
			if s := a.scheduler(); s != nil {
				s.ClockStepped()
			}
		}
	}
}

// clockStepped is signalled when a member's clock stepped (nil without a
// clock monitor: never).
func (a *Agent) clockStepped() <-chan struct{} {
	if a.clockMon == nil {
		return nil
	}
	return a.clockMon.stepped
}

// clockProblem is why /healthz answers 503 for this node's clock, or "":
// on a node with no other voter, its time base is behind the latest
// leader time the state machine applied (which it stamped itself) by more
// than twice -max-clock-skew, which it never is unless its clock went back
// further than it could hold (or before it restarted): it fires nothing
// until its clock passes the times already fired. With other voters the
// clock monitor keeps each node to the cluster's clock; a cluster behind
// the mark was led by a node whose clock was ahead, and its stamper says
// so.
func (a *Agent) clockProblem() string {
	hwm := a.fsm.TimeHWM()
	if hwm == 0 || a.clockMon == nil || !a.clockMon.solo.Load() {
		return ""
	}
	now := a.now()
	behind := time.UnixMilli(hwm).Sub(now)
	if behind <= 2*a.cfg.MaxClockSkew {
		return ""
	}
	return fmt.Sprintf("this node's time %s is %s behind the latest leader time applied, %s (its clock went back: see clock.jump); "+
		"it fires nothing until its clock is past the times already fired",
		now.UTC().Format(model.TimeLayout), behind.Round(time.Millisecond), time.UnixMilli(hwm).UTC().Format(model.TimeLayout))
}

// memberJumps returns the latest clock step each member reports (nil:
// none), this node's included, and the members that have not answered
// the monitor recently, whose steps it cannot tell.
func (m *clockMonitor) memberJumps() (jumps map[string]*model.ClockJump, unknown map[string]bool) {
	jumps = map[string]*model.ClockJump{m.self: m.clock.jump()}
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

// clockJumpAlert is the clock_jump finding for member id's step j.
func clockJumpAlert(id string, j *model.ClockJump) (alertID, summary string, details map[string]string) {
	dir := "forward"
	if j.Step < 0 {
		dir = "back"
	}
	summary = fmt.Sprintf("member %s's wall clock stepped %s by %s at %s", id, dir, abs(j.Step.Std()), j.At.UTC().Format(time.RFC3339))
	if j.Held != 0 {
		summary += fmt.Sprintf("; its time base holds %s of it", j.Held.Std().Round(time.Millisecond))
	}
	details = map[string]string{"step": j.Step.Std().String(), "at": j.At.UTC().Format(model.TimeLayout), "held": j.Held.Std().String(), "reason": j.Reason}
	return model.RuleClockJump + ":" + id, summary, details
}

// anotherStep reports whether a firing clock_jump alert's member has
// stepped again since: the alert is refreshed at once (no second
// notification) so that it shows the latest step.
func anotherStep(al model.Alert, f *finding) bool {
	return al.Rule == model.RuleClockJump && al.Details["at"] != f.change.Details["at"]
}

var (
	clockStepsDesc = prometheus.NewDesc("ax_clock_steps_total",
		"Steps of this node's wall clock against its monotonic clock larger than -max-clock-skew, by direction.", []string{"direction"}, nil)
	clockHeldDesc = prometheus.NewDesc("ax_clock_step_held_seconds",
		"How much this node's time base adds to its wall clock for a step: positive, a step back being absorbed; negative, a forward step held until the members' clocks are compared.", nil, nil)
)

// collectSteps sends the step metrics of c.
func collectSteps(c *skewClock, ch chan<- prometheus.Metric) {
	fwd, back, held := c.stepCounts()
	ch <- prometheus.MustNewConstMetric(clockStepsDesc, prometheus.CounterValue, float64(fwd), "forward")
	ch <- prometheus.MustNewConstMetric(clockStepsDesc, prometheus.CounterValue, float64(back), "backward")
	ch <- prometheus.MustNewConstMetric(clockHeldDesc, prometheus.GaugeValue, held.Seconds())
}

// stepCounts returns the steps seen each way and the hold in force.
func (c *skewClock) stepCounts() (forward, backward uint64, held time.Duration) {
	if c.read == nil {
		return 0, 0, 0
	}
	_, _, hold, _ := c.observe()
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.st.forward, c.st.backward, hold
}
