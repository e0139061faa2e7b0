// Package failover holds the multi-process tests of failing over and of
// the load tool's failover measurement: leader loss with dispatch
// running, dead members and no leader, a follower whose Raft log's disk
// is full, and ax-bench's runs against a temporary cluster. They are a
// package of their own so that each test package stays well inside go
// test's 10-minute default on a busy machine.
package failover

import (
	"testing"

	"github.com/ax-scheduler/ax/internal/agenttest"
	"github.com/ax-scheduler/ax/internal/clustertest"
	"github.com/ax-scheduler/ax/internal/testkit"
)

// axBinary is the ax executable installed once for all tests; benchBinary
// is ax-bench, the load tool, whose temporary clusters run axBinary;
// embeddedBinary is examples/embedded-service, a Go service that embeds
// a node (package embed).
var axBinary, benchBinary, embeddedBinary string

func TestMain(m *testing.M) {
	clustertest.Main(m, clustertest.Binary{Pkg: clustertest.AxPkg, Path: &axBinary},
		clustertest.Binary{Pkg: clustertest.BenchPkg, Path: &benchBinary},
		clustertest.Binary{Pkg: "github.com/ax-scheduler/ax/examples/embedded-service", Path: &embeddedBinary})
}

// both are the implementations a scenario written against
// clustertest.Cluster runs on (clustertest.Each): real processes, and
// agents in the test's process.
var both = []clustertest.Impl{clustertest.ProcessImpl(), agenttest.Impl(nil)}

// The shared harness (internal/clustertest) under the names this
// package's tests use.
var (
	startCluster = clustertest.StartProcesses
	withToken    = clustertest.WithToken
	ctxT         = testkit.Context
	eventTask    = clustertest.EventTask
	countTasks   = clustertest.CountTasks
	waitHealth   = clustertest.WaitHealth
)
