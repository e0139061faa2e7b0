package clock

import (
	"context"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/model/member"
	"github.com/ax-scheduler/ax/wheel"
)

// Clock monitoring: every node asks every other member for its wall clock
// (GET /v1/internal/time, a member-only route) once per interval and
// estimates the offset NTP style: offset = remote - (t0+t1)/2, good to
// half the round trip. The cluster's clock is the median of the members'
// (this node's counts as offset 0); a member more than -max-clock-skew
// from it is reported in /healthz, the ax_clock_offset_seconds metric and
// the log. A node that finds its own clock off keeps to the cluster's time
// (Base) and, while it leads, hands leadership over (Guard).

// Peer is a member of the Raft configuration.
type Peer struct {
	ID    string
	HTTP  string
	Voter bool
}

// clockSample is a member's offset as last measured.
type clockSample struct {
	offset time.Duration // its clock minus this node's (uncorrected)
	rtt    time.Duration
	at     time.Time // when taken, on the raw clock
	gen    uint64    // this node's clock steps seen before it was taken
}

// memberClock is a member's clock in a view.
type memberClock struct {
	id     string
	self   bool
	voter  bool
	offset time.Duration // from the cluster's clock (this node's without a quorum)
	rtt    time.Duration
	age    time.Duration
}

// view is what the monitor concluded from its latest samples.
type view struct {
	at      time.Time // raw clock; zero before the first round
	quorum  bool      // a majority of the voters measured, not split evenly: it can tell whose clock is off
	self    time.Duration
	members []memberClock // by id, this node included
}

// usable reports whether v can decide about this node's clock at now.
func (v view) usable(now time.Time, stale time.Duration) bool {
	return v.quorum && !v.at.IsZero() && now.Sub(v.at) <= stale
}

// MonitorConfig configures a Monitor.
type MonitorConfig struct {
	Self string // this node's id
	// Raw is the node's clock, uncorrected (measurements and ages); Base
	// the time base over it, which the monitor corrects.
	Raw  wheel.Clock
	Base *Base
	// MaxSkew is how far a member's clock may be off from the cluster's;
	// Interval how often the members are asked.
	MaxSkew  time.Duration
	Interval time.Duration
	Logger   hclog.Logger
	// Peers lists the members; Ask reads a member's wall clock and its
	// latest clock step (GET /v1/internal/time).
	Peers func(ctx context.Context) ([]Peer, error)
	Ask   func(ctx context.Context, addr string) (time.Time, *member.ClockJump, error)
	// OnStep is called when this node's time base changes for a step of
	// its wall clock (the scheduler's time may have jumped); optional.
	OnStep func()
}

// Monitor measures the members' clocks. It runs on every node.
type Monitor struct {
	self     string
	raw      wheel.Clock // uncorrected: measurements and ages
	clock    *Base       // corrected by the monitor
	maxSkew  time.Duration
	interval time.Duration
	log      hclog.Logger
	peers    func(ctx context.Context) ([]Peer, error)
	ask      func(ctx context.Context, addr string) (time.Time, *member.ClockJump, error)
	onStep   func()
	kick     chan struct{} // measure now (this node's clock stepped)
	stepped  chan struct{} // a member's clock stepped (this node's included): the watchdog evaluates now
	solo     atomic.Bool   // the latest round found no other voter

	mu        sync.Mutex
	samples   map[string]clockSample
	view      view
	warned    map[string]warning           // last warning per member
	answered  map[string]time.Time         // raw clock: each member's last answer
	listed    map[string]time.Time         // raw clock: since when each member is in the configuration
	transfers int                          // leadership handed over for this node's clock
	jumps     map[string]*member.ClockJump // each member's latest step, as it last answered
}

// NewMonitor returns a monitor; Run runs it.
func NewMonitor(cfg MonitorConfig) *Monitor {
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	return &Monitor{self: cfg.Self, raw: cfg.Raw, clock: cfg.Base, maxSkew: cfg.MaxSkew, interval: cfg.Interval, log: cfg.Logger.Named("clock"),
		peers: cfg.Peers, ask: cfg.Ask, onStep: cfg.OnStep,
		samples: map[string]clockSample{}, warned: map[string]warning{}, answered: map[string]time.Time{}, listed: map[string]time.Time{},
		jumps: map[string]*member.ClockJump{}, kick: make(chan struct{}, 1), stepped: make(chan struct{}, 1)}
}

// warning is the last warning logged about a member: when (raw clock) and
// what it said.
type warning struct {
	at  time.Time
	msg string
}

// staleAfter is how long a sample counts.
func (m *Monitor) staleAfter() time.Duration { return StaleAfter(m.interval) }

