package tracing

import (
	"context"
	"encoding/hex"
	"strconv"
	"strings"
	"sync"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

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

// TestIDs_Golden pins the derivation (ids.go) to values computed apart
// from this code, so that a change to it, which splits every trace in
// flight at a rolling upgrade, is deliberate:
//
//	K=$(printf 'ax-trace\0k' | sha256sum | cut -c1-32)
//	printf '0000000000000000%016x' 5 | xxd -r -p | openssl enc -aes-128-ecb -K $K -nopad | xxd -p
//	printf '0104%012x%016x' 2 5 | xxd -r -p | openssl enc -aes-128-ecb -K $K -nopad | xxd -p | cut -c1-16
func TestIDs_Golden(t *testing.T) {
	d := newIDs([]byte("k"))
	if got := d.traceID(nil, 5).String(); got != "1e8b43685fbb36a69ff4d900f7b3751c" {
		t.Errorf("trace id of instance 5: %s", got)
	}
	if got := d.spanID(nil, 5, kindAttempt, 2).String(); got != "5e64056d518b6d7e" {
		t.Errorf("span id of attempt 2 of instance 5: %s", got)
	}
}

func TestIDs_Derivation(t *testing.T) {
	a, b := newIDs([]byte("cluster-a")), newIDs([]byte("cluster-b"))
	if a.traceID(nil, 7) != (newIDs([]byte("cluster-a"))).traceID(new(idBuf), 7) {
		t.Fatal("the same key and instance derive different trace ids")
	}
	if a.traceID(nil, 7) == b.traceID(nil, 7) || a.traceID(nil, 7) == a.traceID(nil, 8) {
		t.Fatal("trace ids collide across clusters or instances")
	}
	seen := map[trace.SpanID]string{}
	for _, k := range []int{kindInstance, kindFire, kindQueue, kindAttempt, kindLease, kindRetry, kindApproval, kindBlocked, kindRun} {
		for _, n := range []int{0, 1, 2, 1764806400000, 1764806400001} { // attempts, a re-run's fire times
			s := a.spanID(nil, 7, k, n)
			if !s.IsValid() {
				t.Fatalf("span id of kind %d, %d is invalid", k, n)
			}
			if prev, dup := seen[s]; dup {
				t.Fatalf("span id of kind %d, %d repeats %s", k, n, prev)
			}
			seen[s] = "seen"
		}
	}
	tp := traceparent(a.traceID(nil, 7), a.spanID(nil, 7, kindAttempt, 1), true)
	tid, sid, sampled, ok := ParseTraceparent(tp)
	if !ok || tid != a.traceID(nil, 7) || sid != a.spanID(nil, 7, kindAttempt, 1) || !sampled || len(tp) != 55 {
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

// memClient is an OTLP client keeping what it is sent.
type memClient struct {
	mu    sync.Mutex
	spans []*tracepb.Span
}

func (m *memClient) Start(context.Context) error { return nil }
func (m *memClient) Stop(context.Context) error  { return nil }
func (m *memClient) UploadTraces(_ context.Context, rs []*tracepb.ResourceSpans) error {
	// Through the wire format, as a collector gets them: the spans are
	// encoded already (wire.go).
	b, err := proto.Marshal(&coltracepb.ExportTraceServiceRequest{ResourceSpans: rs})
	if err != nil {
		return err
	}
	var req coltracepb.ExportTraceServiceRequest
	if err := proto.Unmarshal(b, &req); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, r := range req.ResourceSpans {
		for _, ss := range r.ScopeSpans {
			m.spans = append(m.spans, ss.Spans...)
		}
	}
	return nil
}

// newTest is a tracer sending to memory.
func newTest(t *testing.T, key string, extra map[string]string) (*Tracer, *memClient) {
	t.Helper()
	mc := &memClient{}
	e := map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}
	for k, v := range extra {
		e[k] = v
	}
	tr, err := New(context.Background(), Config{NodeID: "n1", Key: func() []byte { return []byte(key) }, Getenv: env(e), Client: mc})
	if err != nil || tr == nil {
		t.Fatalf("New: %v %v", tr, err)
	}
	t.Cleanup(func() { _ = tr.Shutdown(context.Background()) })
	return tr, mc
}

// spans are the spans sent, by name ("#n" after those of attempt n).
func spans(t *testing.T, tr *Tracer, mc *memClient) map[string]*tracepb.Span {
	t.Helper()
	if err := tr.ForceFlush(context.Background()); err != nil {
		t.Fatal(err)
	}
	mc.mu.Lock()
	defer mc.mu.Unlock()
	out := map[string]*tracepb.Span{}
	for _, s := range mc.spans {
		name := s.Name
		for _, a := range s.Attributes {
			if a.Key == "ax.attempt" {
				name += "#" + strconv.FormatInt(a.GetValue().GetIntValue(), 10)
			}
		}
		out[name] = s
	}
	return out
}

func tid(s *tracepb.Span) trace.TraceID { return trace.TraceID(s.TraceId) }
func sid(s *tracepb.Span) trace.SpanID  { return trace.SpanID(s.SpanId) }
func pid(s *tracepb.Span) trace.SpanID {
	var p trace.SpanID
	copy(p[:], s.ParentSpanId)
	return p
}
func failed(s *tracepb.Span) bool   { return s.GetStatus().GetCode() == tracepb.Status_STATUS_CODE_ERROR }
func startMs(s *tracepb.Span) int64 { return int64(s.StartTimeUnixNano / 1e6) }
func endMs(s *tracepb.Span) int64   { return int64(s.EndTimeUnixNano / 1e6) }

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
	want := d.traceID(nil, 5)
	root := d.spanID(nil, 5, kindInstance, 0)
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
		{"ax.lease#1", kindLease, 1, d.spanID(nil, 5, kindAttempt, 1), 1100, 1150, false},
		{"ax.attempt#1", kindAttempt, 1, root, 1100, 1300, true},
		{"ax.retry_backoff#1", kindRetry, 1, root, 1300, 1500, false},
		{"ax.queue#2", kindQueue, 2, root, 1500, 1600, false},
		{"ax.attempt#2", kindAttempt, 2, root, 1600, 1800, false},
		// Never confirmed by a heartbeat: its lease ends with its report.
		{"ax.lease#2", kindLease, 2, d.spanID(nil, 5, kindAttempt, 2), 1600, 1800, false},
	} {
		s, ok := got[w.name]
		if !ok {
			t.Errorf("no span %s (got %v)", w.name, keys(got))
			continue
		}
		if tid(s) != want || sid(s) != d.spanID(nil, 5, w.kind, w.n) || pid(s) != w.parent {
			t.Errorf("%s: trace %s span %s parent %s; want %s %s %s", w.name, tid(s), sid(s),
				pid(s), want, d.spanID(nil, 5, w.kind, w.n), w.parent)
		}
		if startMs(s) != w.start || endMs(s) != w.end {
			t.Errorf("%s: %d..%d, want %d..%d", w.name, startMs(s), endMs(s), w.start, w.end)
		}
		if failed(s) != w.err {
			t.Errorf("%s: status %v", w.name, s.Status)
		}
	}
	if len(got) != 9 {
		t.Errorf("%d spans, want 9: %v", len(got), keys(got))
	}
	// The traceparent an attempt is handed names the attempt's span.
	if tp, want := tr.Traceparent(5, 0, 2), traceparent(want, d.spanID(nil, 5, kindAttempt, 2), true); tp != want {
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
	if sid(q) != d.spanID(nil, 5, kindQueue, 2) || startMs(q) != 1500 || pid(q) != d.spanID(nil, 5, kindInstance, 0) {
		t.Errorf("queue#2 from a new leader: %s %d parent %s", sid(q), startMs(q), pid(q))
	}
	if r := got["ax.instance"]; sid(r) != d.spanID(nil, 5, kindInstance, 0) || tid(r) != d.traceID(nil, 5) {
		t.Errorf("root from a new leader: %v", r.SpanId)
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
	if a := got["ax.approval#0"]; startMs(a) != 100 || endMs(a) != 400 || !failed(a) {
		t.Errorf("approval: %d..%d %v", startMs(a), endMs(a), a.Status)
	}
	r := got["ax.instance"]
	if len(r.Links) != 1 || hex.EncodeToString(r.Links[0].TraceId) != "4bf92f3577b34da6a3ce929d0e0e4736" || len(r.ParentSpanId) != 0 {
		t.Errorf("root: links %v parent %v; want a link to the caller's trace and no parent", r.Links, r.ParentSpanId)
	}
	s := got["ax.shard"]
	if tid(s) != d.traceID(nil, 10) || pid(s) != d.spanID(nil, 10, kindInstance, 0) {
		t.Errorf("shard: trace %s parent %s, want its instance's", tid(s), pid(s))
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
	// A ratio decides on the trace id as the SDK's TraceIDRatioBased.
	for _, ratio := range []float64{0.1, 0.5} {
		s, err := parseSampler(env(map[string]string{"OTEL_TRACES_SAMPLER": "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG": strconv.FormatFloat(ratio, 'f', -1, 64)}))
		if err != nil {
			t.Fatal(err)
		}
		sdk := sdktrace.TraceIDRatioBased(ratio)
		d := newIDs([]byte("k"))
		n := 0
		for i := uint64(0); i < 400; i++ {
			got := s.sample(d.traceID(nil, i))
			if got {
				n++
			}
			if want := sdk.ShouldSample(sdktrace.SamplingParameters{TraceID: d.traceID(nil, i)}).Decision == sdktrace.RecordAndSample; got != want {
				t.Fatalf("ratio %v on trace %d: sampled %v, the SDK's sampler %v", ratio, i, got, want)
			}
		}
		if n < int(ratio*400)-60 || n > int(ratio*400)+60 {
			t.Errorf("ratio %v sampled %d of 400", ratio, n)
		}
	}
	if _, err := parseSampler(env(map[string]string{"OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": "2"})); err == nil {
		t.Error("a ratio of 2 was accepted")
	}
	var off *Tracer // tracing off: every method a no-op
	off.InstanceChanged(&life(5)[0])
	if off.Traceparent(5, 0, 1) != "" || off.TraceID(5, 0) != "" || off.Shutdown(context.Background()) != nil {
		t.Error("a nil tracer is not off")
	}
}

func keys(m map[string]*tracepb.Span) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestSince_OnlyWaits: the tracer notes when an instance entered a wait
// the record does not date (the queue after a retry's backoff, an
// approval, BLOCKED), not the pending delayed instances (there may be
// millions) nor the queue an instance fired into (its fire time dates
// it), and forgets it once the instance moves on.
func TestSince_OnlyWaits(t *testing.T) {
	tr, mc := newTest(t, "k", nil)
	for i := uint64(1); i <= 100; i++ {
		c := fsm.InstanceChange{ID: i, Task: "t", Source: model.SourceDelay, State: model.StateScheduled, ScheduledAt: 5000, At: 100}
		tr.InstanceChanged(&c)
	}
	_ = spans(t, tr, mc)
	if n := len(tr.since); n != 0 { // ForceFlush's hand-off orders this read after run's writes
		t.Errorf("%d pending instances noted, want none", n)
	}
	for _, c := range life(7)[:1] { // fired into READY
		tr.InstanceChanged(&c)
	}
	_ = spans(t, tr, mc)
	if _, held := tr.since[7]; held {
		t.Error("an instance that fired into READY is noted: its fire time dates that wait")
	}
	for _, c := range life(8)[:5] { // READY again after a retry's backoff
		tr.InstanceChanged(&c)
	}
	_ = spans(t, tr, mc)
	if e, held := tr.since[8]; !held || e.at != 1500 || e.state != model.StateReady {
		t.Errorf("the queue after a retry: noted %v %v, want READY at 1500", e, held)
	}
	for _, c := range life(8)[5:6] { // RUNNING
		tr.InstanceChanged(&c)
	}
	_ = spans(t, tr, mc)
	if _, held := tr.since[8]; held {
		t.Error("an instance that left READY is still noted")
	}
}

// TestSpans_Rerun: a re-run instance (life, then re-run at 3000 and
// succeeding at 3300) keeps its one root span: the re-run is an ax.rerun
// span under it, the parent of the re-run's queue wait and attempt, and
// no span id is sent twice.
func TestSpans_Rerun(t *testing.T) {
	tr, mc := newTest(t, "k", nil)
	changes := life(5)
	base := fsm.InstanceChange{ID: 5, Task: "t", Source: model.SourceCron, ScheduledAt: 900, FiredAt: 3000, Rerun: true, Executor: "e1"}
	for _, f := range []func(*fsm.InstanceChange){
		func(c *fsm.InstanceChange) {
			c.From, c.State, c.Attempt, c.At = model.StateSuccess, model.StateReady, 2, 3000
		},
		func(c *fsm.InstanceChange) {
			c.From, c.State, c.Attempt, c.At, c.AttemptStart = model.StateReady, model.StateRunning, 3, 3100, 3100
		},
		func(c *fsm.InstanceChange) {
			c.From, c.State, c.Attempt, c.At, c.AttemptStart = model.StateRunning, model.StateSuccess, 3, 3300, 3100
			c.Ended = &model.Attempt{Number: 3, Executor: "e1", StartedAt: model.UnixMilli(3100), Outcome: model.OutcomeSuccess}
		},
	} {
		c := base
		f(&c)
		changes = append(changes, c)
	}
	for _, c := range changes {
		tr.InstanceChanged(&c)
	}
	got := spans(t, tr, mc)
	d := newIDs([]byte("k"))
	root, rerun := got["ax.instance"], got["ax.rerun"]
	if root == nil || rerun == nil {
		t.Fatalf("spans %v, want ax.instance and ax.rerun", keys(got))
	}
	if sid(root) != d.spanID(nil, 5, kindInstance, 0) || endMs(root) != 1800 {
		t.Errorf("root: span %s ending %d, want the first run's", sid(root), endMs(root))
	}
	if pid(rerun) != sid(root) || startMs(rerun) != 3000 || endMs(rerun) != 3300 || tid(rerun) != tid(root) {
		t.Errorf("ax.rerun: parent %s %d..%d, want the root's child 3000..3300", pid(rerun), startMs(rerun), endMs(rerun))
	}
	for _, n := range []string{"ax.queue#3", "ax.attempt#3"} {
		if s := got[n]; s == nil || pid(s) != sid(rerun) {
			t.Errorf("%s: %v, want a child of ax.rerun", n, s)
		}
	}
	mc.mu.Lock()
	defer mc.mu.Unlock()
	seen, roots := map[trace.SpanID]string{}, 0
	for _, s := range mc.spans {
		if prev, dup := seen[sid(s)]; dup {
			t.Errorf("span id %s sent twice: %s and %s", sid(s), prev, s.Name)
		}
		seen[sid(s)] = s.Name
		if len(s.ParentSpanId) == 0 {
			roots++
		}
	}
	if roots != 1 {
		t.Errorf("%d root spans, want 1", roots)
	}
}

// TestSpans_ShardLeaseNewLeader: a leader that saw nothing of a shard
// before its confirming renewal puts its lease span in the sharded
// instance's trace (the renewal names it).
func TestSpans_ShardLeaseNewLeader(t *testing.T) {
	tr, mc := newTest(t, "k", nil)
	c := fsm.InstanceChange{ID: 11, Parent: 10, Task: "t", Source: model.SourceAPI, From: model.StateRunning, State: model.StateRunning,
		Attempt: 1, AttemptStart: 100, At: 150, Executor: "e1", Renewed: true, Confirmed: true}
	tr.InstanceChanged(&c)
	d := newIDs([]byte("k"))
	l := spans(t, tr, mc)["ax.lease#1"]
	if l == nil || tid(l) != d.traceID(nil, 10) || pid(l) != d.spanID(nil, 11, kindAttempt, 1) {
		t.Fatalf("the shard's lease: %v, want it in trace %s under attempt 1's span", l, d.traceID(nil, 10))
	}
}

// TestInstanceChanged_FullQueueDrops: with the queue full (run not
// taking it), a change is dropped and counted, never waited for.
func TestInstanceChanged_FullQueueDrops(t *testing.T) {
	tr := &Tracer{} // no run: nothing takes the queue
	c := life(1)[0]
	for range queueSize + 5 {
		tr.InstanceChanged(&c)
	}
	if len(tr.queued) != queueSize || tr.dropped.Load() != 5 {
		t.Fatalf("queued %d, dropped %d; want %d and 5", len(tr.queued), tr.dropped.Load(), queueSize)
	}
}

// TestBatching: the OTEL_BSP_* variables and their defaults (the batch
// is ax's 2048, not the specification's 512; a batch never exceeds the
// queue).
func TestBatching(t *testing.T) {
	for _, c := range []struct {
		name       string
		env        map[string]string
		max, queue int
		delay      string
	}{
		{"defaults", nil, 2048, 2048, "5s"},
		{"set", map[string]string{"OTEL_BSP_MAX_EXPORT_BATCH_SIZE": "512", "OTEL_BSP_MAX_QUEUE_SIZE": "4096", "OTEL_BSP_SCHEDULE_DELAY": "200"}, 512, 4096, "200ms"},
		{"batch capped by the queue", map[string]string{"OTEL_BSP_MAX_QUEUE_SIZE": "1000"}, 1000, 1000, "5s"},
		{"invalid ignored", map[string]string{"OTEL_BSP_MAX_EXPORT_BATCH_SIZE": "-1", "OTEL_BSP_SCHEDULE_DELAY": "soon"}, 2048, 2048, "5s"},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := newBatching(env(c.env))
			if b.max != c.max || b.maxQueue != c.queue || b.delay.String() != c.delay {
				t.Fatalf("batch %d, queue %d, delay %s; want %d, %d, %s", b.max, b.maxQueue, b.delay, c.max, c.queue, c.delay)
			}
		})
	}
}
