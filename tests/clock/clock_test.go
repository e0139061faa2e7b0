package clock

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/client"
	"github.com/ax-scheduler/ax/internal/clustertest"
	"github.com/ax-scheduler/ax/internal/localcluster"
	"github.com/ax-scheduler/ax/internal/testkit"
	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/model/member"
)

// faults is ax built with -tags faults (the fault hooks), built the first
// time a test asks for it.
var faults struct {
	once sync.Once
	path string
	err  error
}

func faultsBinary(t *testing.T) string {
	t.Helper()
	faults.once.Do(func() {
		faults.path = filepath.Join(filepath.Dir(axBinary), "ax-faults")
		_, faults.err = localcluster.Install(faults.path, clustertest.AxPkg, "faults")
	})
	if faults.err != nil {
		t.Fatal(faults.err)
	}
	return faults.path
}

// electionBound is how long firing may stop when a leader dies: one
// election with the default timeouts (a follower notices within 1-2 s and
// an election takes up to another 1 s) plus the new leader's barrier.
const electionBound = 3 * time.Second

// TestClockSkew: in a three-node cluster where n2's clock is 10 min fast
// (then 10 min slow), every node names n2 and its offset in /healthz, the
// metric and the log; n2 made leader (by a transfer, and maybe by the
// election after the leader is killed) hands leadership over at once; a
// per-second cron with catchup "all" never fires early, fires every second
// once, and is never late by more than one election + 1 s; an
// Idempotency-Key sent before and after n2 led gives one instance.
func TestClockSkew(t *testing.T) {
	for _, offset := range []time.Duration{10 * time.Minute, -10 * time.Minute} {
		name := "fast"
		if offset < 0 {
			name = "slow"
		}
		t.Run(name, func(t *testing.T) { testClockSkew(t, offset) })
	}
}

