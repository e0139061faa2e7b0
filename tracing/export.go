package tracing

import (
	"context"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/attribute"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
)

// The spans are OTLP messages encoded directly (wire.go), not SDK spans:
// their ids and times are given (derived, recorded), so the SDK's span
// life cycle (id generation, the clock, a snapshot per span, the
// conversion to OTLP at export) is all cost and no use. Measured
// (tracing's BenchmarkTracer_Instance), encoding them directly costs a
// fraction of the SDK's per instance. They are sent with the OTLP/HTTP
// exporter's client, which reads the OTEL_EXPORTER_OTLP_* variables.

// batching is run's batch of spans and when to send it: at
// OTEL_BSP_MAX_EXPORT_BATCH_SIZE spans (default defaultExportBatch) or
// every OTEL_BSP_SCHEDULE_DELAY ms (default 5000). Spans beyond
// OTEL_BSP_MAX_QUEUE_SIZE (default 2048) waiting to be sent are dropped.
type batching struct {
	spans    []byte // encoded, ScopeSpans.spans entries (wire.go)
	n        int    // spans in it
	scratch  []byte // a span's body, being encoded
	max      int
	maxQueue int
	delay    time.Duration
	timeout  time.Duration
	dropped  int64
}

func newBatching(getenv func(string) string) batching {
	n := func(k string, def int) int {
		if v, err := strconv.Atoi(getenv(k)); err == nil && v > 0 {
			return v
		}
		return def
	}
	b := batching{max: n("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", defaultExportBatch), maxQueue: n("OTEL_BSP_MAX_QUEUE_SIZE", 2048),
		delay: time.Duration(n("OTEL_BSP_SCHEDULE_DELAY", 5000)) * time.Millisecond,
		// The client's own timeout (OTEL_EXPORTER_OTLP_TIMEOUT) bounds
		// each request; this bounds the whole send.
		timeout: time.Duration(n("OTEL_BSP_EXPORT_TIMEOUT", 30000)) * time.Millisecond}
	b.max = min(b.max, b.maxQueue)
	return b
}

// defaultExportBatch is the spans a request carries unless
// OTEL_BSP_MAX_EXPORT_BATCH_SIZE says otherwise: 2048, the
// specification's default queue, not its default batch of 512. An
// instance's life is five spans or more, so at thousands of instances a
// second the specification's batch sends a request every ~100 instances,
// and a request costs the node about as much as building the spans in it
// (its syscalls and the client's copy of the body): tracing every
// instance cost ~6.9 µs of the node's CPU with 512 and ~4.2 µs with 2048,
// measured with both arms at once (docs/performance.md, "Tracing
// overhead"). 2048 spans are ~0.4 MB a request, well inside collectors'
// limits.
const defaultExportBatch = 2048

// add appends a span to the batch (dropping it when the batch holds a
// queue's worth) and sends the batch once full.
func (t *Tracer) add(s *wireSpan) {
	if t.batch.n >= t.batch.maxQueue {
		t.batch.dropped++
		t.dropped.Add(1)
		return
	}
	t.batch.spans, t.batch.scratch = appendSpan(t.batch.spans, t.batch.scratch, s)
	t.batch.n++
	if t.batch.n >= t.batch.max {
		t.send()
	}
}

// send sends the batch (run's goroutine; a failure is logged, and its
// spans are lost: the exporter's client retried what can be).
func (t *Tracer) send() {
	if t.batch.n == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), t.batch.timeout)
	defer cancel()
	// The spans, encoded, are the ScopeSpans message's unknown fields:
	// the client's marshalling copies them as they are.
	ss := &tracepb.ScopeSpans{Scope: &commonpb.InstrumentationScope{Name: scope}}
	ss.ProtoReflect().SetUnknown(t.batch.spans)
	err := t.client.UploadTraces(ctx, []*tracepb.ResourceSpans{{Resource: t.resource, ScopeSpans: []*tracepb.ScopeSpans{ss}}})
	if err != nil && t.cfg.Logger != nil {
		t.cfg.Logger.Warn("tracing: sending spans failed", "spans", t.batch.n, "error", err)
	}
	// The client marshalled the request before it returned: the bytes
	// are free again.
	t.batch.spans, t.batch.n = t.batch.spans[:0], 0
}

// scope is the instrumentation scope of the spans.
const scope = "github.com/ax-scheduler/ax/tracing"

// keyValues converts attributes to OTLP's.
func keyValues(kvs []attribute.KeyValue) []*commonpb.KeyValue {
	out := make([]*commonpb.KeyValue, 0, len(kvs))
	for _, kv := range kvs {
		out = append(out, keyValue(kv))
	}
	return out
}

func keyValue(kv attribute.KeyValue) *commonpb.KeyValue {
	v := &commonpb.AnyValue{}
	switch kv.Value.Type() {
	case attribute.INT64:
		v.Value = &commonpb.AnyValue_IntValue{IntValue: kv.Value.AsInt64()}
	case attribute.BOOL:
		v.Value = &commonpb.AnyValue_BoolValue{BoolValue: kv.Value.AsBool()}
	case attribute.FLOAT64:
		v.Value = &commonpb.AnyValue_DoubleValue{DoubleValue: kv.Value.AsFloat64()}
	default:
		v.Value = &commonpb.AnyValue_StringValue{StringValue: kv.Value.String()}
	}
	return &commonpb.KeyValue{Key: string(kv.Key), Value: v}
}
