package fanout

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/client"
	"github.com/ax-scheduler/ax/internal/agenttest"
	"github.com/ax-scheduler/ax/internal/testkit"
	"github.com/ax-scheduler/ax/model"
)

// readyTimes returns when each instance became READY as the cluster
// recorded it (its fire, or the unblocked event of its turn) and when
// its attempt started (the lease), in ms, in start order.
func readyTimes(t *testing.T, ctx context.Context, cl *client.Client, ids []string) (ready, started []int64) {
	t.Helper()
	for _, id := range ids {
		in, err := cl.GetInstance(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		at := in.FiredAt.UnixMilli()
		for _, e := range in.Events {
			if e.Type == "unblocked" {
				at = e.Time.UnixMilli()
			}
		}
		ready, started = append(ready, at), append(started, in.StartedAt.UnixMilli())
	}
	slices.Sort(ready)
	slices.Sort(started)
	return ready, started
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

func offsets(times []int64) []int64 {
	var out []int64
	for _, v := range times {
		out = append(out, v-times[0])
	}
	return out
}

// mostIn returns the most of times (sorted) in a half-open window of
// length ms.
func mostIn(times []int64, ms int64) int {
	most := 0
	for i := range times {
		n := 0
		for j := i; j < len(times) && times[j] < times[i]+ms; j++ {
			n++
		}
		most = max(most, n)
	}
	return most
}

// TestExec_RateLimit: a task limited to 2 starts per 2 s, written and
// triggered six times through a follower, with an executor free to run
// all six at once: the cluster starts them one per second, oldest first,
// never more than 2 in 2 s (its own READY times exactly, the lease times
// within lease latency), the waiting ones BLOCKED with a why naming the
// limit; a pool's limit holds across two tasks the same way (issue 24,
// rate limits).
func TestExec_RateLimit(t *testing.T) {
	c := startCluster(t, 3)
	ctx := ctxT(t, 180*time.Second)
	follower, _, err := c.Follower(ctx, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	fc := client.New(client.Config{Addrs: []string{follower.HTTPAddr}})
	limit := &model.RateLimit{Count: 2, Per: model.Duration(2 * time.Second)}
	testkit.Eventually(t, 30*time.Second, func() error { // protocol 8
		_, err := fc.PutTask(ctx, shellTask("rl", "true", model.Policy{MaxConcurrency: 10, RateLimit: limit}))
		return err
	})
	// Bad limits are refused with 400 naming the field, nothing written.
	var apiErr *model.Error
	_, err = fc.PutTask(ctx, shellTask("bad", "true", model.Policy{RateLimit: &model.RateLimit{Count: 2, Per: model.Duration(time.Millisecond)}}))
	if !errors.As(err, &apiErr) || apiErr.Code != model.CodeInvalid || apiErr.Field != "policy.rateLimit.per" {
		t.Errorf("a task with per 1ms: %v, want invalid_argument on policy.rateLimit.per", err)
	}
	err = fc.Do(ctx, client.Request{Method: http.MethodPut, Path: "/v1/pools/bad", Body: model.Pool{Slots: 1, RateLimit: &model.RateLimit{Per: model.Duration(time.Minute)}}}, nil)
	if !errors.As(err, &apiErr) || apiErr.Code != model.CodeInvalid || apiErr.Field != "rateLimit.count" {
		t.Errorf("a pool with count 0: %v, want invalid_argument on rateLimit.count", err)
	}
	if _, err := fc.GetTask(ctx, "bad"); err == nil {
		t.Error("the refused task was written")
	}
	if _, err := c.StartExecutor("wide", "-capacity", "8"); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for range 6 {
		ids = append(ids, trigger(t, fc, "rl"))
	}
	// The waiting ones say what they wait for.
	testkit.Eventually(t, 10*time.Second, func() error {
		in, err := fc.GetInstance(ctx, ids[5])
		switch {
		case err != nil:
			return err
		case in.State != model.StateBlocked || !strings.Contains(in.Why, "rate limit of task rl (2 per 2s)"):
			return fmt.Errorf("the last instance: %s, why %q; want BLOCKED naming the rate limit", in.State, in.Why)
		}
		return nil
	})
	if in, _ := fc.GetInstance(ctx, ids[4]); !hasEvent(in, "blocked", "rate limit of task rl") {
		t.Errorf("a waiter's events %+v: no blocked event naming the limit", in.Events)
	}
	for _, id := range ids {
		agenttest.WaitState(t, fc, id, 60*time.Second, model.StateSuccess)
	}
	ready, started := readyTimes(t, ctx, fc, ids)
	t.Logf("READY at +%v ms, attempts started at +%v ms", offsets(ready), offsets(started))
	if n := mostIn(ready, 2000); n > 2 {
		t.Errorf("%d instances READY within 2 s (READY times %v)", n, ready)
	}
	const slack = 300 // ms of lease latency
	if n := mostIn(started, 2000-slack); n > 2 {
		t.Errorf("%d attempts started within %d ms (start times %v)", n, 2000-slack, started)
	}
	if span := ready[5] - ready[0]; span < 5000 || started[5]-started[0] < 5000-slack {
		t.Errorf("six starts over %d ms (lease %d ms), want one per second: 5 s", span, started[5]-started[0])
	}
	// Every node counts the waits it applied.
	resp, err := http.Get("http://" + follower.HTTPAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), `ax_rate_limited_total{state="BLOCKED"} 5`) {
		t.Errorf("metrics: no ax_rate_limited_total{state=\"BLOCKED\"} 5 in\n%s", grepLines(string(body), "ax_rate_limited"))
	}
	var order []string
	for _, id := range ids {
		in, _ := fc.GetInstance(ctx, id)
		order = append(order, in.StartedAt.Format(model.TimeLayout))
	}
	if !slices.IsSorted(order) {
		t.Errorf("start times by trigger order %v: want oldest first", order)
	}

	// A pool's limit, across two tasks.
	pool := model.Pool{Slots: 8, RateLimit: &model.RateLimit{Count: 1, Per: model.Duration(time.Second)}}
	if err := fc.Do(ctx, client.Request{Method: http.MethodPut, Path: "/v1/pools/api", Body: pool}, nil); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"pa", "pb"} {
		if _, err := fc.PutTask(ctx, shellTask(name, "true", model.Policy{MaxConcurrency: 4, Pool: "api"})); err != nil {
			t.Fatal(err)
		}
	}
	ids = ids[:0]
	for _, name := range []string{"pa", "pb", "pa", "pb"} {
		ids = append(ids, trigger(t, fc, name))
	}
	for _, id := range ids {
		agenttest.WaitState(t, fc, id, 60*time.Second, model.StateSuccess)
	}
	ready, _ = readyTimes(t, ctx, fc, ids)
	if n := mostIn(ready, 1000); n > 1 {
		t.Errorf("%d instances of the pool READY within 1 s (%v)", n, ready)
	}
	var p model.Pool
	if err := fc.Do(ctx, client.Request{Method: http.MethodGet, Path: "/v1/pools/api"}, &p); err != nil || p.RateLimit == nil || p.RateLimit.Count != 1 || p.Busy != 0 {
		t.Errorf("pool %+v %v, want its rate limit kept and no slot busy", p, err)
	}
}

// TestExec_RateLimitLeaderChange: instances waiting for their turn when
// the leader is killed are brought back by the new one (they are in the
// due index it loads), still one per second: the limit's state is
// replicated.
func TestExec_RateLimitLeaderChange(t *testing.T) {
	c := startCluster(t, 3)
	ctx := ctxT(t, 120*time.Second)
	cl := c.Client()
	testkit.Eventually(t, 30*time.Second, func() error {
		_, err := cl.PutTask(ctx, shellTask("lc", "true", model.Policy{MaxConcurrency: 10,
			RateLimit: &model.RateLimit{Count: 1, Per: model.Duration(time.Second)}}))
		return err
	})
	if _, err := c.StartExecutor("wide", "-capacity", "8"); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for range 6 {
		ids = append(ids, trigger(t, cl, "lc"))
	}
	leader, err := c.Leader(ctx, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if in, err := cl.GetInstance(ctx, ids[5]); err != nil || in.State != model.StateBlocked {
		t.Fatalf("the last instance before the leader change: %+v %v, want BLOCKED for its turn", in, err)
	}
	leader.Kill()
	for _, id := range ids {
		agenttest.WaitState(t, cl, id, 60*time.Second, model.StateSuccess)
	}
	ready, _ := readyTimes(t, ctx, cl, ids)
	if n := mostIn(ready, 1000); n > 1 {
		t.Errorf("%d instances READY within 1 s across the leader change (%v)", n, ready)
	}
	t.Logf("READY at +%v ms", offsets(ready))
}
