package tasks

import (
	"bytes"
	"testing"

	"github.com/ax-scheduler/ax/api"
	"github.com/ax-scheduler/ax/tracing"
)

// TestLink_WithoutTracer: a caller's traceparent on a submit or trigger
// is recorded by a node whose tracing is off (the leader that sends the
// instance's spans may trace); an invalid one, or none, records nothing.
func TestLink_WithoutTracer(t *testing.T) {
	ts := &Tasks{} // no Tracer: this node does not trace
	tp := "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	for _, tc := range []struct {
		name, traceparent string
		want              []byte
	}{
		{"valid", tp, tracing.Pack(tp)},
		{"invalid", "00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01", nil},
		{"none", "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ts.link(api.Caller{Traceparent: tc.traceparent})
			if !bytes.Equal(got, tc.want) || (tc.want == nil) != (got == nil) {
				t.Errorf("link = %x, want %x", got, tc.want)
			}
		})
	}
	if len(tracing.Pack(tp)) != 25 {
		t.Fatalf("Pack(%s) = %x", tp, tracing.Pack(tp))
	}
}