// StaleAfter is how long a sample taken every interval counts: ten rounds,
// at least 10s. (A step of the time base waits as long for the monitor's
// verdict: NewBase's verifyWait.)
func StaleAfter(interval time.Duration) time.Duration { return max(10*interval, 10*time.Second) }

// recent is how long ago a member must have answered to be trusted as
// alive (to take leadership over): two rounds and the longest answer.
func (m *Monitor) recent() time.Duration { return 2*m.interval + m.timeout() }

// timeout bounds one measurement.
func (m *Monitor) timeout() time.Duration { return max(m.interval, m.maxSkew) }

// measureLoop measures once per interval, and at once when kicked, until
// ctx ends.
func (m *Monitor) measureLoop(ctx context.Context) {
	for {
		m.Measure(ctx)
		select {
		case <-ctx.Done():
			return
		case <-time.After(m.interval):
		case <-m.kick:
		}
	}
}

// measureSoon has measureLoop measure at once (this node's clock stepped: the
// samples taken before no longer count).
func (m *Monitor) measureSoon() {
	select {
	case m.kick <- struct{}{}:
	default:
	}
}

// Measure asks every other member for its clock at once, records the
// answers that came back within the bound on the round trip, and returns
// the new view (the guard measures at the start of a term when the last
// view is stale; Run measures every interval).
func (m *Monitor) Measure(ctx context.Context) view {
	peers, err := m.peers(ctx)
	if err != nil {
		m.log.Debug("listing members failed", "error", err)
		return m.current()
	}
	ctx, cancel := context.WithTimeout(ctx, m.timeout())
	defer cancel()
	var wg sync.WaitGroup
	for _, p := range peers {
		if p.ID == m.self || p.HTTP == "" {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			gen := m.clock.stepGen()
			t0 := m.raw.Now()
			remote, jump, err := m.ask(ctx, p.HTTP)
			t1 := m.raw.Now()
			if err != nil {
				m.log.Debug("reading a member's clock failed", "member", p.ID, "error", err)
				return
			}
			m.answer(p.ID, t1)
			m.noteJump(p.ID, jump)
			if m.clock.stepGen() != gen {
				m.log.Debug("clock reading discarded: this node's clock stepped meanwhile", "member", p.ID)
				return
			}
			m.record(p.ID, t0, t1, remote)
		}()
	}
	wg.Wait()
	return m.decide(peers)
}

// record keeps a sample taken between t0 and t1 (this node's clock) that
// read remote on the member, if its round trip is within the bound.
func (m *Monitor) record(id string, t0, t1, remote time.Time) {
	rtt := t1.Sub(t0)
	if rtt > m.maxSkew {
		m.log.Debug("clock reading discarded: round trip too long", "member", id, "rtt", rtt)
		return
	}
	gen := m.clock.stepGen()
	m.mu.Lock()
	m.samples[id] = clockSample{offset: remote.Sub(t0.Add(rtt / 2)), rtt: rtt, at: t1, gen: gen}
	m.mu.Unlock()
}

// noteJump keeps what a member said of its latest clock step.
func (m *Monitor) noteJump(id string, j *member.ClockJump) {
	m.mu.Lock()
	old := m.jumps[id]
	m.jumps[id] = j
	m.mu.Unlock()
	if j != nil && (old == nil || !old.At.Equal(j.At.Time)) {
		m.noteStep()
	}
}

// noteStep tells the watchdog a member's clock stepped.
func (m *Monitor) noteStep() {
	select {
	case m.stepped <- struct{}{}:
	default:
	}
}

// answer records that a member answered at t (raw clock), whatever its
// round trip.
func (m *Monitor) answer(id string, t time.Time) {
	m.mu.Lock()
	m.answered[id] = t
	m.mu.Unlock()
}

// Silent is a member that has not answered the clock monitor.
type Silent struct {
	ID   string
	Last time.Time     // its last answer (zero: none since this node listed it)
	Dur  time.Duration // since its last answer, or since it was listed
}

