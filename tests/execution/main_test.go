package execution

import (
	"testing"

	"github.com/ax-scheduler/ax/internal/agenttest"
	"github.com/ax-scheduler/ax/internal/clustertest"
	"github.com/ax-scheduler/ax/internal/testkit"
)

// axBinary is the ax executable installed once for all tests.
var axBinary string

func TestMain(m *testing.M) {
	clustertest.Main(m, clustertest.Binary{Pkg: clustertest.AxPkg, Path: &axBinary})
}

// both are the implementations a scenario written against
// clustertest.Cluster runs on (clustertest.Each): real processes, and
// agents in the test's process.
var both = []clustertest.Impl{clustertest.ProcessImpl(), agenttest.Impl(nil)}

// axCLI runs axBinary with args and returns its stdout.
func axCLI(t *testing.T, args ...string) (string, error) {
	t.Helper()
	return clustertest.AxOutput(t, axBinary, args...)
}

// The shared harness (internal/clustertest) under the names this
// package's tests use.
var (
	startCluster  = clustertest.StartProcesses
	withArgs      = clustertest.WithArgs
	ctxT          = testkit.Context
	eventTask     = clustertest.EventTask
	shellTask     = clustertest.ShellTask
	dailyTask     = clustertest.DailyTask
	perSecondTask = clustertest.PerSecondTask
	trigger       = clustertest.Trigger
	allInstances  = clustertest.AllInstances
	fireTimes     = clustertest.FireTimes
	hasEvent      = clustertest.HasEvent
	waitHealth    = clustertest.WaitHealth
	newWebhook    = clustertest.NewWebhook
	procGone      = clustertest.ProcGone
	instancesOf   = clustertest.InstancesOf
)
