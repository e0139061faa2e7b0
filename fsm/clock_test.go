package fsm

import (
	"fmt"
	"io"
	"math/rand"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	bolt "go.etcd.io/bbolt"

	"github.com/ax-scheduler/ax/model"
)

// termApplier feeds commands to an FSM as consecutive log entries of a
// chosen term, as the leaders of a cluster would.
type termApplier struct {
	t     *testing.T
	f     *FSM
	index uint64
}

// apply applies c, stamped now, as the next entry of term.
func (a *termApplier) apply(term uint64, now int64, c *Command) *Result {
	a.t.Helper()
	a.index++
	c.Now = now
	out := a.f.ApplyBatch([]*raft.Log{{Index: a.index, Term: term, Type: raft.LogCommand, Data: c.Encode()}})
	r, ok := out[0].(*Result)
	if !ok {
		a.t.Fatalf("apply %s: response %T, want *Result", c.Type, out[0])
	}
	return r
}

// noops applies n entries of term without request ids, all stamped now,
// in batches as Raft hands them over.
func (a *termApplier) noops(term uint64, now int64, n int) {
	a.t.Helper()
	for n > 0 {
		k := min(n, 1000)
		logs := make([]*raft.Log, k)
		for i := range logs {
			a.index++
			c := &Command{Type: CmdNoop, Actor: "tester", Now: now, Body: []byte("{}")}
			logs[i] = &raft.Log{Index: a.index, Term: term, Type: raft.LogCommand, Data: c.Encode()}
		}
		a.f.ApplyBatch(logs)
		n -= k
	}
}

// trigger creates an instance of task "job" under request id req, and
// returns its id.
func (a *termApplier) trigger(term uint64, now int64, req string) string {
	a.t.Helper()
	r := a.apply(term, now, cmd(a.t, CmdTrigger, req, 0, Trigger{Task: "job"}))
	var s model.Submitted
	if err := r.Decode(&s); err != nil {
		a.t.Fatalf("trigger %s: %v", req, err)
	}
	return s.ID
}

// newClockFSM returns a state machine at protocol 3 with an event task
// "job", applied in term 1 at t0.
func newClockFSM(t *testing.T) (*FSM, *termApplier) {
	t.Helper()
	f := newTestFSM(t)
	a := &termApplier{t: t, f: f}
	job := model.Task{Name: "job", Trigger: model.Trigger{Type: model.TriggerEvent},
		Action: model.Action{Type: model.ActionShell, Command: "true"}, Policy: model.Policy{MaxConcurrency: 1000}}
	for _, c := range []*Command{cmd(t, CmdSetProto, "", 0, SetProto{Proto: 3}), cmd(t, CmdPutTask, "", 0, PutTask{Task: job})} {
		if r := a.apply(1, t0, c); r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	return f, a
}

// TestFSM_TimeHWM: the high-water mark is the latest leader time of any
// applied entry (a slower later leader does not lower it, an entry whose
// time is out of range does not count), and it survives a restart and a
// snapshot restore.
func TestFSM_TimeHWM(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fsm.db")
	f, err := Open(Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	a := &termApplier{t: t, f: f}
	fast := t0 + (10 * time.Minute).Milliseconds()
	steps := []struct {
		term uint64
		now  int64
		want int64
	}{
		{1, t0, t0},
		{1, t0 + 5, t0 + 5},
		{2, fast, fast},          // a leader 10 min fast
		{3, t0 + 10, fast},       // a correct successor does not lower it
		{3, maxTimeMs + 1, fast}, // refused by the header check
		{3, -1, fast},
	}
	for i, s := range steps {
		a.apply(s.term, s.now, &Command{Type: CmdNoop, Actor: "tester", ReqID: fmt.Sprint("r", i), Body: []byte("{}")})
		if got := f.TimeHWM(); got != s.want {
			t.Fatalf("after an entry of term %d at %d: TimeHWM() = %d, want %d", s.term, s.now, got, s.want)
		}
	}
	snap, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	var sink memSink
	if err := snap.Persist(&sink); err != nil {
		t.Fatal(err)
	}
	snap.Release()
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	g := openTest(t, path, false)
	if got := g.TimeHWM(); got != fast {
		t.Fatalf("after reopening: TimeHWM() = %d, want %d", got, fast)
	}
	h := newTestFSM(t)
	if err := h.Restore(io.NopCloser(&sink)); err != nil {
		t.Fatal(err)
	}
	if got := h.TimeHWM(); got != fast {
		t.Fatalf("after a restore: TimeHWM() = %d, want %d", got, fast)
	}
}

// TestReqClock_Advance: only time passing within one term counts.
func TestReqClock_Advance(t *testing.T) {
	type entry struct {
		term uint64
		now  int64
	}
	cases := []struct {
		name    string
		entries []entry
		want    int64
	}{
		{"one term", []entry{{1, 1000}, {1, 1500}, {1, 4000}}, 3000},
		{"a new term counts nothing for its first entry", []entry{{1, 1000}, {1, 2000}, {2, 602_000}, {2, 603_000}}, 2000},
		{"a slow leader counts from its own time", []entry{{1, 600_000}, {1, 601_000}, {2, 1000}, {2, 3000}}, 3000},
		{"a step back within a term counts nothing, then counts on", []entry{{1, 5000}, {1, 6000}, {1, 2000}, {1, 2500}}, 1500},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var c reqClock
			for _, e := range tc.entries {
				c = c.advance(e.term, e.now)
			}
			if c.ms != tc.want {
				t.Fatalf("request clock %d ms, want %d", c.ms, tc.want)
			}
		})
	}
}

