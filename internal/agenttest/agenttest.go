// Package agenttest starts real ax agents in the test's process: Start
// a single-node cluster on loopback ports with its data in t.TempDir(),
// stopped when the test ends; StartCluster an n-node one, the in-process
// implementation of internal/clustertest's Cluster. Tests of the
// packages the agent is built on (client, worker) use it from their
// external test packages to run against the real API rather than a
// stand-in, and tests/ to run a scenario on in-process agents as well as
// on processes. WaitState waits on an instance through the client,
// against this agent or any cluster.
//
// The waiting and logging helpers it uses are internal/testkit's, which
// imports nothing of ax so that the agent's own tests can use them too.
package agenttest

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/agent"
	"github.com/ax-scheduler/ax/client"
	"github.com/ax-scheduler/ax/internal/clustertest"
	"github.com/ax-scheduler/ax/internal/testkit"
	"github.com/ax-scheduler/ax/model"
)

// Start starts a single-node agent, lets tweak change its configuration
// first (tweak may be nil), and returns it once it leads. Its logs go to
// t.Log at the level of $AX_TEST_LOG (default warn). Skipped in -short
// mode.
func Start(t testing.TB, tweak func(*agent.Config)) *agent.Agent {
	t.Helper()
	if testing.Short() {
		t.Skip("in-process agent skipped in -short mode")
	}
	cfg := agent.Config{NodeID: "n1", DataDir: t.TempDir(), HTTPAddr: "127.0.0.1:0", RaftAddr: testkit.FreeAddr(t),
		LeaderWait: 2 * time.Second, Logger: testkit.Logger(t, "")}
	if tweak != nil {
		tweak(&cfg)
	}
	a, err := agent.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := a.Shutdown(ctx); err != nil {
			t.Errorf("agent shutdown: %v", err)
		}
	})
	testkit.Eventually(t, 30*time.Second, func() error {
		if h := a.Health(context.Background()); h.Problem != "" || h.Leader != cfg.NodeID {
			return fmt.Errorf("the agent does not lead: %+v", h)
		}
		return nil
	})
	return a
}

// Starter returns a clustertest.Starter that builds agents with
// agent.New, on the node's addresses, data dir and logger, without an
// embedded executor, with a 2 s leader wait; tweak (may be nil) changes
// each node's configuration first.
func Starter(tweak func(*agent.Config)) clustertest.Starter {
	return func(nc clustertest.NodeConfig) (clustertest.Proc, error) {
		cfg := agent.Config{NodeID: nc.ID, DataDir: nc.DataDir, HTTPAddr: nc.HTTPAddr, AdvertiseHTTP: nc.AdvertiseHTTP,
			RaftAddr: nc.RaftAddr, Join: nc.Join, LeaderWait: 2 * time.Second, Logger: nc.Logger}
		if tweak != nil {
			tweak(&cfg)
		}
		return agent.New(cfg)
	}
}

// StartCluster starts an n-node cluster of agents in the test's process
// (see Starter and clustertest.StartInProcess). Skipped in -short mode.
func StartCluster(t testing.TB, n int, tweak func(*agent.Config)) *clustertest.InProcess {
	t.Helper()
	return clustertest.StartInProcess(t, n, Starter(tweak))
}

// Impl is the in-process implementation of clustertest.Cluster for
// clustertest.Each: StartCluster with tweak.
func Impl(tweak func(*agent.Config)) clustertest.Impl {
	return clustertest.Impl{Name: "in-process", Start: func(t *testing.T, n int) clustertest.Cluster {
		t.Helper()
		return StartCluster(t, n, tweak)
	}}
}

// WaitState reads instance id through c (consistently) until it is in
// one of states and returns it, failing the test after within.
func WaitState(t testing.TB, c *client.Client, id string, within time.Duration, states ...string) *model.Instance {
	t.Helper()
	var in *model.Instance
	testkit.Eventually(t, within, func() error {
		var err error
		in, err = c.GetInstance(context.Background(), id)
		if err != nil {
			return err
		}
		if !slices.Contains(states, in.State) {
			return fmt.Errorf("instance %s is %s (%s), want %v", id, in.State, in.LastError, states)
		}
		return nil
	})
	return in
}
