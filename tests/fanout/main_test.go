// Package fanout holds the multi-process tests of issue 24's fan-out
// and rollout (shared pools, priorities, rate limits, sharded and
// broadcast execution, canary rollouts), apart from tests/execution so
// that each package keeps well inside go test's package timeout on a
// busy machine.
package fanout

import (
	"testing"

	"github.com/ax-scheduler/ax/internal/clustertest"
	"github.com/ax-scheduler/ax/internal/testkit"
)

// axBinary is the ax executable installed once for all tests.
var axBinary string

func TestMain(m *testing.M) {
	clustertest.Main(m, clustertest.Binary{Pkg: clustertest.AxPkg, Path: &axBinary})
}

// axCLI runs axBinary with args and returns its stdout.
func axCLI(t *testing.T, args ...string) (string, error) {
	t.Helper()
	return clustertest.AxOutput(t, axBinary, args...)
}

// The shared harness (internal/clustertest) under the names this
// package's tests use.
var (
	startCluster = clustertest.StartProcesses
	ctxT         = testkit.Context
	shellTask    = clustertest.ShellTask
	trigger      = clustertest.Trigger
	hasEvent     = clustertest.HasEvent
	instancesOf  = clustertest.InstancesOf
	allInstances = clustertest.AllInstances
)
