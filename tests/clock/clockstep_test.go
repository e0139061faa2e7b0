package clock

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/client"
	"github.com/ax-scheduler/ax/internal/localcluster"
	"github.com/ax-scheduler/ax/internal/testkit"
	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/model/channel"
	"github.com/ax-scheduler/ax/model/member"
)

// stepClock steps a running node's wall clock: the fault hook of a
// binary built with -tags faults follows the offset written to the file
// AX_FAULT_CLOCK_FILE names within 100 ms.
type stepClock struct {
	t    *testing.T
	path string
	off  time.Duration
}

func newStepClock(t *testing.T) *stepClock {
	s := &stepClock{t: t, path: filepath.Join(t.TempDir(), "clock-offset")}
	s.set(0)
	return s
}

func (s *stepClock) env() string { return "AX_FAULT_CLOCK_FILE=" + s.path }

// set writes the offset and waits out the hook's poll.
func (s *stepClock) set(off time.Duration) {
	s.t.Helper()
	if err := os.WriteFile(s.path, []byte(off.String()), 0o600); err != nil {
		s.t.Fatal(err)
	}
	s.off = off
	time.Sleep(150 * time.Millisecond) // the hook reads the file every 100 ms
}

// fireStats reads a task's fire times (sorted; a duplicate or a fire
// before its time fails the test) and its misfire events.
func fireStats(ctx context.Context, t *testing.T, cl *client.Client, task string) (times []time.Time, misfires int) {
	t.Helper()
	insts, err := allInstances(ctx, cl, task)
	if err != nil {
		t.Fatal(err)
	}
	ev, err := cl.TaskEvents(ctx, task, client.Consistent())
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ev.Events {
		if e.Type == "misfire" {
			misfires++
		}
	}
	return fireTimes(t, insts), misfires
}

func countAfter(times []time.Time, t time.Time) int {
	n := 0
	for _, x := range times {
		if x.After(t) {
			n++
		}
	}
	return n
}

