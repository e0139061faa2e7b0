package tracing

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/ax-scheduler/ax/fsm"
	"github.com/ax-scheduler/ax/model"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestEnabled(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		on   bool
		err  string
	}{
		{"nothing set", nil, false, ""},
		{"endpoint", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, true, ""},
		{"traces endpoint", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://x/v1/traces"}, true, ""},
		{"exporter otlp", map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, true, ""},
		{"exporter none wins over an endpoint", map[string]string{"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://x"}, false, ""},
		{"sdk disabled wins", map[string]string{"OTEL_SDK_DISABLED": "true", "OTEL_TRACES_EXPORTER": "otlp"}, false, ""},
		{"unknown exporter", map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"}, false, "OTEL_TRACES_EXPORTER=zipkin"},
		{"grpc refused", map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, true, "OTEL_EXPORTER_OTLP_PROTOCOL=grpc"},
		{"http/protobuf", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf"}, true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			on, err := Enabled(env(tc.env))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want one naming %s", err, tc.err)
				}
				return
			}
			if err != nil || on != tc.on {
				t.Fatalf("Enabled = %v, %v; want %v", on, err, tc.on)
			}
		})
	}
}

func TestIDs_Derivation(t *testing.T) {
	a, b := newIDs([]byte("cluster-a")), newIDs([]byte("cluster-b"))
	if a.traceID(7) != (newIDs([]byte("cluster-a"))).traceID(7) {
		t.Fatal("the same key and instance derive different trace ids")
	}
	if a.traceID(7) == b.traceID(7) || a.traceID(7) == a.traceID(8) {
		t.Fatal("trace ids collide across clusters or instances")
	}
	seen := map[trace.SpanID]string{}
	for _, k := range []int{kindInstance, kindFire, kindQueue, kindAttempt, kindLease, kindRetry, kindApproval, kindBlocked} {
		for n := 0; n < 3; n++ {
			s := a.spanID(7, k, n)
			if !s.IsValid() {
				t.Fatalf("span id of kind %d, %d is invalid", k, n)
			}
			if prev, dup := seen[s]; dup {
				t.Fatalf("span id of kind %d, %d repeats %s", k, n, prev)
			}
			seen[s] = "seen"
		}
	}
	tp := traceparent(a.traceID(7), a.spanID(7, kindAttempt, 1), true)
	tid, sid, sampled, ok := ParseTraceparent(tp)
	if !ok || tid != a.traceID(7) || sid != a.spanID(7, kindAttempt, 1) || !sampled || len(tp) != 55 {
		t.Fatalf("traceparent %q parses as %s %s %v %v", tp, tid, sid, sampled, ok)
	}
	sc, ok := unpack(Pack(tp))
	if !ok || sc.TraceID() != tid || sc.SpanID() != sid || !sc.IsSampled() {
		t.Fatalf("Pack/unpack of %q: %v %v", tp, sc, ok)
	}
}

func TestParseTraceparent(t *testing.T) {
	const good = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	for _, tc := range []struct {
		in      string
		ok      bool
		sampled bool
	}{
		{good, true, true},
		{"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00", true, false},
		{"01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-later", true, true}, // a later version's extra fields
		{"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x", false, false},   // version 00 has none
		{"ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", false, false},
		{"00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01", false, false},
		{"00-00000000000000000000000000000000-00f067aa0ba902b7-01", false, false},
		{"00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01", false, false},
		{"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7", false, false},
		{"00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", false, false},
		{"", false, false},
	} {
		_, _, sampled, ok := ParseTraceparent(tc.in)
		if ok != tc.ok || sampled != tc.sampled {
			t.Errorf("ParseTraceparent(%q) = sampled %v ok %v, want %v %v", tc.in, sampled, ok, tc.sampled, tc.ok)
		}
		if got := Pack(tc.in); (got != nil) != tc.ok {
			t.Errorf("Pack(%q) = %x", tc.in, got)
		}
	}
}

// newTest is a tracer exporting to memory.
func newTest(t *testing.T, key string, extra map[string]string) (*Tracer, *tracetest.InMemoryExporter) {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	e := map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}
	for k, v := range extra {
		e[k] = v
	}
	tr, err := New(context.Background(), Config{NodeID: "n1", Key: func() []byte { return []byte(key) }, Getenv: env(e), Exporter: exp})
	if err != nil || tr == nil {
		t.Fatalf("New: %v %v", tr, err)
	}
	t.Cleanup(func() { _ = tr.Shutdown(context.Background()) })
	return tr, exp
}

func spans(t *testing.T, tr *Tracer, exp *tracetest.InMemoryExporter) map[string]tracetest.SpanStub {
	t.Helper()
	if err := tr.ForceFlush(context.Background()); err != nil {
		t.Fatal(err)
	}
	out := map[string]tracetest.SpanStub{}
	for _, s := range exp.GetSpans() {
		name := s.Name
		for _, a := range s.Attributes {
			if a.Key == "ax.attempt" {
				name += "#" + a.Value.String()
			}
		}
		out[name] = s
	}
	return out
}

