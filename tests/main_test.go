package tests

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

// The shared harness (internal/clustertest) under the names this
// package's tests use.
var (
	startCluster  = clustertest.StartProcesses
	withArgs      = clustertest.WithArgs
	withFirstArgs = clustertest.WithFirstArgs
	withToken     = clustertest.WithToken
	ctxT          = testkit.Context
	eventTask     = clustertest.EventTask
	waitHealth    = clustertest.WaitHealth
	hasAll        = clustertest.HasAll
)
