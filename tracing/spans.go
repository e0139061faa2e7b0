package tracing

import (
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

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
	t.pending.Add(1)
	select {
	case t.queue <- *c:
	default:
		t.pending.Add(-1)
		if t.dropped.Add(1) == 1 && t.cfg.Logger != nil {
			t.cfg.Logger.Warn("tracing: the span queue is full: dropping changes (their spans go missing)")
		}
	}
}

// handle builds and exports the spans change c ends.
func (t *Tracer) handle(c *fsm.InstanceChange) {
	defer t.pending.Add(-1)
	if c.Renewed && c.Confirmed && c.Parent == 0 {
		// A renewal does not name a shard's instance: the lease noted it.
		t.mu.Lock()
		if e, ok := t.since[c.ID]; ok && e.state == model.StateRunning {
			cc := *c
			cc.Parent = e.parent
			c = &cc
		}
		t.mu.Unlock()
	}
	specs := t.spans(c)
	if len(specs) == 0 {
		return
	}
	d := t.ids()
	tid := d.traceID(root(c.ID, c.Parent))
	if !t.sampled(tid) {
		return
	}
	// What every span of c says, shared by them (encoding does not mind).
	common := []*commonpb.KeyValue{str("ax.task", c.Task), str("ax.instance", model.FormatID(c.ID)), str("ax.source", c.Source)}
	for _, s := range specs {
		t.emit(c, d, tid, common, s)
	}
}

// waits are the states whose start a later span needs: the waits.
func waits(state string) bool {
	switch state {
	case model.StateReady, model.StateWaitingApproval, model.StateBlocked:
		return true
	}
	return false
}

