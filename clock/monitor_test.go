package clock

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ax-scheduler/ax/model/member"
	"github.com/ax-scheduler/ax/wheel"
)

var clockT0 = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

// fakeCluster is the members' clocks as offsets from the fake clock of
// the node under test, and which of them answer.
type fakeCluster struct {
	mu      sync.Mutex
	clock   *wheel.FakeClock
	peers   []Peer
	offsets map[string]time.Duration // member's clock minus the node's
	down    map[string]bool
}

func (c *fakeCluster) list(context.Context) ([]Peer, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Peer(nil), c.peers...), nil
}

func (c *fakeCluster) ask(_ context.Context, addr string) (time.Time, *member.ClockJump, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.down[addr] {
		return time.Time{}, nil, errors.New("connection refused")
	}
	return c.clock.Now().Add(c.offsets[addr]), nil, nil
}

// newFakeMonitor returns a monitor of node n1 in a cluster of voters
// n1..nN (HTTP address = id), bound 1s, with a log in buf.
func newFakeMonitor(t *testing.T, voters int, buf *strings.Builder) (*Monitor, *fakeCluster) {
	t.Helper()
	fc := &fakeCluster{clock: wheel.NewFakeClock(clockT0), offsets: map[string]time.Duration{}, down: map[string]bool{}}
	for i := 1; i <= voters; i++ {
		id := "n" + string(rune('0'+i))
		fc.peers = append(fc.peers, Peer{ID: id, HTTP: id, Voter: true})
	}
	var out strings.Builder
	if buf == nil {
		buf = &out
	}
	log := hclog.New(&hclog.LoggerOptions{Output: buf, Level: hclog.Info})
	m := NewMonitor(MonitorConfig{Self: "n1", Raw: fc.clock, Base: &Base{raw: fc.clock}, MaxSkew: time.Second, Interval: time.Second,
		Logger: log, Peers: fc.list, Ask: fc.ask})
	return m, fc
}

func TestMedianTowardZero(t *testing.T) {
	s, m := time.Second, time.Minute
	cases := []struct {
		name      string
		offsets   []time.Duration
		want      time.Duration
		wantSplit bool
	}{
		{"alone", []time.Duration{0}, 0, false},
		{"odd", []time.Duration{0, -10 * m, -10 * m}, -10 * m, false},
		{"odd, one off", []time.Duration{0, 10 * m, 2 * s / 10}, 2 * s / 10, false},
		{"even, near", []time.Duration{0, 300 * time.Millisecond}, 0, false},
		{"even, split", []time.Duration{0, 10 * m}, 0, true},
		{"even, toward zero", []time.Duration{0, -10 * m, -10 * m, 500 * time.Millisecond}, 0, true},
		{"four, three agree", []time.Duration{0, -10 * m, -10 * m, -10 * m}, -10 * m, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, split := medianTowardZero(tc.offsets, s)
			if got != tc.want || split != tc.wantSplit {
				t.Fatalf("got %v (split %v), want %v (split %v)", got, split, tc.want, tc.wantSplit)
			}
		})
	}
}

