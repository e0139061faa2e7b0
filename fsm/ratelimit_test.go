package fsm

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/ax-scheduler/ax/model"
)

// auditRates checks the rate limits' bookkeeping (for auditSlots): every
// instance flagged as waiting is BLOCKED, in the due index at its turn
// and in the FIFOs its index entry names; every FIFO entry is such an
// instance's; each limiter counts its FIFO's entries; and each pool
// counts the instances holding one of its slots (rate waiters included).
func auditRates(tx *bolt.Tx) []string {
	var bad []string
	fifo := map[string]uint64{}
	_ = tx.Bucket(bktRateWait).ForEach(func(k, _ []byte) error {
		if len(k) <= 17 {
			bad = append(bad, fmt.Sprintf("rate_wait key %x too short", k))
			return nil
		}
		fifo[string(k[:len(k)-17])]++
		id := binary.BigEndian.Uint64(k[len(k)-8:])
		r, err := readRecord(tx, id)
		if err != nil || r.State != stBlocked || r.Flags&flagWaitingRate == 0 {
			bad = append(bad, fmt.Sprintf("instance %d in rate FIFO %q is not waiting for a rate limit", id, k[:len(k)-17]))
			return nil
		}
		if !slices.ContainsFunc(rateKeys(tx, id), func(x []byte) bool { return string(x) == string(k) }) {
			bad = append(bad, fmt.Sprintf("instance %d: FIFO entry %q not in its index", id, k[:len(k)-17]))
		}
		return nil
	})
	_ = tx.Bucket(bktRateState).ForEach(func(k, _ []byte) error {
		if l := loadLimiter(tx, string(k), "", nil); l.waiting != fifo[string(k)] {
			bad = append(bad, fmt.Sprintf("limiter %q counts %d waiting, its FIFO holds %d", k, l.waiting, fifo[string(k)]))
		}
		delete(fifo, string(k))
		return nil
	})
	for k, n := range fifo {
		bad = append(bad, fmt.Sprintf("limiter %q has %d in its FIFO and no state", k, n))
	}
	poolBusy := map[string]uint64{}
	_ = tx.Bucket(bktActive).ForEach(func(k, _ []byte) error {
		r, err := readRecord(tx, binary.BigEndian.Uint64(k))
		if err != nil {
			return nil
		}
		if r.Pool != "" {
			poolBusy[r.Pool]++
		}
		if r.Flags&flagWaitingRate == 0 {
			if tx.Bucket(bktRateIdx).Get(k) != nil {
				bad = append(bad, fmt.Sprintf("instance %d is in a rate FIFO's index without its flag", r.ID))
			}
			return nil
		}
		if r.State != stBlocked || len(rateKeys(tx, r.ID)) == 0 || tx.Bucket(bktDue).Get(dueKey(r.RetryAt, r.ID)) == nil {
			bad = append(bad, fmt.Sprintf("instance %d flagged as waiting for a rate limit: %s, %d FIFO keys, due at %d indexed: %v",
				r.ID, name(stateNames, r.State), len(rateKeys(tx, r.ID)), r.RetryAt, tx.Bucket(bktDue).Get(dueKey(r.RetryAt, r.ID)) != nil))
		}
		return nil
	})
	_ = tx.Bucket(bktPools).ForEach(func(k, _ []byte) error {
		if p, ok := (*FSM)(nil).readPool(tx, string(k)); ok && p.Busy != poolBusy[p.Name] {
			bad = append(bad, fmt.Sprintf("pool %s counts %d busy, %d instances hold a slot", p.Name, p.Busy, poolBusy[p.Name]))
		}
		return nil
	})
	return bad
}

func rl(count int, per time.Duration, onLimit string) *model.RateLimit {
	return &model.RateLimit{Count: count, Per: model.Duration(per), OnLimit: onLimit}
}