// Silent returns the other members that have not answered for more than
// grace, by id, and whether the monitor is running (its latest round is
// recent), without which it cannot tell.
func (m *Monitor) Silent(grace time.Duration) ([]Silent, bool) {
	now := m.raw.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.view.at.IsZero() || now.Sub(m.view.at) > m.staleAfter() {
		return nil, false
	}
	var out []Silent
	for id, since := range m.listed {
		last := m.answered[id]
		d := now.Sub(since)
		if !last.IsZero() {
			d = now.Sub(last)
		}
		if d > grace {
			out = append(out, Silent{ID: id, Last: last, Dur: d})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, true
}

// current returns the latest view.
func (m *Monitor) current() view {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.view
}

// decide computes the view from the fresh samples of peers, sets this
// node's correction and logs what changed.
func (m *Monitor) decide(peers []Peer) view {
	gen := m.clock.stepGen()
	now := m.raw.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	voters, selfVoter := 0, false
	known := map[string]bool{}
	for _, p := range peers {
		known[p.ID] = true
		if p.Voter {
			voters++
			selfVoter = selfVoter || p.ID == m.self
		}
	}
	for id := range m.samples {
		if !known[id] {
			delete(m.samples, id) // removed from the cluster
		}
	}
	for id := range m.listed {
		if !known[id] {
			delete(m.listed, id)
			delete(m.answered, id)
			delete(m.jumps, id)
		}
	}
	for _, p := range peers {
		if _, ok := m.listed[p.ID]; !ok && p.ID != m.self {
			m.listed[p.ID] = now
		}
	}
	if !known[m.self] {
		voters++ // a node that has not joined yet counts itself
		selfVoter = true
	}
	counted := 0
	if selfVoter {
		counted = 1
	}
	offsets := []time.Duration{0}
	v := view{at: now, members: []memberClock{{id: m.self, self: true, voter: selfVoter}}}
	others := 0 // other voters measured since this node's clock last stepped
	for _, p := range peers {
		s, ok := m.samples[p.ID]
		if p.ID == m.self || !ok || now.Sub(s.at) > m.staleAfter() || s.gen != gen {
			continue
		}
		v.members = append(v.members, memberClock{id: p.ID, voter: p.Voter, offset: s.offset, rtt: s.rtt, age: now.Sub(s.at)})
		if p.Voter {
			offsets = append(offsets, s.offset)
			counted++
			others++
		}
	}
	// A step of this node's clock held for a verdict: none can come
	// where no other voter can give one.
	m.solo.Store(voters <= 1)
	if voters <= 1 {
		m.clock.alone()
	}
	// A majority decides, unless it splits evenly between clocks further
	// apart than the bound: then nobody can tell whose is off.
	median, split := medianTowardZero(offsets, m.maxSkew)
	v.quorum = 2*counted > voters && !split
	if !v.quorum {
		median = 0
	}
	for i := range v.members {
		v.members[i].offset -= median
	}
	v.self = -median
	sort.Slice(v.members, func(i, j int) bool { return v.members[i].id < v.members[j].id })
	m.view = v
	if v.quorum {
		m.correct(v.self, others > 0)
	}
	m.report(v, now)
	return v
}

// medianTowardZero is the median of offsets; of the two middle values of
// an even count, the one nearer zero (this node's own clock), so that
// without a majority against it a node does not count as off. split
// reports an even count whose middle values are more than bound apart.
func medianTowardZero(offsets []time.Duration, bound time.Duration) (median time.Duration, split bool) {
	s := slices.Clone(offsets)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2], false
	}
	a, b := s[n/2-1], s[n/2]
	split = b-a > bound
	if abs(a) <= abs(b) {
		return a, split
	}
	return b, split
}

func abs(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}

// correct sets how much this node takes off its clock: its offset once it
// exceeds the bound, until it is back within half of it (so that an offset
// near the bound does not flap). A verdict (other voters were measured
// since this node's clock last stepped) also ends a hold of the step.
// Called with m.mu held.
func (m *Monitor) correct(self time.Duration, verdict bool) {
	was := m.clock.correction()
	var corr time.Duration
	if abs(self) > m.maxSkew || (was != 0 && abs(self) > m.maxSkew/2) {
		corr = self
	}
	if verdict {
		m.clock.verdict(corr)
	} else {
		m.clock.setCorrection(corr)
	}
	switch {
	case was == 0 && corr != 0:
		m.log.Info("correcting this node's clock: keeping to the cluster's time", "offset", self, "max_clock_skew", m.maxSkew)
	case was != 0 && corr == 0:
		m.log.Info("this node's clock is back within the bound; using it again", "offset", self, "max_clock_skew", m.maxSkew)
	}
}

// report logs the members whose clocks are off: at once when one is
// found, then at most once a minute each; and when one is back. Called
// with m.mu held.
func (m *Monitor) report(v view, now time.Time) {
	off := map[string]bool{}
	for _, mc := range v.members {
		if abs(mc.offset) <= m.maxSkew {
			continue
		}
		off[mc.id] = true
		msg := "clock skew: a member's clock is off from the cluster's"
		switch {
		case !v.quorum:
			msg = "clock skew: a member's clock differs from this node's, and too few members answered to tell whose is off"
		case mc.self:
			msg = "clock skew: this node's clock is off from the cluster's"
		}
		if last, seen := m.warned[mc.id]; seen && last.msg == msg && now.Sub(last.at) < time.Minute {
			continue
		}
		m.warned[mc.id] = warning{at: now, msg: msg}
		m.log.Warn(msg, "member", mc.id, "offset", mc.offset, "max_clock_skew", m.maxSkew)
	}
	for id := range m.warned {
		if !off[id] {
			delete(m.warned, id)
			m.log.Info("clock skew: member's clock back within the bound", "member", id, "max_clock_skew", m.maxSkew)
		}
	}
}