// TestClockStep_SingleNode (real process, -tags faults): the wall clock
// of a one-node cluster is stepped while it runs.
//
//   - 3 min back: firing goes on (the time base holds the step and
//     absorbs it at half speed), every second once, none early; within
//     10 s the step is logged with its size and direction, /healthz (200)
//     shows it, and a clock_jump alert fires and reaches a channel.
//   - 13 min forward (10 min ahead): the time base moves with it; the fire
//     times it skipped follow each task's catch-up policy (all: the
//     window's 60; latest: the newest), the others recorded as misfires;
//     nothing fires ahead of the node's time.
//   - 2 h 10 min back, more than a node holds: /healthz answers 503 saying
//     the node's time is behind the latest leader time; 200 again once the
//     clock is put back.
func TestClockStep_SingleNode(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process test skipped in -short mode")
	}
	clock := newStepClock(t)
	c := startCluster(t, 1, withBinary(faultsBinary(t)), withNodeEnv("n1", clock.env()))
	n := c.Nodes[0]
	ctx := ctxT(t, 4*time.Minute)
	cl := c.Client()
	hook := newWebhook(t)
	testkit.Eventually(t, 30*time.Second, func() error { // channels need protocol 4
		_, err := cl.PutChannel(ctx, &channel.Channel{Name: "ops", Type: channel.TypeWebhook, URL: hook.URL()})
		return err
	})
	for _, task := range []*model.Task{perSecondTask("tick", "all"), perSecondTask("latest", "latest")} {
		task.Policy.MaxConcurrency = 1000
		if _, err := cl.PutTask(ctx, task); err != nil {
			t.Fatal(err)
		}
	}
	testkit.Eventually(t, 15*time.Second, func() error {
		if times, _ := fireStats(ctx, t, cl, "tick"); len(times) < 3 {
			return fmt.Errorf("%d fires", len(times))
		}
		return nil
	})

	// 3 min back.
	times, _ := fireStats(ctx, t, cl, "tick")
	last := times[len(times)-1]
	stepped := time.Now() // the hook takes it within 100 ms
	clock.set(-3 * time.Minute)
	checkClockJump(ctx, t, n, cl, hook, stepped, -3*time.Minute, "direction=backward")
	if got := metric(ctx, t, n, `ax_clock_steps_total{direction="backward"}`); got != 1 {
		t.Errorf(`ax_clock_steps_total{direction="backward"} = %v, want 1`, got)
	}
	if got := metric(ctx, t, n, "ax_clock_step_held_seconds"); got <= 0 || got > 180 {
		t.Errorf("ax_clock_step_held_seconds = %v, want the step back being absorbed", got)
	}
	testkit.Eventually(t, 10*time.Second, func() error {
		if times, _ := fireStats(ctx, t, cl, "tick"); countAfter(times, last) < 3 {
			return fmt.Errorf("%d fire times after %s", countAfter(times, last), last.Format(model.TimeLayout))
		}
		return nil
	})
	t.Logf("step back 3m: 3 more fires %s after it (the time base at half speed)", time.Since(stepped).Round(time.Millisecond))
	times, misfires := fireStats(ctx, t, cl, "tick")
	for i := 1; i < len(times); i++ {
		if gap := times[i].Sub(times[i-1]); gap != time.Second {
			t.Errorf("fire times %s and %s are %s apart, want every second", times[i-1].Format(model.TimeLayout), times[i].Format(model.TimeLayout), gap)
		}
	}
	if now := time.Now(); times[len(times)-1].After(now) { // the node's time is behind the real one now
		t.Errorf("fire time %s exists at %s: early", times[len(times)-1].Format(model.TimeLayout), now.Format(model.TimeLayout))
	}
	if misfires != 0 {
		t.Errorf("%d misfire events after the step back, want none", misfires)
	}

	// 13 min forward: 10 min ahead of real time.
	before := time.Now()
	stepped = before
	clock.set(10 * time.Minute)
	testkit.Eventually(t, 10*time.Second, func() error {
		times, missed := fireStats(ctx, t, cl, "tick")
		_, missedLatest := fireStats(ctx, t, cl, "latest")
		if in := countAfter(times, stepped.Add(10*time.Minute-time.Minute)); missed == 0 || missedLatest == 0 || in < 55 {
			return fmt.Errorf("tick: %d misfire events, %d fire times in the last minute; latest: %d misfire events", missed, in, missedLatest)
		}
		return nil
	})
	t.Logf("step forward 13m: the catch-up done %s after it", time.Since(stepped).Round(time.Millisecond))
	checkClockJump(ctx, t, n, cl, hook, stepped, 13*time.Minute, "direction=forward")
	latest, _ := fireStats(ctx, t, cl, "latest")
	if skipped := countAfter(latest, before.Add(2*time.Second)) - countAfter(latest, stepped.Add(10*time.Minute-2*time.Second)); skipped != 0 {
		t.Errorf("latest: %d fire times in the span the step skipped, want none (only the newest)", skipped)
	}
	times, _ = fireStats(ctx, t, cl, "tick")
	if nodeNow := time.Now().Add(10 * time.Minute); times[len(times)-1].After(nodeNow) {
		t.Errorf("fire time %s exists at the node's %s: early", times[len(times)-1].Format(model.TimeLayout), nodeNow.Format(model.TimeLayout))
	}

	// 2h10m back: more than a node holds.
	stepped = time.Now()
	clock.set(-2 * time.Hour)
	waitHealth(ctx, t, n, 10*time.Second, func(h *member.Health) error {
		if !strings.Contains(h.Problem, "behind the latest leader time applied") {
			return fmt.Errorf("problem %q", h.Problem)
		}
		return nil
	})
	t.Logf("step back 2h10m: /healthz 503 %s after it", time.Since(stepped).Round(time.Millisecond))
	if _, err := n.Client().Health(ctx); err == nil {
		t.Error("/healthz answered 200 while the node's time is 2h behind the latest leader time")
	}
	if err := logHas(n.LogPath, "clock step", "direction=backward", "step=-2h10m"); err != nil {
		t.Error(err)
	}
	clock.set(10 * time.Minute)
	waitHealth(ctx, t, n, 10*time.Second, func(h *member.Health) error {
		if h.Problem != "" {
			return fmt.Errorf("problem %q", h.Problem)
		}
		return nil
	})
}

// checkClockJump checks, within 10 s of a step of n's clock by step: the
// log line, /healthz (clock.jump, no problem), a clock_jump alert for n
// and its firing notification to the channel.
func checkClockJump(ctx context.Context, t *testing.T, n *localcluster.Node, cl *client.Client, hook *webhook, stepped time.Time, step time.Duration, dir string) {
	t.Helper()
	id := model.RuleClockJump + ":" + n.ID
	within := 10*time.Second - time.Since(stepped)
	testkit.Eventually(t, within, func() error {
		return logStep(n.LogPath, dir, step)
	})
	waitHealth(ctx, t, n, within, func(h *member.Health) error {
		if h.Problem != "" || h.Clock == nil || h.Clock.Jump == nil || !near(h.Clock.Jump.Step.Std(), step) {
			return fmt.Errorf("problem %q, clock %+v", h.Problem, h.Clock)
		}
		return nil
	})
	testkit.Eventually(t, 10*time.Second-time.Since(stepped), func() error {
		l, err := cl.ListAlerts(ctx, model.AlertQuery{State: model.AlertFiring, Rule: model.RuleClockJump})
		if err != nil {
			return err
		}
		for _, a := range l.Alerts {
			if a.ID == id && a.Subject.Node == n.ID && near(mustDuration(t, a.Details["step"]), step) {
				return nil
			}
		}
		return fmt.Errorf("no %s alert for a step of %s: %+v", id, step, l.Alerts)
	})
	t.Logf("step %s: log line, /healthz and %s alert within %s", step, id, time.Since(stepped).Round(time.Millisecond))
	testkit.Eventually(t, 10*time.Second, func() error {
		if hook.Count(id, model.AlertFiring) == 0 {
			return fmt.Errorf("no firing notification of %s", id)
		}
		return nil
	})
}