// spans lists the spans change c ends, and notes when c's instance
// entered its new state.
func (t *Tracer) spans(c *fsm.InstanceChange) []spec {
	if c.Renewed {
		// The lease hands the attempt to its executor until the
		// executor's first word on it: its confirming heartbeat, or
		// the attempt's end if that came first.
		if c.Confirmed {
			return []spec{{name: spanLease, kind: kindLease, n: c.Attempt, start: c.AttemptStart, end: c.At,
				attrs: []attribute.KeyValue{attribute.String("ax.executor", c.Executor)}}}
		}
		return nil
	}
	t.mu.Lock()
	was, seen := t.since[c.ID]
	// Noted: the start of a wait, and a running shard's instance (its
	// renewals do not name it). Not the pending delayed instances: they
	// may be millions, and their fire span needs no note.
	if waits(c.State) || (c.State == model.StateRunning && c.Parent != 0) {
		if len(t.since) >= maxSince {
			clear(t.since)
		}
		t.since[c.ID] = entered{state: c.State, attempt: c.Attempt, at: c.At, parent: c.Parent}
	} else if seen {
		delete(t.since, c.ID)
	}
	t.mu.Unlock()
	start := func() int64 { // when c's instance entered the state it left
		if seen && was.state == c.From && was.attempt == prevAttempt(c) {
			return was.at
		}
		return fallbackStart(c)
	}
	var out []spec
	switch c.From {
	case "", model.StateScheduled:
		if c.State != model.StateScheduled && c.FiredAt > 0 {
			due := min(c.ScheduledAt+c.Jitter, c.FiredAt)
			out = append(out, spec{name: spanFire, kind: kindFire, start: due, end: c.FiredAt,
				attrs: []attribute.KeyValue{attribute.Int64("ax.lateness_ms", c.FiredAt-due)}})
		}
	case model.StateReady:
		if c.State == model.StateRunning {
			out = append(out, spec{name: spanQueue, kind: kindQueue, n: c.Attempt, start: start(), end: c.At})
		}
	case model.StateWaitingApproval:
		a := spec{name: spanApproval, kind: kindApproval, n: c.Attempt, start: start(), end: c.At,
			attrs: []attribute.KeyValue{attribute.String("ax.next_state", c.State)}}
		if c.State == model.StateCanceled {
			a.err = "rejected"
		}
		out = append(out, a)
	case model.StateBlocked:
		out = append(out, spec{name: spanBlocked, kind: kindBlocked, n: c.Attempt, start: start(), end: c.At})
	}
	if a := c.Ended; a != nil {
		s := spec{name: spanAttempt, kind: kindAttempt, n: a.Number, start: a.StartedAt.UnixMilli(), end: c.At,
			attrs: []attribute.KeyValue{attribute.String("ax.executor", a.Executor),
				attribute.String("ax.outcome", a.Outcome)}}
		if s.start <= 0 {
			s.start = c.AttemptStart
		}
		if a.Host != "" {
			s.attrs = append(s.attrs, attribute.String("host.name", a.Host))
		}
		if a.ExitCode != nil {
			s.attrs = append(s.attrs, attribute.Int("process.exit.code", *a.ExitCode))
		}
		if a.HTTPStatus != 0 {
			s.attrs = append(s.attrs, attribute.Int("http.response.status_code", a.HTTPStatus))
		}
		if a.Outcome != model.OutcomeSuccess {
			s.err = a.Outcome
			if a.Error != "" {
				s.err = a.Outcome + ": " + a.Error
			}
		}
		out = append(out, s)
		if !c.Confirmed { // the end was the executor's first word on the attempt
			out = append(out, spec{name: spanLease, kind: kindLease, n: a.Number, start: s.start, end: c.At,
				attrs: []attribute.KeyValue{attribute.String("ax.executor", a.Executor)}})
		}
	}
	if c.State == model.StateRetrying && c.RetryAt > 0 {
		out = append(out, spec{name: spanRetry, kind: kindRetry, n: c.Attempt, start: c.At, end: max(c.RetryAt, c.At)})
	}
	if terminal(c.State) && !terminal(c.From) {
		s := spec{name: spanInstance, kind: kindInstance, start: c.ScheduledAt, end: c.At,
			attrs: []attribute.KeyValue{attribute.String("ax.state", c.State), attribute.Int("ax.attempts", c.Attempt)}}
		if c.Parent != 0 {
			s.name = spanShard
		}
		if s.start <= 0 || s.start > c.At {
			s.start = min(c.FiredAt, c.At)
		}
		if c.State != model.StateSuccess && c.State != model.StateSkipped {
			s.err = c.State
		}
		if sc, ok := unpack(c.Link); ok {
			s.link = &sc
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

// emit builds span s of c's instance with its derived ids and explicit
// times: the instance's span is the root (a shard's is a child of its
// sharded instance's), every other span its child, the lease a child of
// its attempt.
func (t *Tracer) emit(c *fsm.InstanceChange, d *ids, tid trace.TraceID, common []*commonpb.KeyValue, s spec) {
	var parent []byte
	switch {
	case s.kind == kindInstance && c.Parent == 0: // the root: no parent
	case s.kind == kindInstance:
		p := d.spanID(c.Parent, kindInstance, 0)
		parent = p[:]
	case s.kind == kindLease:
		p := d.spanID(c.ID, kindAttempt, s.n)
		parent = p[:]
	default:
		p := d.spanID(c.ID, kindInstance, 0)
		parent = p[:]
	}
	sid := d.spanID(c.ID, s.kind, s.n)
	attrs := make([]*commonpb.KeyValue, 0, len(s.attrs)+len(common)+1)
	for _, a := range s.attrs {
		attrs = append(attrs, keyValue(a))
	}
	attrs = append(attrs, common...)
	if s.kind != kindInstance && s.kind != kindFire {
		attrs = append(attrs, &commonpb.KeyValue{Key: "ax.attempt", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: int64(s.n)}}})
	}
	ids := make([]byte, 0, 16+8)
	ids = append(append(ids, tid[:]...), sid[:]...)
	sp := &tracepb.Span{TraceId: ids[:16], SpanId: ids[16:], ParentSpanId: parent, Name: s.name,
		Kind: tracepb.Span_SPAN_KIND_INTERNAL, Flags: uint32(trace.FlagsSampled),
		StartTimeUnixNano: uint64(s.start) * 1e6, EndTimeUnixNano: uint64(max(s.end, s.start)) * 1e6, Attributes: attrs}
	if s.err != "" {
		sp.Status = &tracepb.Status{Code: tracepb.Status_STATUS_CODE_ERROR, Message: s.err}
	}
	if l := s.link; l != nil {
		lt, ls := l.TraceID(), l.SpanID()
		sp.Links = []*tracepb.Span_Link{{TraceId: lt[:], SpanId: ls[:], Flags: uint32(l.TraceFlags()),
			Attributes: []*commonpb.KeyValue{str("ax.link", "submitted by")}}}
	}
	t.add(sp)
}

func str(k, v string) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}}
}
