package tracing

import (
	"context"
	"syscall"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// discard is a client that marshals what it is sent as the OTLP/HTTP
// client does, and sends it nowhere (the cost measured is building,
// batching and encoding the spans, not the network).
type discard struct{}

func (discard) Start(context.Context) error { return nil }
func (discard) Stop(context.Context) error  { return nil }
func (discard) UploadTraces(_ context.Context, rs []*tracepb.ResourceSpans) error {
	_, err := proto.Marshal(&coltracepb.ExportTraceServiceRequest{ResourceSpans: rs})
	return err
}

// BenchmarkTracer_Instance: the leader's cost of tracing one instance's
// whole life (7 changes, 9 spans: life), built, batched and encoded,
// and of the traceparent of its two attempts.
func BenchmarkTracer_Instance(b *testing.B) {
	tr, err := New(context.Background(), Config{NodeID: "n1", Key: func() []byte { return []byte("key") },
		Getenv: env(map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}), Client: discard{}})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = tr.Shutdown(context.Background()) }()
	b.ReportAllocs()
	cpu0 := cpuTime()
	for i := 0; b.Loop(); i++ {
		for _, c := range life(uint64(i)) {
			tr.InstanceChanged(&c)
		}
		_ = tr.Traceparent(uint64(i), 0, 1)
		_ = tr.Traceparent(uint64(i), 0, 2)
		if i%1000 == 0 {
			_ = tr.ForceFlush(context.Background())
		}
	}
	_ = tr.ForceFlush(context.Background())
	// On a shared machine the wall time per op is mostly waiting: the
	// process's CPU time per instance is the cost.
	b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(b.N), "cpu-µs/instance")
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