func mustDuration(t *testing.T, s string) time.Duration {
	t.Helper()
	d, err := time.ParseDuration(s)
	if err != nil {
		t.Fatalf("%q: %v", s, err)
	}
	return d
}

// TestClockStep_Leader (real processes, -tags faults): in a three-node
// cluster the leader's wall clock jumps 10 min forward while it runs,
// then back; then the next leader's jumps 3 min back. Each step is
// reported for its node within 10 s (the clock_jump alert, its log line,
// its /healthz), each stepped leader hands leadership over, and a
// per-second task (catch-up all) fires every second once, none before it
// is due by the real clock the other members keep, with no misfire.
func TestClockStep_Leader(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process test skipped in -short mode")
	}
	clocks := map[string]*stepClock{}
	opts := []clusterOption{withBinary(faultsBinary(t))}
	for _, id := range []string{"n1", "n2", "n3"} {
		clocks[id] = newStepClock(t)
		opts = append(opts, withNodeEnv(id, clocks[id].env()))
	}
	c := startCluster(t, 3, opts...)
	ctx := ctxT(t, 4*time.Minute)
	cl := c.Client()
	hook := newWebhook(t)
	testkit.Eventually(t, 30*time.Second, func() error {
		_, err := cl.PutChannel(ctx, &channel.Channel{Name: "ops", Type: channel.TypeWebhook, URL: hook.URL()})
		return err
	})
	tick := perSecondTask("tick", "all")
	tick.Policy.MaxConcurrency = 1000
	if _, err := cl.PutTask(ctx, tick); err != nil {
		t.Fatal(err)
	}
	rec := watchFires(ctx, cl, "tick")
	waitFires := func(n int) {
		t.Helper()
		from := rec.count()
		testkit.Eventually(t, 15*time.Second, func() error {
			if got := rec.count() - from; got < n {
				return fmt.Errorf("%d more fires", got)
			}
			return nil
		})
	}
	waitFires(3)
	stepLeader := func(step time.Duration) *localcluster.Node {
		t.Helper()
		l, err := c.Leader(ctx, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		stepped := time.Now()
		clocks[l.ID].set(clocks[l.ID].off + step)
		dir := "direction=forward"
		if step < 0 {
			dir = "direction=backward"
		}
		checkClockJump(ctx, t, l, cl, hook, stepped, step, dir)
		notSkewedLeader(ctx, t, c, l, 10*time.Second-time.Since(stepped))
		t.Logf("%s stepped %s: handed leadership over within %s", l.ID, step, time.Since(stepped).Round(time.Millisecond))
		waitFires(3)
		return l
	}
	first := stepLeader(10 * time.Minute)
	// Put right again (a follower now): reported too.
	stepped := time.Now()
	clocks[first.ID].set(0)
	checkClockJump(ctx, t, first, cl, hook, stepped, -10*time.Minute, "direction=backward")
	stepLeader(-3 * time.Minute)
	waitFires(3)

	if _, err := cl.PauseTask(ctx, "tick"); err != nil {
		t.Fatal(err)
	}
	rec.stop()
	times, misfires := fireStats(ctx, t, cl, "tick")
	for i := 1; i < len(times); i++ {
		if gap := times[i].Sub(times[i-1]); gap != time.Second {
			t.Errorf("fire times %s and %s are %s apart, want every second", times[i-1].Format(model.TimeLayout), times[i].Format(model.TimeLayout), gap)
		}
	}
	if rec.early() > 0 {
		t.Errorf("%d fire times existed before they were due: %v", rec.early(), rec.earlyTimes())
	}
	if misfires != 0 {
		t.Errorf("%d misfire events, want none", misfires)
	}
	t.Logf("%d fire times from %s to %s: %d early, %d misfire events", len(times), times[0].Format(model.TimeLayout),
		times[len(times)-1].Format(model.TimeLayout), rec.early(), misfires)
}

// logStep finds the "clock step" log line of direction dir whose step is
// near want: the step measured is the wall clock's jump against the
// monotonic clock between two samples, a few milliseconds off the step
// made on a busy machine (-2m59.984s for -3m0s).
func logStep(path, dir string, want time.Duration) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	for _, l := range strings.Split(string(b), "\n") {
		if !strings.Contains(l, "clock step") || !strings.Contains(l, dir) {
			continue
		}
		_, rest, ok := strings.Cut(l, " step=")
		if !ok {
			continue
		}
		got, err := time.ParseDuration(strings.Fields(rest)[0])
		if err == nil && near(got, want) {
			return nil
		}
	}
	return fmt.Errorf("%s: no clock step line with %s and a step near %s", filepath.Base(path), dir, want)
}