// wheel plays the leader's scheduler wheel until leader time until:
// each time the earliest due time in the due index comes, a fire of
// every instance due then, and a lease of every READY instance (so an
// instance's StartedAt is when it became READY). It returns the ids
// leased, in order.
func (fx *policyFixture) wheel(until int64) []uint64 {
	fx.t.Helper()
	var started []uint64
	lease := func() {
		l, err := fx.f.ListInstances(model.InstanceFilter{State: model.StateReady, Limit: 1000})
		if err != nil {
			fx.t.Fatal(err)
		}
		var ids []uint64
		for _, in := range l.Instances {
			id, _ := model.ParseID(in.ID)
			ids = append(ids, id)
		}
		slices.Sort(ids)
		if len(ids) > 0 {
			fx.do(CmdLease, "", Lease{Executor: "e1", IDs: ids, LeaseMs: 600_000})
			started = append(started, ids...)
		}
	}
	lease()
	for range 1000 {
		next, ids := int64(math.MaxInt64), []uint64(nil)
		if err := fx.f.ScanDue(0, until+DueBucketSpan.Milliseconds(), func(id uint64, due int64) {
			switch {
			case due < next:
				next, ids = due, []uint64{id}
			case due == next:
				ids = append(ids, id)
			}
		}); err != nil {
			fx.t.Fatal(err)
		}
		if next > until {
			return started
		}
		fx.now = max(fx.now, next-10) // do adds 10 ms
		fx.do(CmdFire, "", Fire{Instances: ids})
		if err := auditSlots(fx.f); err != nil {
			fx.t.Fatal(err)
		}
		lease()
	}
	fx.t.Fatal("the wheel did not settle")
	return nil
}

// maxInWindow returns the most start times of ins (leased instances)
// in any half-open window of length per.
func maxInWindow(ins []model.Instance, per time.Duration) int {
	var at []int64
	for _, in := range ins {
		if !in.StartedAt.IsZero() {
			at = append(at, in.StartedAt.UnixMilli())
		}
	}
	slices.Sort(at)
	most := 0
	for i := range at {
		n := 0
		for j := i; j < len(at) && at[j] < at[i]+per.Milliseconds(); j++ {
			n++
		}
		most = max(most, n)
	}
	return most
}

// TestFSM_RateLimitBurst: six triggers at once of a task limited to 2
// per 2 s start one per second, oldest first, each at its turn, never
// more than 2 in 2 s; the waiting ones are BLOCKED, hold their slots and
// say what they wait for; with a burst of 2 the first two start at once
// and still no 2 s holds more than count+burst-1.
func TestFSM_RateLimitBurst(t *testing.T) {
	for _, burst := range []int{0, 2} {
		t.Run(fmt.Sprint("burst", burst), func(t *testing.T) {
			fx := newPolicyFixture(t, 8)
			lim := rl(2, 2*time.Second, "")
			lim.Burst = burst
			fx.mustPut(eventTask("r", model.Policy{MaxConcurrency: 10, RateLimit: lim}))
			var all, started []uint64
			for range 6 {
				all = append(all, fx.trigger("r"))
				started = append(started, fx.wheel(fx.now)...) // leased as soon as READY
			}
			want := "RUNNING BLOCKED BLOCKED BLOCKED BLOCKED BLOCKED"
			if burst == 2 {
				want = "RUNNING RUNNING BLOCKED BLOCKED BLOCKED BLOCKED"
			}
			if got := fx.states(all...); got != want {
				t.Fatalf("states %s, want %s", got, want)
			}
			if n, _ := fx.f.SlotsBusy("r"); n != 6 {
				t.Errorf("%d slots busy, want 6 (rate waiters hold theirs)", n)
			}
			f, err := fx.f.InstanceWhy(all[5])
			if err != nil || f.Rate == nil || f.Rate.What != "task r" || f.Rate.Limit.Count != 2 || f.Rate.At <= fx.now {
				t.Fatalf("why facts of a waiter: %+v %v", f.Rate, err)
			}
			if e, ok := fx.event(all[5], "blocked"); !ok || !strings.Contains(e.Message, "rate limit of task r (2 per 2s)") {
				t.Errorf("blocked event %+v", e)
			}
			started = append(started, fx.wheel(fx.now+60_000)...)
			if !slices.Equal(started, all) {
				t.Errorf("started %v, want FIFO %v", started, all)
			}
			ins := fx.instancesOf("r")
			if m := maxInWindow(ins, 2*time.Second); m > 2+max(burst, 1)-1 {
				t.Errorf("%d starts in one 2 s window", m)
			}
			first := ins[0].StartedAt.UnixMilli()
			for i, in := range ins {
				// Each waiter starts at its turn: one second apart, after the burst.
				turn := first + int64(max(0, i-max(burst, 1)+1))*1000
				if got := in.StartedAt.UnixMilli(); got < turn || got > turn+50 {
					t.Errorf("instance %d started at +%d ms, want its turn at +%d", i, got-first, turn-first)
				}
			}
		})
	}
}

