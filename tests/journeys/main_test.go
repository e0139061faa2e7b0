package journeys

import (
	"testing"

	"github.com/ax-scheduler/ax/internal/clustertest"
	"github.com/ax-scheduler/ax/internal/testkit"
)

// axBinary is the ax executable installed once for all tests;
// sdkWorkerBinary is examples/sdk-worker's.
var axBinary, sdkWorkerBinary string

func TestMain(m *testing.M) {
	clustertest.Main(m, clustertest.Binary{Pkg: clustertest.AxPkg, Path: &axBinary},
		clustertest.Binary{Pkg: "github.com/ax-scheduler/ax/examples/sdk-worker", Path: &sdkWorkerBinary})
}

type clusterOption = clustertest.Option

// The shared harness (internal/clustertest) under the names this
// package's tests use.
var (
	startCluster = clustertest.StartProcesses
	withArgs     = clustertest.WithArgs
	withTLS      = clustertest.WithTLS
	ctxT         = testkit.Context
	eventTask    = clustertest.EventTask
	shellTask    = clustertest.ShellTask
	dailyTask    = clustertest.DailyTask
	trigger      = clustertest.Trigger
	allInstances = clustertest.AllInstances
	hasEvent     = clustertest.HasEvent
	waitHealth   = clustertest.WaitHealth
	tokenClient  = clustertest.TokenClient
	createToken  = clustertest.CreateToken
	wantCode     = clustertest.WantCode
	newWebhook   = clustertest.NewWebhook
)