// life is an instance's changes: fired READY at 1000 (due 900), attempt
// 1 leased at 1100 and confirmed at 1150, failed at 1300 with a retry at
// 1500, READY again at 1500, attempt 2 leased at 1600, succeeded at 1800
// (unconfirmed: it ended before its first heartbeat).
func life(id uint64) []fsm.InstanceChange {
	base := fsm.InstanceChange{ID: id, Task: "t", Source: model.SourceCron, ScheduledAt: 900, FiredAt: 1000}
	ch := func(from, to string, attempt int, at int64, f func(*fsm.InstanceChange)) fsm.InstanceChange {
		c := base
		c.From, c.State, c.Attempt, c.At = from, to, attempt, at
		if f != nil {
			f(&c)
		}
		return c
	}
	started := func(at int64) func(*fsm.InstanceChange) {
		return func(c *fsm.InstanceChange) { c.AttemptStart, c.Executor = at, "e1" }
	}
	return []fsm.InstanceChange{
		ch("", model.StateReady, 0, 1000, nil),
		ch(model.StateReady, model.StateRunning, 1, 1100, started(1100)),
		ch(model.StateRunning, model.StateRunning, 1, 1150, func(c *fsm.InstanceChange) {
			started(1100)(c)
			c.Renewed, c.Confirmed = true, true
		}),
		ch(model.StateRunning, model.StateRetrying, 1, 1300, func(c *fsm.InstanceChange) {
			started(1100)(c)
			c.RetryAt, c.Confirmed = 1500, true
			c.Ended = &model.Attempt{Number: 1, Executor: "e1", StartedAt: model.UnixMilli(1100), Outcome: model.OutcomeFailed, Error: "exit 1"}
		}),
		ch(model.StateRetrying, model.StateReady, 1, 1500, func(c *fsm.InstanceChange) { c.RetryAt = 1500 }),
		ch(model.StateReady, model.StateRunning, 2, 1600, func(c *fsm.InstanceChange) { started(1600)(c); c.RetryAt = 1500 }),
		ch(model.StateRunning, model.StateSuccess, 2, 1800, func(c *fsm.InstanceChange) {
			started(1600)(c)
			c.Ended = &model.Attempt{Number: 2, Executor: "e1", StartedAt: model.UnixMilli(1600), Outcome: model.OutcomeSuccess}
		}),
	}
}

func TestSpans_InstanceLife(t *testing.T) {
	tr, exp := newTest(t, "k", nil)
	for _, c := range life(5) {
		tr.InstanceChanged(&c)
	}
	got := spans(t, tr, exp)
	d := newIDs([]byte("k"))
	tid := d.traceID(5)
	root := d.spanID(5, kindInstance, 0)
	ms := func(v int64) time.Time { return time.UnixMilli(v) }
	for _, w := range []struct {
		name       string
		kind, n    int
		parent     trace.SpanID
		start, end int64
		err        bool
	}{
		{"ax.instance", kindInstance, 0, trace.SpanID{}, 900, 1800, false},
		{"ax.fire", kindFire, 0, root, 900, 1000, false},
		{"ax.queue#1", kindQueue, 1, root, 1000, 1100, false},
		{"ax.lease#1", kindLease, 1, d.spanID(5, kindAttempt, 1), 1100, 1150, false},
		{"ax.attempt#1", kindAttempt, 1, root, 1100, 1300, true},
		{"ax.retry_backoff#1", kindRetry, 1, root, 1300, 1500, false},
		{"ax.queue#2", kindQueue, 2, root, 1500, 1600, false},
		{"ax.attempt#2", kindAttempt, 2, root, 1600, 1800, false},
		// Never confirmed by a heartbeat: its lease ends with its report.
		{"ax.lease#2", kindLease, 2, d.spanID(5, kindAttempt, 2), 1600, 1800, false},
	} {
		s, ok := got[w.name]
		if !ok {
			t.Errorf("no span %s (got %v)", w.name, keys(got))
			continue
		}
		if s.SpanContext.TraceID() != tid || s.SpanContext.SpanID() != d.spanID(5, w.kind, w.n) || s.Parent.SpanID() != w.parent {
			t.Errorf("%s: trace %s span %s parent %s; want %s %s %s", w.name, s.SpanContext.TraceID(), s.SpanContext.SpanID(),
				s.Parent.SpanID(), tid, d.spanID(5, w.kind, w.n), w.parent)
		}
		if !s.StartTime.Equal(ms(w.start)) || !s.EndTime.Equal(ms(w.end)) {
			t.Errorf("%s: %d..%d, want %d..%d", w.name, s.StartTime.UnixMilli(), s.EndTime.UnixMilli(), w.start, w.end)
		}
		if (s.Status.Code.String() == "Error") != w.err {
			t.Errorf("%s: status %v", w.name, s.Status)
		}
	}
	if len(got) != 9 {
		t.Errorf("%d spans, want 9: %v", len(got), keys(got))
	}
	// The traceparent an attempt is handed names the attempt's span.
	if tp, want := tr.Traceparent(5, 0, 2), traceparent(tid, d.spanID(5, kindAttempt, 2), true); tp != want {
		t.Errorf("Traceparent = %s, want %s", tp, want)
	}
}