// handedOver counts a leadership transfer made because this node's clock
// was off.
func (m *Monitor) handedOver() {
	m.mu.Lock()
	m.transfers++
	m.mu.Unlock()
}

// Health is this node's part of /healthz: its own offset (once a quorum
// was measured), every member's, and its latest clock step.
func (m *Monitor) Health() (*model.Duration, *member.ClockHealth) {
	v := m.current()
	jump := m.clock.Jump()
	if v.at.IsZero() {
		if jump == nil {
			return nil, nil
		}
		return nil, &member.ClockHealth{MaxSkew: model.Duration(m.maxSkew), Members: []member.ClockOffset{}, Jump: jump}
	}
	h := &member.ClockHealth{MaxSkew: model.Duration(m.maxSkew), Quorum: v.quorum, Corrected: model.Duration(m.clock.correction()),
		Members: []member.ClockOffset{}, Jump: jump}
	for _, mc := range v.members {
		o := member.ClockOffset{Node: mc.id, Offset: model.Duration(mc.offset), RTT: model.Duration(mc.rtt), Age: model.Duration(mc.age)}
		h.Members = append(h.Members, o)
		if abs(mc.offset) > m.maxSkew {
			h.Skewed = append(h.Skewed, o)
		}
	}
	sort.SliceStable(h.Skewed, func(i, j int) bool { return abs(h.Skewed[i].Offset.Std()) > abs(h.Skewed[j].Offset.Std()) })
	if !v.quorum {
		return nil, h
	}
	self := model.Duration(v.self)
	return &self, h
}

var (
	clockOffsetDesc = prometheus.NewDesc("ax_clock_offset_seconds",
		"Each member's clock minus the cluster's (the median of the members' clocks), as this node measured it; from this node's clock without a quorum of measurements.",
		[]string{"node"}, nil)
	clockCorrectionDesc = prometheus.NewDesc("ax_clock_correction_seconds",
		"How much this node takes off its own clock to keep to the cluster's (0 while it is within -max-clock-skew).", nil, nil)
	clockTransfersDesc = prometheus.NewDesc("ax_clock_skew_transfers_total",
		"Leadership handed over by this node because its clock was off from the cluster's.", nil, nil)
)

// Describe implements prometheus.Collector.
func (m *Monitor) Describe(ch chan<- *prometheus.Desc) {
	ch <- clockOffsetDesc
	ch <- clockCorrectionDesc
	ch <- clockTransfersDesc
	ch <- clockStepsDesc
	ch <- clockHeldDesc
}

// Collect implements prometheus.Collector.
func (m *Monitor) Collect(ch chan<- prometheus.Metric) {
	v := m.current()
	for _, mc := range v.members {
		ch <- prometheus.MustNewConstMetric(clockOffsetDesc, prometheus.GaugeValue, mc.offset.Seconds(), mc.id)
	}
	ch <- prometheus.MustNewConstMetric(clockCorrectionDesc, prometheus.GaugeValue, m.clock.correction().Seconds())
	m.mu.Lock()
	n := m.transfers
	m.mu.Unlock()
	ch <- prometheus.MustNewConstMetric(clockTransfersDesc, prometheus.CounterValue, float64(n))
	collectSteps(m.clock, ch)
}

// Offset is a member's clock's offset from the cluster's.
type Offset struct {
	ID     string
	Offset time.Duration
}

// Off returns the members (this node included) whose clocks are off from
// the cluster's by more than MaxSkew, by id, and whether the monitor's
// latest view can tell (a quorum measured, recently).
func (m *Monitor) Off() ([]Offset, bool) {
	v := m.current()
	if !v.usable(m.raw.Now(), m.staleAfter()) {
		return nil, false
	}
	var out []Offset
	for _, mc := range v.members {
		if abs(mc.offset) > m.maxSkew {
			out = append(out, Offset{ID: mc.id, Offset: mc.offset})
		}
	}
	return out, true
}

// MaxSkew is how far a member's clock may be off from the cluster's.
func (m *Monitor) MaxSkew() time.Duration { return m.maxSkew }