func testClockSkew(t *testing.T, offset time.Duration) {
	if testing.Short() {
		t.Skip("multi-process test skipped in -short mode")
	}
	env := "AX_FAULT_CLOCK_OFFSET=" + offset.String()
	if offset > 0 {
		env = "AX_FAULT_CLOCK_OFFSET=+" + offset.String()
	}
	c := startCluster(t, 3, withBinary(faultsBinary(t)), withNodeEnv("n2", env))
	ctx := ctxT(t, 4*time.Minute)
	skewed := c.Nodes[1]

	// Every node finds n2 off, with its offset.
	start := time.Now()
	for _, n := range c.Nodes {
		waitHealth(ctx, t, n, 20*time.Second, func(h *member.Health) error {
			if h.Clock == nil || !h.Clock.Quorum {
				return fmt.Errorf("%s: no clock verdict yet (%+v)", n.ID, h.Clock)
			}
			if len(h.Clock.Skewed) != 1 || h.Clock.Skewed[0].Node != skewed.ID || !near(h.Clock.Skewed[0].Offset.Std(), offset) {
				return fmt.Errorf("%s: skewed members %+v, want only %s at %s", n.ID, h.Clock.Skewed, skewed.ID, offset)
			}
			if n == skewed && (h.ClockOffset == nil || !near(h.ClockOffset.Std(), offset)) {
				return fmt.Errorf("%s: clockOffset %v, want %s", n.ID, h.ClockOffset, offset)
			}
			return nil
		})
		if got := metric(ctx, t, n, `ax_clock_offset_seconds{node="n2"}`); !near(time.Duration(got*float64(time.Second)), offset) {
			t.Errorf("%s: ax_clock_offset_seconds{node=\"n2\"} = %v, want %v", n.ID, got, offset.Seconds())
		}
	}
	t.Logf("every node names n2 %s off %s after the cluster started", offset, time.Since(start).Round(time.Millisecond))
	testkit.Eventually(t, 10*time.Second, func() error {
		return logHas(c.Nodes[0].LogPath, "clock skew: a member's clock is off from the cluster's", "member=n2", "offset=")
	})

	cl := c.Client()
	tick := perSecondTask("tick", "all")
	tick.Policy.MaxConcurrency = 1000
	for _, task := range []*model.Task{tick, eventTask("orders")} {
		if _, err := cl.PutTask(ctx, task); err != nil {
			t.Fatal(err)
		}
	}
	rec := watchFires(ctx, cl, "tick")
	first := submitKeyed(ctx, t, cl, "orders", "order-42")
	// Delayed instances due while n2 is made leader and after.
	later := eventTask("later")
	later.Policy.MaxConcurrency = 100
	if _, err := cl.PutTask(ctx, later); err != nil {
		t.Fatal(err)
	}
	var subs []model.SubmitRequest
	for d := 3 * time.Second; d <= 12*time.Second; d += 500 * time.Millisecond {
		subs = append(subs, model.SubmitRequest{Delay: model.Duration(d)})
	}
	if _, err := cl.SubmitBatch(ctx, "later", subs); err != nil {
		t.Fatal(err)
	}
	delayed := watchFires(ctx, cl, "later")
	testkit.Eventually(t, 10*time.Second, func() error {
		if n := rec.count(); n < 3 {
			return fmt.Errorf("%d fires", n)
		}
		return nil
	})

	// Made leader by a transfer, n2 hands leadership over.
	if err := cl.Transfer(ctx, skewed.ID); err != nil {
		t.Fatalf("transfer to n2: %v", err)
	}
	transferred := time.Now()
	notSkewedLeader(ctx, t, c, skewed, 5*time.Second)
	t.Logf("leader again a node with a good clock %s after the transfer to n2", time.Since(transferred).Round(time.Millisecond))
	testkit.Eventually(t, 5*time.Second, func() error {
		if got := metric(ctx, t, skewed, "ax_clock_skew_transfers_total"); got < 1 {
			return fmt.Errorf("n2: ax_clock_skew_transfers_total = %v, want at least 1", got)
		}
		return logHas(skewed.LogPath, "handed leadership over: this node's clock is off", "to=n")
	})

	// Kill the leader: n2 may win the election; it hands over again.
	leader, err := c.Leader(ctx, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	leader.Kill()
	notSkewedLeader(ctx, t, c, skewed, 15*time.Second)
	if err := leader.Start(); err != nil {
		t.Fatal(err)
	}
	waitHealth(ctx, t, leader, 20*time.Second, func(h *member.Health) error {
		if h.Leader == "" || h.Leader == skewed.ID {
			return fmt.Errorf("%s sees leader %q", leader.ID, h.Leader)
		}
		return nil
	})
	spells := leaderSpells(t, skewed.LogPath)
	if len(spells) == 0 {
		t.Fatal("n2 never led: the transfer did not reach it")
	}
	for _, d := range spells {
		if d > 2*time.Second {
			t.Errorf("n2 led for %s, want it to hand over within 2s", d)
		}
	}
	t.Logf("n2 led %d time(s), for %v", len(spells), spells)

	// The Idempotency-Key sent again after n2 led finds the first instance.
	if again := submitKeyed(ctx, t, cl, "orders", "order-42"); again != first {
		t.Errorf("the same Idempotency-Key created %s after n2 led, want the first instance %s", again, first)
	}
	if orders, err := allInstances(ctx, cl, "orders"); err != nil || len(orders) != 1 {
		t.Errorf("orders has %d instances (%v), want 1", len(orders), err)
	}

	// Firing went on: let it run a little, then check every fire time.
	resumed := time.Now()
	testkit.Eventually(t, 15*time.Second, func() error {
		if last := rec.last(); last.Before(resumed.Add(3 * time.Second)) {
			return fmt.Errorf("last fire time %s", last.Format(model.TimeLayout))
		}
		return nil
	})
	if _, err := cl.PauseTask(ctx, "tick"); err != nil {
		t.Fatal(err)
	}
	rec.stop()
	testkit.Eventually(t, 10*time.Second, func() error {
		if n := delayed.count(); n != len(subs) {
			return fmt.Errorf("%d of %d delayed instances fired", n, len(subs))
		}
		return nil
	})
	delayed.stop()
	if delayed.early() > 0 {
		t.Errorf("%d delayed instances fired before they were due: %v", delayed.early(), delayed.earlyTimes())
	}
	t.Logf("%d delayed instances due during the hand-overs: %d early", len(subs), delayed.early())
	insts, err := allInstances(ctx, cl, "tick")
	if err != nil {
		t.Fatal(err)
	}
	times := fireTimes(t, insts) // no duplicates
	for i := 1; i < len(times); i++ {
		if gap := times[i].Sub(times[i-1]); gap != time.Second {
			t.Errorf("fire times %s and %s are %s apart, want every second", times[i-1].Format(model.TimeLayout), times[i].Format(model.TimeLayout), gap)
		}
	}
	var late time.Duration
	var lateAt time.Time
	for _, in := range insts {
		if d := in.FiredAt.Sub(in.ScheduledAt.Time); d > late {
			late, lateAt = d, in.ScheduledAt.Time
		}
	}
	if late > electionBound+time.Second {
		t.Errorf("fire time %s fired %s late, want at most one election + 1s (%s)", lateAt.Format(model.TimeLayout), late, electionBound+time.Second)
	}
	if rec.early() > 0 {
		t.Errorf("%d fire times existed before they were due: %v", rec.early(), rec.earlyTimes())
	}
	ev, err := cl.TaskEvents(ctx, "tick", client.Consistent())
	if err != nil {
		t.Fatal(err)
	}
	misfires := 0
	for _, e := range ev.Events {
		if e.Type == "misfire" {
			misfires++
			t.Errorf("misfire event: %s", e.Message)
		}
	}
	t.Logf("%d fire times from %s to %s (no duplicate): %d early, %d misfire events; latest %s late", len(times),
		times[0].Format(model.TimeLayout), times[len(times)-1].Format(model.TimeLayout), rec.early(), misfires, late)
}

// near reports whether an offset measured is within a second of want.
func near(got, want time.Duration) bool {
	d := got - want
	return d <= time.Second && d >= -time.Second
}

// notSkewedLeader waits until the running nodes agree on a leader that is
// not skewed, within.
func notSkewedLeader(ctx context.Context, t *testing.T, c *localcluster.Cluster, skewed *localcluster.Node, within time.Duration) {
	t.Helper()
	testkit.Eventually(t, within, func() error {
		l, err := c.Leader(ctx, time.Second)
		if err != nil {
			return err
		}
		if l == skewed {
			return fmt.Errorf("%s leads", l.ID)
		}
		return nil
	})
}

// submitKeyed submits a delayed instance of task with an Idempotency-Key
// and returns its id.
func submitKeyed(ctx context.Context, t *testing.T, cl *client.Client, task, key string) string {
	t.Helper()
	var r model.SubmitResult
	err := cl.Do(ctx, client.Request{Method: http.MethodPost, Path: "/v1/tasks/" + task + "/submit",
		Body: model.SubmitRequest{Delay: model.Duration(time.Hour)}, Header: http.Header{client.HeaderIdempotencyKey: {key}}}, &r)
	if err != nil || len(r.Instances) != 1 {
		t.Fatalf("submit with Idempotency-Key %s: %v (%d instances)", key, err, len(r.Instances))
	}
	return r.Instances[0].ID
}

// metric reads one sample of a node's /metrics.
func metric(ctx context.Context, t *testing.T, n *localcluster.Node, series string) float64 {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+n.HTTPAddr+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s /metrics: %v", n.ID, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, series+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("%s: %q: %v", n.ID, l, err)
			}
			return f
		}
	}
	t.Fatalf("%s /metrics has no %s", n.ID, series)
	return 0
}