// TestFSM_RateLimitSkip: onLimit skip skips a fire beyond the limit,
// naming it, and holds no slot; the next fire after the interval starts.
func TestFSM_RateLimitSkip(t *testing.T) {
	fx := newPolicyFixture(t, 8)
	fx.mustPut(eventTask("s", model.Policy{MaxConcurrency: 5, RateLimit: rl(1, time.Second, "skip")}))
	a, b := fx.trigger("s"), fx.trigger("s")
	if got := fx.states(a, b); got != "READY SKIPPED" {
		t.Fatalf("states %s", got)
	}
	if e, ok := fx.event(b, "skipped"); !ok || !strings.Contains(e.Message, "onLimit=skip: rate limit of task s (1 per 1s)") {
		t.Errorf("skipped event %+v", e)
	}
	if n, _ := fx.f.SlotsBusy("s"); n != 1 {
		t.Errorf("%d slots busy, want 1", n)
	}
	fx.now += 1000
	if c := fx.trigger("s"); fx.states(c) != "READY" {
		t.Errorf("a fire a second later: %s", fx.states(c))
	}
	if err := auditSlots(fx.f); err != nil {
		t.Fatal(err)
	}
}

// TestFSM_RateLimitPool: a pool's rate limit holds across its tasks, in
// one FIFO; a task's own limit holds its instances back without holding
// back another task of the pool; a retry is not a start.
func TestFSM_RateLimitPool(t *testing.T) {
	fx := newPolicyFixture(t, 8)
	if r := fx.do(CmdPutPool, "", PutPool{Pool: model.Pool{Name: "api", Slots: 10, RateLimit: rl(1, time.Second, "")}}); r.Err != nil {
		t.Fatal(r.Err)
	}
	fx.mustPut(eventTask("a", model.Policy{Pool: "api", MaxConcurrency: 5, MaxRetries: 1, RetryInterval: model.Duration(time.Second)}))
	fx.mustPut(eventTask("b", model.Policy{Pool: "api", MaxConcurrency: 5}))
	fx.mustPut(eventTask("slow", model.Policy{Pool: "api", MaxConcurrency: 5, RateLimit: rl(1, 10*time.Second, "")}))
	s1 := fx.trigger("slow")
	started := fx.wheel(fx.now)
	a1, s2, b1, a2 := fx.trigger("a"), fx.trigger("slow"), fx.trigger("b"), fx.trigger("a")
	if got := fx.states(s1, a1, s2, b1, a2); got != "RUNNING BLOCKED BLOCKED BLOCKED BLOCKED" {
		t.Fatalf("states %s", got)
	}
	if f, _ := fx.f.InstanceWhy(b1); f == nil || f.Rate == nil || f.Rate.What != "pool api" {
		t.Errorf("why of b1: %+v", f)
	}
	if f, _ := fx.f.InstanceWhy(s2); f == nil || f.Rate == nil || f.Rate.What != "task slow" {
		t.Errorf("why of s2: %+v", f)
	}
	if p := fx.pool("api"); p.Busy != 5 {
		t.Errorf("pool busy %d, want 5 (rate waiters hold their slots)", p.Busy)
	}
	t0 := fx.now
	started = append(started, fx.wheel(fx.now+60_000)...)
	if want := []uint64{s1, a1, b1, a2, s2}; !slices.Equal(started, want) {
		t.Errorf("started %v, want %v: the pool's FIFO not held back by slow's own limit", started, want)
	}
	if at := fx.inst(s2).StartedAt.UnixMilli(); at < t0+9_900 {
		t.Errorf("s2 started %d ms after the first, within slow's 10 s", at-t0)
	}
	all := append(fx.instancesOf("a"), append(fx.instancesOf("b"), fx.instancesOf("slow")...)...)
	if m := maxInWindow(all, time.Second); m > 1 {
		t.Errorf("%d starts of the pool in one second", m)
	}

	// A retry is not a start: a1 fails and comes back READY while the
	// pool's limit holds a fresh fire back.
	fx.do(CmdComplete, "", Complete{ID: a1, Attempt: 1, Report: model.CompleteRequest{Executor: "e1", ExitCode: 1, Error: "x", Retryable: true}})
	if got := fx.states(a1); got != "RETRYING" {
		t.Fatalf("a1 after a failure: %s", got)
	}
	fx.now += 2_000
	b3 := fx.trigger("b")
	fx.do(CmdFire, "", Fire{Instances: []uint64{a1}})
	b4 := fx.trigger("b")
	if got := fx.states(b3, a1, b4); got != "READY READY BLOCKED" {
		t.Errorf("states %s, want the retry READY beside a limited pool", got)
	}
	if err := auditSlots(fx.f); err != nil {
		t.Fatal(err)
	}
}