// TestClockMonitor_measure: which clock the members find off, whether
// they can tell, and what this node corrects.
func TestClockMonitor_measure(t *testing.T) {
	m10 := 10 * time.Minute
	cases := []struct {
		name       string
		voters     int
		offsets    map[string]time.Duration
		down       []string
		nonVoters  []string
		wantQuorum bool
		wantSelf   time.Duration
		wantOff    map[string]time.Duration // members reported off, with their offset from the cluster
		wantCorr   time.Duration
	}{
		{"all agree", 3, map[string]time.Duration{"n2": 20 * time.Millisecond, "n3": -30 * time.Millisecond}, nil, nil,
			true, 0, nil, 0},
		{"this node fast", 3, map[string]time.Duration{"n2": -m10, "n3": -m10}, nil, nil,
			true, m10, map[string]time.Duration{"n1": m10}, m10},
		{"this node slow", 3, map[string]time.Duration{"n2": m10, "n3": m10}, nil, nil,
			true, -m10, map[string]time.Duration{"n1": -m10}, -m10},
		{"a follower fast", 3, map[string]time.Duration{"n2": m10, "n3": 0}, nil, nil,
			true, 0, map[string]time.Duration{"n2": m10}, 0},
		{"one down, the other agrees", 3, map[string]time.Duration{"n2": 0}, []string{"n3"}, nil,
			true, 0, nil, 0},
		{"one down, the other disagrees: nobody can tell", 3, map[string]time.Duration{"n2": m10}, []string{"n3"}, nil,
			false, 0, map[string]time.Duration{"n2": m10}, 0},
		{"two down: no majority", 3, nil, []string{"n2", "n3"}, nil,
			false, 0, nil, 0},
		{"five, this node fast", 5, map[string]time.Duration{"n2": -m10, "n3": -m10, "n4": -m10, "n5": 0}, nil, nil,
			true, m10, map[string]time.Duration{"n1": m10, "n5": m10}, m10},
		{"a non-voter is reported but does not vote", 3, map[string]time.Duration{"n2": 0, "n3": 0, "n4": m10}, nil, []string{"n4"},
			true, 0, map[string]time.Duration{"n4": m10}, 0},
		{"a single node is its own cluster", 1, nil, nil, nil, true, 0, nil, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var log strings.Builder
			m, fc := newFakeMonitor(t, tc.voters, &log)
			for _, id := range tc.nonVoters {
				fc.peers = append(fc.peers, Peer{ID: id, HTTP: id})
			}
			for id, off := range tc.offsets {
				fc.offsets[id] = off
			}
			for _, id := range tc.down {
				fc.down[id] = true
			}
			v := m.Measure(context.Background())
			if v.quorum != tc.wantQuorum || (v.quorum && v.self != tc.wantSelf) {
				t.Fatalf("quorum %v, self %v; want %v, %v", v.quorum, v.self, tc.wantQuorum, tc.wantSelf)
			}
			off := map[string]time.Duration{}
			for _, mc := range v.members {
				if abs(mc.offset) > m.maxSkew {
					off[mc.id] = mc.offset
				}
			}
			if len(off) != len(tc.wantOff) {
				t.Fatalf("members off %v, want %v", off, tc.wantOff)
			}
			for id, want := range tc.wantOff {
				if got, ok := off[id]; !ok || abs(got-want) > time.Millisecond {
					t.Fatalf("members off %v, want %v", off, tc.wantOff)
				}
				if !strings.Contains(log.String(), "member="+id) {
					t.Errorf("the log does not name %s:\n%s", id, log.String())
				}
			}
			if got := m.clock.correction(); got != tc.wantCorr {
				t.Fatalf("correction %v, want %v", got, tc.wantCorr)
			}
			offset, h := m.Health()
			if h == nil || h.Quorum != tc.wantQuorum || len(h.Skewed) != len(tc.wantOff) {
				t.Fatalf("health %+v, want quorum %v and %d skewed", h, tc.wantQuorum, len(tc.wantOff))
			}
			if (offset != nil) != tc.wantQuorum || (offset != nil && offset.Std() != tc.wantSelf) {
				t.Fatalf("health clockOffset %v, want %v (quorum %v)", offset, tc.wantSelf, tc.wantQuorum)
			}
		})
	}
}

