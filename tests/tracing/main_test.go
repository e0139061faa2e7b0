// Package tracing holds the multi-process test of issue 26's
// OpenTelemetry traces: ax started with the OTEL_* variables pointing at
// an in-process OTLP/HTTP receiver.
package tracing

import (
	"testing"

	"github.com/ax-scheduler/ax/internal/clustertest"
)

// axBinary is the ax executable installed once for all tests.
var axBinary string

func TestMain(m *testing.M) {
	clustertest.Main(m, clustertest.Binary{Pkg: clustertest.AxPkg, Path: &axBinary})
}
