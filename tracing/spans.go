package tracing

import (
	"encoding/binary"
	"encoding/hex"

	"go.opentelemetry.io/otel/trace"

	"github.com/ax-scheduler/ax/fsm"
	"github.com/ax-scheduler/ax/model"
)

// InstanceChanged queues a committed change for the spans it ends (the
// leader's observer: call it only for the changes of a term this node
// leads). It never blocks: a change that finds the queue full is dropped.
func (t *Tracer) InstanceChanged(c *fsm.InstanceChange) {
	if t == nil || (c.Renewed && !c.Confirmed) {
		return
	}
	t.mu.Lock()
	full := len(t.queued) >= queueSize
	if !full {
		t.queued = append(t.queued, *c)
	}
	t.mu.Unlock()
	if full {
		if t.dropped.Add(1) == 1 && t.cfg.Logger != nil {
			t.cfg.Logger.Warn("tracing: the span queue is full: dropping changes (their spans go missing)")
		}
	}
}

// handle builds and exports the spans change c ends.
func (t *Tracer) handle(c *fsm.InstanceChange) {
	specs := t.spans(c)
	if len(specs) == 0 {
		return
	}
	d := t.ids()
	tid := d.traceID(&t.idb, root(c.ID, c.Parent))
	if !t.sampler.sample(tid) {
		return
	}
	// What every span of c says, encoded once for them all.
	var id [16]byte // c's instance id as model.FormatID renders it
	hex.Encode(id[:], binary.BigEndian.AppendUint64(nil, c.ID))
	common := appendAttr(t.common[:0], fSpanAttributes, attr{key: "ax.task", s: c.Task})
	common = appendAttr(common, fSpanAttributes, attr{key: "ax.instance", b: id[:]})
	t.common = appendAttr(common, fSpanAttributes, attr{key: "ax.source", s: c.Source})
	var own, run trace.SpanID // the instance's span; the parent of this run's spans
	if !c.Renewed {           // (a renewal's lease span needs neither)
		own = d.spanID(&t.idb, c.ID, kindInstance, 0)
		run = own
		if c.Rerun {
			run = d.spanID(&t.idb, c.ID, kindRun, rerunOf(c))
		}
	}
	var attempt trace.SpanID // the span of the attempt just emitted, if one was
	for i := range specs {
		attempt = t.emit(c, d, tid, own, run, attempt, &specs[i])
	}
}

// rerunOf numbers the run of a re-run instance c (c.Rerun): it fired at
// the re-run (or, not due then, at its time).
func rerunOf(c *fsm.InstanceChange) int { return int(c.FiredAt) }

// waits are the states whose start a later span needs: the waits.
func waits(state string) bool {
	switch state {
	case model.StateReady, model.StateWaitingApproval, model.StateBlocked:
		return true
	}
	return false
}

// spans lists the spans change c ends (in t.specs, reused), and notes
// when c's instance entered its new state.
func (t *Tracer) spans(c *fsm.InstanceChange) []spec {
	out := t.specs[:0]
	defer func() { t.specs = out[:0] }()
	if c.Renewed {
		// The lease hands the attempt to its executor until the
		// executor's first word on it: its confirming heartbeat, or
		// the attempt's end if that came first.
		if c.Confirmed {
			s := spec{name: spanLease, kind: kindLease, n: c.Attempt, start: c.AttemptStart, end: c.At}
			s.str("ax.executor", c.Executor)
			out = append(out, s)
		}
		return out
	}
	was, seen := t.since[c.ID]
	// Noted: the start of a wait the record does not give. Not the
	// pending delayed instances (they may be millions, and their fire
	// span needs no note), nor an instance's first wait in the queue when
	// it began as it fired: fallbackStart reads that from the record, and
	// it is every instance's, so the map stays as small as the waits that
	// need it (approvals, blocks, the queue after a retry) rather than
	// holding every queued instance.
	if waits(c.State) && !firedIntoQueue(c) {
		if len(t.since) >= maxSince {
			clear(t.since)
		}
		t.since[c.ID] = entered{state: c.State, attempt: c.Attempt, at: c.At}
	} else if seen {
		delete(t.since, c.ID)
	}
	start := func() int64 { // when c's instance entered the state it left
		if seen && was.state == c.From && was.attempt == prevAttempt(c) {
			return was.at
		}
		return fallbackStart(c)
	}
	run := 0 // the run: the first, or a re-run's
	if c.Rerun {
		run = rerunOf(c)
	}
	switch c.From {
	case "", model.StateScheduled:
		if c.State != model.StateScheduled && c.FiredAt > 0 {
			due := min(c.ScheduledAt+c.Jitter, c.FiredAt)
			if c.Rerun {
				due = c.FiredAt // a re-run fires when it is asked to (or at its time, not due then)
			}
			s := spec{name: spanFire, kind: kindFire, n: run, start: due, end: c.FiredAt}
			s.int("ax.lateness_ms", c.FiredAt-due)
			out = append(out, s)
		}
	case model.StateReady:
		if c.State == model.StateRunning {
			out = append(out, spec{name: spanQueue, kind: kindQueue, n: c.Attempt, start: start(), end: c.At})
		}
	case model.StateWaitingApproval:
		a := spec{name: spanApproval, kind: kindApproval, n: c.Attempt, start: start(), end: c.At}
		a.str("ax.next_state", c.State)
		if c.State == model.StateCanceled {
			a.err = "rejected"
		}
		out = append(out, a)
	case model.StateBlocked:
		out = append(out, spec{name: spanBlocked, kind: kindBlocked, n: c.Attempt, start: start(), end: c.At})
	}
	if a := c.Ended; a != nil {
		s := spec{name: spanAttempt, kind: kindAttempt, n: a.Number, start: a.StartedAt.UnixMilli(), end: c.At}
		s.str("ax.executor", a.Executor)
		s.str("ax.outcome", a.Outcome)
		if s.start <= 0 {
			s.start = c.AttemptStart
		}
		if a.Host != "" {
			s.str("host.name", a.Host)
		}
		if a.ExitCode != nil {
			s.int("process.exit.code", int64(*a.ExitCode))
		}
		if a.HTTPStatus != 0 {
			s.int("http.response.status_code", int64(a.HTTPStatus))
		}
		if a.Outcome != model.OutcomeSuccess {
			s.err = a.Outcome
			if a.Error != "" {
				s.err = a.Outcome + ": " + a.Error
			}
		}
		out = append(out, s)
		if !c.Confirmed { // the end was the executor's first word on the attempt
			l := spec{name: spanLease, kind: kindLease, n: a.Number, start: s.start, end: c.At}
			l.str("ax.executor", a.Executor)
			out = append(out, l)
		}
	}
	if c.State == model.StateRetrying && c.RetryAt > 0 {
		out = append(out, spec{name: spanRetry, kind: kindRetry, n: c.Attempt, start: c.At, end: max(c.RetryAt, c.At)})
	}
	if terminal(c.State) && !terminal(c.From) {
		s := spec{name: spanInstance, kind: kindInstance, start: c.ScheduledAt, end: c.At}
		s.str("ax.state", c.State)
		s.int("ax.attempts", int64(c.Attempt))
		switch {
		case c.Rerun:
			// The instance's own span was sent when it first ended: a
			// re-run is a span of its own under it.
			s.name, s.kind, s.n, s.start = spanRerun, kindRun, run, c.FiredAt
		case c.Parent != 0:
			s.name = spanShard
		}
		if s.start <= 0 || s.start > c.At {
			s.start = min(c.FiredAt, c.At)
		}
		if c.State != model.StateSuccess && c.State != model.StateSkipped {
			s.err = c.State
		}
		if !c.Rerun && validLink(c.Link) {
			s.link = c.Link
		}
		out = append(out, s)
	}
	return out
}