// TestFSM_RateLimitCancelAndChange: canceling a waiter leaves the FIFO
// and frees its slot; a limit removed by put_task starts the waiters at
// once; deleting a task cancels its waiters and drops its limiter.
func TestFSM_RateLimitCancelAndChange(t *testing.T) {
	fx := newPolicyFixture(t, 8)
	task := eventTask("c", model.Policy{MaxConcurrency: 10, RateLimit: rl(1, time.Minute, "")})
	fx.mustPut(task)
	a, b, c, d := fx.trigger("c"), fx.trigger("c"), fx.trigger("c"), fx.trigger("c")
	if r := fx.do(CmdDecide, "", Decide{ID: b, Action: DecideCancel}); r.Err != nil {
		t.Fatal(r.Err)
	}
	if got := fx.states(a, b, c, d); got != "READY CANCELED BLOCKED BLOCKED" {
		t.Fatalf("states %s", got)
	}
	if n, _ := fx.f.SlotsBusy("c"); n != 3 {
		t.Errorf("%d slots busy, want 3", n)
	}
	if err := auditSlots(fx.f); err != nil {
		t.Fatal(err)
	}
	task.Policy.RateLimit = nil
	fx.mustPut(task)
	if got := fx.states(c, d); got != "READY READY" {
		t.Fatalf("after the limit was removed: %s", got)
	}
	task.Policy.RateLimit = rl(1, time.Minute, "")
	fx.mustPut(task)
	g := fx.trigger("c")
	if got := fx.states(g); got != "BLOCKED" {
		t.Fatalf("a fire under the limit restored: %s, want BLOCKED (the limiter remembers a's start)", got)
	}
	if r := fx.do(CmdDeleteTask, "", TaskRef{Name: "c"}); r.Err != nil {
		t.Fatal(r.Err)
	}
	if got := fx.states(g); got != "CANCELED" {
		t.Errorf("waiter of a deleted task: %s", got)
	}
	if err := auditSlots(fx.f); err != nil {
		t.Fatal(err)
	}
	_ = fx.f.view(func(tx *bolt.Tx) error {
		if tx.Bucket(bktRateState).Get([]byte("tc")) != nil || tx.Bucket(bktRateWait).Stats().KeyN != 0 {
			t.Error("the deleted task's limiter is left")
		}
		return nil
	})

	old := newPolicyFixture(t, 7)
	if r := old.put(eventTask("x", model.Policy{RateLimit: rl(1, time.Minute, "")})); r.Err == nil || r.Err.Field != "policy.rateLimit" || r.Err.Code != model.CodePrecondition {
		t.Errorf("policy.rateLimit at protocol 7: %v", r.Err)
	}
}

