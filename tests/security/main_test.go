package security

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

type clusterOption = clustertest.Option

// The shared harness (internal/clustertest) under the names this
// package's tests use.
var (
	startCluster = clustertest.StartProcesses
	withArgs     = clustertest.WithArgs
	withToken    = clustertest.WithToken
	withTLS      = clustertest.WithTLS
	withBinary   = clustertest.WithBinary
	ctxT         = testkit.Context
	eventTask    = clustertest.EventTask
	shellTask    = clustertest.ShellTask
	trigger      = clustertest.Trigger
	waitHealth   = clustertest.WaitHealth
	hasAll       = clustertest.HasAll
	tokenClient  = clustertest.TokenClient
	createToken  = clustertest.CreateToken
	wantCode     = clustertest.WantCode
)