// TestClockMonitor_correction: a node corrects once it is off by more
// than the bound, follows its offset while off, and stops once back
// within half the bound; samples that grow stale stop counting, and the
// correction then stays until a majority decides again.
func TestClockMonitor_correction(t *testing.T) {
	m, fc := newFakeMonitor(t, 3, nil)
	steps := []struct {
		offset time.Duration // this node's clock minus the others'
		down   bool
		want   time.Duration
	}{
		{800 * time.Millisecond, false, 0},
		{1500 * time.Millisecond, false, 1500 * time.Millisecond},
		{800 * time.Millisecond, false, 800 * time.Millisecond},
		{-700 * time.Millisecond, false, -700 * time.Millisecond},
		{300 * time.Millisecond, false, 0},
		{10 * time.Minute, false, 10 * time.Minute},
		{0, true, 10 * time.Minute}, // peers down, samples stale: keep it
		{0, false, 0},
	}
	for i, s := range steps {
		fc.mu.Lock()
		for _, id := range []string{"n2", "n3"} {
			fc.offsets[id], fc.down[id] = -s.offset, s.down
		}
		fc.mu.Unlock()
		if s.down {
			fc.clock.Advance(m.staleAfter() + time.Second)
		}
		m.Measure(context.Background())
		if got := m.clock.correction(); got != s.want {
			t.Fatalf("step %d (offset %v, down %v): correction %v, want %v", i, s.offset, s.down, got, s.want)
		}
		if got, want := m.clock.Now(), fc.clock.Now().Add(-s.want); !got.Equal(want) {
			t.Fatalf("step %d: corrected clock %v, want %v", i, got, want)
		}
	}
}

// TestClockMonitor_roundTrip: the offset is taken against the middle of
// the round trip, and a reading whose round trip exceeds the bound is
// not kept.
func TestClockMonitor_roundTrip(t *testing.T) {
	m, fc := newFakeMonitor(t, 3, nil)
	slow := func(rtt time.Duration) func(context.Context, string) (time.Time, *member.ClockJump, error) {
		return func(_ context.Context, addr string) (time.Time, *member.ClockJump, error) {
			fc.clock.Advance(rtt / 2)
			now := fc.clock.Now().Add(fc.offsets[addr])
			fc.clock.Advance(rtt / 2)
			return now, nil, nil
		}
	}
	fc.peers = fc.peers[:2]
	fc.offsets["n2"] = 5 * time.Second
	m.ask = slow(400 * time.Millisecond)
	v := m.Measure(context.Background())
	if len(v.members) != 2 || v.members[1].offset != 5*time.Second || v.members[1].rtt != 400*time.Millisecond {
		t.Fatalf("members %+v, want n2 at +5s with a 400ms round trip", v.members)
	}
	fc.offsets["n2"] = 0
	m.ask = slow(3 * time.Second)
	v = m.Measure(context.Background())
	if v.members[1].offset != 5*time.Second {
		t.Fatalf("a reading with a 3s round trip replaced the sample: %+v", v.members)
	}
}

func TestGuardDecision(t *testing.T) {
	s := time.Second
	recent := 3 * s
	now := clockT0.Add(s / 2) // the view is half a second old
	member := func(id string, off time.Duration, voter bool, age time.Duration) memberClock {
		return memberClock{id: id, voter: voter, offset: off, age: age}
	}
	self := memberClock{id: "n1", self: true, voter: true}
	mkView := func(quorum bool, off time.Duration, members ...memberClock) view {
		return view{at: clockT0, quorum: quorum, self: off, members: append([]memberClock{self}, members...)}
	}
	cases := []struct {
		name        string
		view        view
		wantOff     bool
		wantTargets []string
	}{
		{"within the bound", mkView(true, s/2, member("n2", 0, true, 0)), false, nil},
		{"off without a quorum", mkView(false, 10*s), false, nil},
		{"off: the most recently heard first", mkView(true, 600*s,
			member("n2", 300*time.Millisecond, true, 200*time.Millisecond), member("n3", -100*time.Millisecond, true, 100*time.Millisecond)),
			true, []string{"n3", "n2"}},
		{"off: not to a skewed, silent or non-voting member", mkView(true, 600*s,
			member("n2", 2*s, true, 0), member("n3", 0, true, recent-s/4), member("n4", 0, false, 0), member("n5", 0, true, s)),
			true, []string{"n5"}},
		{"off: nobody to hand over to", mkView(true, -600*s, member("n2", 2*s, true, 0)), true, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			off, targets := guardDecision(tc.view, s, recent, now)
			if off != tc.wantOff || !slices.Equal(targets, tc.wantTargets) {
				t.Fatalf("got off %v, targets %q; want %v, %q", off, targets, tc.wantOff, tc.wantTargets)
			}
		})
	}
}