// TestFSM_RequestRetentionByClock: from protocol 3 a request id is
// remembered for RequestTTL of request clock and RequestMinEntries log
// entries, so a leader whose clock is fast cannot make the cluster forget
// the ids of the last ten minutes, and an Idempotency-Key retried after it
// led still finds the instance it created.
func TestFSM_RequestRetentionByClock(t *testing.T) {
	ttl := RequestTTL.Milliseconds()
	cases := []struct {
		name string
		// run applies what happens after "key" was remembered in term 1
		// at t0 (entries of the later terms and times).
		run        func(a *termApplier)
		remembered bool
	}{
		{"a leader 10 min fast takes over", func(a *termApplier) {
			a.noops(2, t0+ttl+1000, RequestMinEntries)
			a.trigger(2, t0+ttl+2000, "other")
		}, true},
		{"leaders fast and slow alternate", func(a *termApplier) {
			for term := uint64(2); term < 8; term++ {
				now := t0 + int64(term%2)*2*ttl - ttl
				a.noops(term, now, RequestMinEntries/4)
				a.trigger(term, now, fmt.Sprint("other-", term))
			}
		}, true},
		{"TTL passes within a term but too few entries", func(a *termApplier) {
			a.noops(1, t0+ttl+1, RequestMinEntries-100)
			a.trigger(1, t0+ttl+2, "other")
		}, true},
		{"fewer than TTL within terms, many entries", func(a *termApplier) {
			a.noops(1, t0+ttl/2, RequestMinEntries)
			a.noops(2, t0+ttl, RequestMinEntries) // the gap to a new term does not count
			a.trigger(2, t0+ttl+ttl/2-1, "other")
		}, true},
		{"TTL and the entries pass within a term", func(a *termApplier) {
			a.noops(1, t0+1, RequestMinEntries)
			a.trigger(1, t0+ttl+1, "other")
		}, false},
		{"TTL passes across terms, counting only time within them", func(a *termApplier) {
			a.noops(1, t0+ttl/2, RequestMinEntries)
			a.noops(2, t0+(10*time.Hour).Milliseconds(), 1)
			a.trigger(2, t0+(10*time.Hour).Milliseconds()+ttl/2+1, "other")
		}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f, a := newClockFSM(t)
			first := a.trigger(1, t0, "key")
			tc.run(a)
			if got := f.knownRequest("key"); got != tc.remembered {
				t.Fatalf("request id remembered: %v, want %v", got, tc.remembered)
			}
			again := a.trigger(a.lastTerm(), a.lastNow(), "key")
			if tc.remembered && again != first {
				t.Fatalf("retry of the same key created %s, want the first instance %s", again, first)
			}
			if !tc.remembered && again == first {
				t.Fatalf("retry after the window answered from memory")
			}
		})
	}
}

