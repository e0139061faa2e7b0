package clock

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

type clusterOption = clustertest.Option

type webhook = clustertest.Webhook

// The shared harness (internal/clustertest) under the names this
// package's tests use.
var (
	startCluster  = clustertest.StartProcesses
	withBinary    = clustertest.WithBinary
	withNodeEnv   = clustertest.WithNodeEnv
	ctxT          = testkit.Context
	eventTask     = clustertest.EventTask
	perSecondTask = clustertest.PerSecondTask
	allInstances  = clustertest.AllInstances
	fireTimes     = clustertest.FireTimes
	waitHealth    = clustertest.WaitHealth
	newWebhook    = clustertest.NewWebhook
)