// TestFSM_RateLimitTaskThenPool: an instance whose task's turn comes
// while its pool's limit is taken waits in the pool's FIFO behind those
// already there, keeping its place at the head of its task's FIFO: the
// task's next instance waits behind it; every start keeps both limits.
func TestFSM_RateLimitTaskThenPool(t *testing.T) {
	fx := newPolicyFixture(t, 8)
	fx.do(CmdPutPool, "", PutPool{Pool: model.Pool{Name: "p", Slots: 10, RateLimit: rl(1, time.Second, "")}})
	fx.mustPut(eventTask("x", model.Policy{Pool: "p", MaxConcurrency: 5, RateLimit: rl(1, 2*time.Second, "")}))
	fx.mustPut(eventTask("y", model.Policy{Pool: "p", MaxConcurrency: 5}))
	x1 := fx.trigger("x")
	started := fx.wheel(fx.now)
	base := fx.now
	x2, y1, y2, y3 := fx.trigger("x"), fx.trigger("y"), fx.trigger("y"), fx.trigger("y")
	started = append(started, fx.wheel(base+2500)...)
	if f, _ := fx.f.InstanceWhy(x2); f == nil || f.Rate == nil || f.Rate.What != "pool p" {
		t.Errorf("x2 after its task's turn: %+v, want waiting for the pool's", f.Rate)
	}
	x3 := fx.trigger("x")
	if f, _ := fx.f.InstanceWhy(x3); f == nil || f.Rate == nil || f.Rate.What != "task x" || f.Rate.At < fx.inst(x2).RetryAt.UnixMilli()+2000 {
		t.Errorf("x3: %+v, want waiting for task x, after x2's turn", f.Rate)
	}
	started = append(started, fx.wheel(base+60_000)...)
	if want := []uint64{x1, y1, y2, y3, x2, x3}; !slices.Equal(started, want) {
		t.Fatalf("started %v, want %v", started, want)
	}
	all := append(fx.instancesOf("x"), fx.instancesOf("y")...)
	if m := maxInWindow(all, time.Second); m > 1 {
		t.Errorf("%d starts of the pool in one second", m)
	}
	if m := maxInWindow(fx.instancesOf("x"), 2*time.Second); m > 1 {
		t.Errorf("%d starts of task x in two seconds", m)
	}
}

// TestFSM_RateLimitLoosened: a limit changed while instances wait for it
// re-times them at once: the next start comes one new interval after the
// last start, each waiter one more after it.
func TestFSM_RateLimitLoosened(t *testing.T) {
	fx := newPolicyFixture(t, 8)
	task := eventTask("l", model.Policy{MaxConcurrency: 10, RateLimit: rl(1, time.Minute, "")})
	fx.mustPut(task)
	a := fx.trigger("l")
	start := fx.now
	b, c := fx.trigger("l"), fx.trigger("l")
	turn := func(id uint64) int64 { return fx.inst(id).RetryAt.UnixMilli() - start }
	if tb, tc := turn(b), turn(c); tb != 60_000 || tc != 120_000 {
		t.Fatalf("turns +%d, +%d ms, want +60 s, +120 s", tb, tc)
	}
	task.Policy.RateLimit = rl(6, time.Minute, "") // one every 10 s
	fx.mustPut(task)
	if tb, tc := turn(b), turn(c); tb != 10_000 || tc != 20_000 {
		t.Errorf("after loosening: turns +%d, +%d ms, want +10 s, +20 s", tb, tc)
	}
	fx.wheel(start + 60_000)
	if got := fx.states(a, b, c); got != "RUNNING RUNNING RUNNING" {
		t.Errorf("states %s", got)
	}
	if at := fx.inst(c).StartedAt.UnixMilli() - start; at < 20_000 || at > 20_050 {
		t.Errorf("c started at +%d ms, want +20 s", at)
	}
	if err := auditSlots(fx.f); err != nil {
		t.Fatal(err)
	}
}