// TestFSM_RequestRetentionLegacy: request ids remembered before protocol
// 3 (by wall time) are kept until the request clock has run a TTL, and
// then pruned a bounded number per entry.
func TestFSM_RequestRetentionLegacy(t *testing.T) {
	f := newTestFSM(t)
	a := &termApplier{t: t, f: f}
	job := model.Task{Name: "job", Trigger: model.Trigger{Type: model.TriggerEvent},
		Action: model.Action{Type: model.ActionShell, Command: "true"}, Policy: model.Policy{MaxConcurrency: 5000}}
	a.apply(1, t0, cmd(t, CmdPutTask, "", 0, PutTask{Task: job}))
	const n = maxLegacyPrune + 10
	for i := 0; i < n; i++ {
		a.apply(1, t0, cmd(t, CmdNoop, legacyID(i), 0, struct{}{}))
	}
	a.apply(1, t0, cmd(t, CmdSetProto, "", 0, SetProto{Proto: 3}))
	ttl := RequestTTL.Milliseconds()
	// A fast leader: the wall-time rule would forget them all now.
	a.noops(2, t0+2*ttl, 1)
	a.trigger(2, t0+2*ttl+1, "new-1")
	if !f.knownRequest(legacyID(0)) {
		t.Fatal("a legacy request id was forgotten before the request clock ran a TTL")
	}
	a.noops(2, t0+3*ttl+2, RequestMinEntries)
	a.trigger(2, t0+3*ttl+3, "new-2")
	if f.knownRequest(legacyID(0)) || !f.knownRequest(legacyID(n-1)) {
		t.Fatalf("after one entry past the TTL: %s known %v, %s known %v; want the first %d pruned",
			legacyID(0), f.knownRequest(legacyID(0)), legacyID(n-1), f.knownRequest(legacyID(n-1)), maxLegacyPrune)
	}
	a.trigger(2, t0+3*ttl+4, "new-3")
	if f.knownRequest(legacyID(n - 1)) {
		t.Fatal("legacy request ids left after the next entry")
	}
	if !f.knownRequest("new-2") {
		t.Fatal("a request id of protocol 3 pruned with the legacy ones")
	}
}

// legacyID names request ids so that they sort in creation order.
func legacyID(i int) string { return fmt.Sprintf("legacy-%04d", i) }

func (a *termApplier) lastTerm() uint64 {
	var term uint64
	_ = a.f.view(func(tx *bolt.Tx) error { term = loadReqClock(tx).term; return nil })
	return term
}

func (a *termApplier) lastNow() int64 {
	var now int64
	_ = a.f.view(func(tx *bolt.Tx) error { now = loadReqClock(tx).last; return nil })
	return now
}

// TestFSM_DeterministicProto3: at protocol 3 too, the same entries give
// the same state (request clock and high-water mark included) whatever
// the batch boundaries.
func TestFSM_DeterministicProto3(t *testing.T) {
	for seed := int64(1); seed <= 3; seed++ {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			a, b := newTestFSM(t), newTestFSM(t)
			for _, f := range []*FSM{a, b} {
				(&applier{t: t, f: f}).apply(cmd(t, CmdSetProto, "", t0, SetProto{Proto: 3}))
			}
			applyRandom(t, a, rand.New(rand.NewSource(seed)), 500, 1)
			applyRandom(t, b, rand.New(rand.NewSource(seed)), 500, 64)
			if da, db := dump(t, a), dump(t, b); da != db {
				t.Fatalf("state machines diverged (%d vs %d bytes)", len(da), len(db))
			}
			ca, cb := clockOf(t, a), clockOf(t, b)
			if ca != cb || a.TimeHWM() != b.TimeHWM() {
				t.Fatalf("request clocks %+v vs %+v, high-water marks %d vs %d", ca, cb, a.TimeHWM(), b.TimeHWM())
			}
			if ca.ms == 0 {
				t.Fatal("the request clock did not run")
			}
		})
	}
}

func clockOf(t *testing.T, f *FSM) reqClock {
	t.Helper()
	var c reqClock
	if err := f.view(func(tx *bolt.Tx) error { c = loadReqClock(tx); return nil }); err != nil {
		t.Fatal(err)
	}
	return c
}