// TestClockGuard_check: a leader whose clock is off hands leadership to
// the member nearest the cluster's clock, once per check until it has; a
// failed transfer leaves it leading (on the cluster's time).
func TestClockGuard_check(t *testing.T) {
	var log strings.Builder
	m, fc := newFakeMonitor(t, 3, &log)
	fc.offsets["n2"], fc.offsets["n3"] = -10*time.Minute, -10*time.Minute-200*time.Millisecond
	var calls []string
	failing := map[string]bool{"n2": true, "n3": true}
	g := newGuard(m, func(_ context.Context, id string) error {
		calls = append(calls, id)
		if failing[id] {
			return errors.New("timed out")
		}
		return nil
	}, hclog.New(&hclog.LoggerOptions{Output: &log}))
	v := m.Measure(context.Background())
	if g.check(context.Background(), v) {
		t.Fatal("check reported a hand-over that failed")
	}
	if len(calls) != 2 {
		t.Fatalf("transfers tried to %v, want both members", calls)
	}
	failing["n3"] = false
	calls = nil
	if !g.check(context.Background(), v) {
		t.Fatal("check did not hand leadership over")
	}
	if !slices.Contains(calls, "n3") || calls[len(calls)-1] != "n3" {
		t.Fatalf("transfers tried to %v, want the last to n3", calls)
	}
	if m.transfers != 1 || !strings.Contains(log.String(), "handing leadership over") {
		t.Fatalf("transfers counted %d, log:\n%s", m.transfers, log.String())
	}
	calls = nil
	fc.offsets["n2"], fc.offsets["n3"] = 0, 0
	if g.check(context.Background(), m.Measure(context.Background())) || len(calls) != 0 {
		t.Fatalf("a leader with a good clock handed over (transfers %v)", calls)
	}
}

func TestSkewClock(t *testing.T) {
	fake := wheel.NewFakeClock(clockT0)
	c := &Base{raw: fake}
	c.setCorrection(10 * time.Minute)
	if got := c.Now(); !got.Equal(clockT0.Add(-10 * time.Minute)) {
		t.Fatalf("Now() = %v, want the raw clock less the correction", got)
	}
	tm := c.NewTimerAt(clockT0.Add(-10*time.Minute + time.Second))
	fake.Advance(999 * time.Millisecond)
	select {
	case <-tm.C():
		t.Fatal("a timer for 1s from now fired after 999ms")
	default:
	}
	fake.Advance(time.Millisecond)
	select {
	case <-tm.C():
	default:
		t.Fatal("a timer for 1s from now did not fire after 1s")
	}
}

// TestClockMonitor_logs: a member off is logged when found, again when
// what can be said of it changes (from "cannot tell" to "off"), at most
// once a minute otherwise, and when it is back.
func TestClockMonitor_logs(t *testing.T) {
	var log strings.Builder
	m, fc := newFakeMonitor(t, 3, &log)
	fc.offsets["n2"], fc.down["n3"] = 10*time.Minute, true
	count := func(msg string) int { return strings.Count(log.String(), msg) }
	const cannot, off, back = "too few members answered", "a member's clock is off from the cluster's", "back within the bound"
	steps := []struct {
		do                  func()
		cannot, off, backOK int
	}{
		{func() {}, 1, 0, 0},
		{func() { fc.down["n3"] = false }, 1, 1, 0},
		{func() { fc.clock.Advance(30 * time.Second) }, 1, 1, 0},
		{func() { fc.clock.Advance(31 * time.Second) }, 1, 2, 0},
		{func() { fc.offsets["n2"] = 0 }, 1, 2, 1},
	}
	for i, s := range steps {
		s.do()
		m.Measure(context.Background())
		if count(cannot) != s.cannot || count(off) != s.off || count(back) != s.backOK {
			t.Fatalf("step %d: logged %d/%d/%d (cannot tell/off/back), want %d/%d/%d:\n%s", i,
				count(cannot), count(off), count(back), s.cannot, s.off, s.backOK, log.String())
		}
	}
}