// TestSpans_NewLeader: a leader that saw only the second half of an
// instance's life (the first led elsewhere) builds the same spans with
// the same ids, the queue wait starting at the record's retry time.
func TestSpans_NewLeader(t *testing.T) {
	tr, exp := newTest(t, "k", nil)
	for _, c := range life(5)[5:] {
		tr.InstanceChanged(&c)
	}
	got := spans(t, tr, exp)
	d := newIDs([]byte("k"))
	q := got["ax.queue#2"]
	if q.SpanContext.SpanID() != d.spanID(5, kindQueue, 2) || q.StartTime.UnixMilli() != 1500 || q.Parent.SpanID() != d.spanID(5, kindInstance, 0) {
		t.Errorf("queue#2 from a new leader: %s %d parent %s", q.SpanContext.SpanID(), q.StartTime.UnixMilli(), q.Parent.SpanID())
	}
	if r := got["ax.instance"]; r.SpanContext.SpanID() != d.spanID(5, kindInstance, 0) || r.SpanContext.TraceID() != d.traceID(5) {
		t.Errorf("root from a new leader: %v", r.SpanContext)
	}
}

func TestSpans_ShardApprovalLink(t *testing.T) {
	tr, exp := newTest(t, "k", nil)
	link := "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	for _, c := range []fsm.InstanceChange{
		{ID: 9, Task: "t", Source: model.SourceAPI, From: "", State: model.StateWaitingApproval, ScheduledAt: 100, FiredAt: 100, At: 100, Link: Pack(link)},
		{ID: 9, Task: "t", Source: model.SourceAPI, From: model.StateWaitingApproval, State: model.StateCanceled, ScheduledAt: 100, FiredAt: 100, At: 400, Link: Pack(link)},
		{ID: 11, Parent: 10, Task: "t", Source: model.SourceAPI, From: model.StateReady, State: model.StateSkipped, ScheduledAt: 100, FiredAt: 100, At: 200},
	} {
		tr.InstanceChanged(&c)
	}
	got := spans(t, tr, exp)
	d := newIDs([]byte("k"))
	if a := got["ax.approval#0"]; a.StartTime.UnixMilli() != 100 || a.EndTime.UnixMilli() != 400 || a.Status.Code.String() != "Error" {
		t.Errorf("approval: %d..%d %v", a.StartTime.UnixMilli(), a.EndTime.UnixMilli(), a.Status)
	}
	r := got["ax.instance"]
	if len(r.Links) != 1 || r.Links[0].SpanContext.TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" || r.Parent.IsValid() {
		t.Errorf("root: links %v parent %v; want a link to the caller's trace and no parent", r.Links, r.Parent)
	}
	s := got["ax.shard"]
	if s.SpanContext.TraceID() != d.traceID(10) || s.Parent.SpanID() != d.spanID(10, kindInstance, 0) {
		t.Errorf("shard: trace %s parent %s, want its instance's", s.SpanContext.TraceID(), s.Parent.SpanID())
	}
}

func TestSampling(t *testing.T) {
	tr, exp := newTest(t, "k", map[string]string{"OTEL_TRACES_SAMPLER": "always_off"})
	for _, c := range life(5) {
		tr.InstanceChanged(&c)
	}
	if got := spans(t, tr, exp); len(got) != 0 {
		t.Errorf("always_off exported %v", keys(got))
	}
	if tp := tr.Traceparent(5, 0, 1); !strings.HasSuffix(tp, "-00") || tr.TraceID(5, 0) != "" {
		t.Errorf("always_off: traceparent %s, exemplar trace %q", tp, tr.TraceID(5, 0))
	}
	// A ratio decides on the trace id: the same decision on every node.
	half, _ := sampler(env(map[string]string{"OTEL_TRACES_SAMPLER": "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG": "0.5"}))
	r := &Tracer{sampler: half}
	d := newIDs([]byte("k"))
	n := 0
	for i := uint64(0); i < 400; i++ {
		first := r.sampled(d.traceID(i))
		if first {
			n++
		}
		if again := (&Tracer{sampler: half}).sampled(d.traceID(i)); again != first {
			t.Fatal("a ratio sampler decided twice differently")
		}
	}
	if n < 140 || n > 260 {
		t.Errorf("ratio 0.5 sampled %d of 400", n)
	}
	if _, err := sampler(env(map[string]string{"OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": "2"})); err == nil {
		t.Error("a ratio of 2 was accepted")
	}
	var off *Tracer // tracing off: every method a no-op
	off.InstanceChanged(&life(5)[0])
	if off.Traceparent(5, 0, 1) != "" || off.TraceID(5, 0) != "" || off.Shutdown(context.Background()) != nil {
		t.Error("a nil tracer is not off")
	}
}

func keys(m map[string]tracetest.SpanStub) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