// prevAttempt is the attempt number c's instance had before c: a lease
// (READY to RUNNING) starts the next one.
func prevAttempt(c *fsm.InstanceChange) int {
	if c.From == model.StateReady && c.State == model.StateRunning {
		return c.Attempt - 1
	}
	return c.Attempt
}

// firedIntoQueue says whether c put its instance in the queue as it
// fired, before any attempt: the start of that wait is its fire time,
// which fallbackStart finds in the record.
func firedIntoQueue(c *fsm.InstanceChange) bool {
	return c.State == model.StateReady && c.Attempt == 0 && c.FiredAt > 0 && c.FiredAt == c.At
}

// fallbackStart is when c's instance entered the state it left, as far
// as the record says, for a wait that began while another node led: it
// fired into it (no attempt yet), or it is the latest attempt's end at
// the earliest; unknown otherwise (the change's own time: an empty span).
func fallbackStart(c *fsm.InstanceChange) int64 {
	if prevAttempt(c) == 0 && c.FiredAt > 0 {
		return c.FiredAt
	}
	if c.From == model.StateReady && c.RetryAt > 0 && c.RetryAt <= c.At {
		return c.RetryAt // READY after a retry's backoff
	}
	return c.At
}

func terminal(s string) bool {
	switch s {
	case model.StateSuccess, model.StateFailed, model.StateTerminated, model.StateSkipped, model.StateCanceled:
		return true
	}
	return false
}

func flags(sampled bool) trace.TraceFlags {
	if sampled {
		return trace.FlagsSampled
	}
	return 0
}

// emit appends span s of c's instance to the batch, with its derived
// ids and explicit times: the instance's span is the root (a shard's is
// a child of its sharded instance's), a re-run's span its child, every
// other span a child of its run's (own: the instance's span; run: the
// re-run's, or the instance's), the lease a child of its attempt.
// It returns the span's id when it is an attempt's (the parent of its
// lease, which follows it in the same change: attempt).
func (t *Tracer) emit(c *fsm.InstanceChange, d *ids, tid trace.TraceID, own, run, attempt trace.SpanID, s *spec) trace.SpanID {
	var parent, sid trace.SpanID
	switch {
	case s.kind == kindInstance && c.Parent == 0: // the root: no parent
		sid = own
	case s.kind == kindInstance:
		parent, sid = d.spanID(&t.idb, c.Parent, kindInstance, 0), own
	case s.kind == kindRun:
		parent = own
	case s.kind == kindLease && attempt.IsValid():
		parent = attempt
	case s.kind == kindLease:
		parent = d.spanID(&t.idb, c.ID, kindAttempt, s.n)
	default:
		parent = run
	}
	if !sid.IsValid() {
		sid = d.spanID(&t.idb, c.ID, s.kind, s.n)
	}
	if s.kind != kindInstance && s.kind != kindFire && s.kind != kindRun {
		s.int("ax.attempt", int64(s.n))
	}
	w := wireSpan{traceID: tid[:], spanID: sid[:], name: s.name, start: uint64(s.start) * 1e6, end: uint64(max(s.end, s.start)) * 1e6,
		attrs: s.attrs[:s.na], common: t.common, err: s.err, link: s.link}
	if parent.IsValid() {
		w.parent = parent[:]
	}
	t.add(&w)
	if s.kind == kindAttempt {
		return sid
	}
	return trace.SpanID{}
}