// logHas reports whether one line of a log holds every part.
func logHas(path string, parts ...string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
lines:
	for _, l := range strings.Split(string(b), "\n") {
		for _, p := range parts {
			if !strings.Contains(l, p) {
				continue lines
			}
		}
		return nil
	}
	return fmt.Errorf("%s: no line with %q", filepath.Base(path), parts)
}

// leaderSpells returns how long each of a node's leaderships lasted, from
// its log (both ends read on its own clock, so an offset cancels out).
func leaderSpells(t *testing.T, path string) []time.Duration {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []time.Duration
	var since time.Time
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		l := sc.Text()
		at, err := time.Parse("2006-01-02T15:04:05.000Z0700", strings.SplitN(l, " ", 2)[0])
		switch {
		case err != nil:
		case strings.Contains(l, "entering leader state"):
			since = at
		case !since.IsZero() && (strings.Contains(l, "entering follower state") || strings.Contains(l, "agent stopped")):
			out = append(out, at.Sub(since))
			since = time.Time{}
		}
	}
	return out
}

// fireWatch polls a task's instances and records, for each fire time, when
// it was first seen fired: one seen fired before it was due fired early.
type fireWatch struct {
	mu      sync.Mutex
	seen    map[int64]time.Time
	tooSoon []time.Time
	latest  time.Time
	cancel  context.CancelFunc
	done    chan struct{}
}

func watchFires(ctx context.Context, cl *client.Client, task string) *fireWatch {
	ctx, cancel := context.WithCancel(ctx)
	w := &fireWatch{seen: map[int64]time.Time{}, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for ctx.Err() == nil {
			page, err := cl.ListInstances(ctx, model.InstanceFilter{Task: task, Limit: 1000})
			answered := time.Now()
			if err == nil {
				w.mu.Lock()
				for _, in := range page.Instances {
					ms := in.ScheduledAt.Millis()
					if _, ok := w.seen[ms]; ok || in.State == model.StateScheduled {
						continue
					}
					w.seen[ms] = answered
					if in.ScheduledAt.After(answered) {
						w.tooSoon = append(w.tooSoon, in.ScheduledAt.Time)
					}
					if in.ScheduledAt.After(w.latest) {
						w.latest = in.ScheduledAt.Time
					}
				}
				w.mu.Unlock()
			}
			select {
			case <-ctx.Done():
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()
	return w
}

func (w *fireWatch) stop() { w.cancel(); <-w.done }

func (w *fireWatch) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.seen)
}

func (w *fireWatch) last() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.latest
}

func (w *fireWatch) early() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.tooSoon)
}

func (w *fireWatch) earlyTimes() []time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]time.Time(nil), w.tooSoon...)
}
