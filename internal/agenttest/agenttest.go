// Package agenttest starts a real ax agent in the test's process: a
// single-node cluster on loopback ports with its data in t.TempDir(),
// stopped when the test ends. Tests of the packages the agent is built on
// (client, worker) use it from their external test packages to run
// against the real API rather than a stand-in. WaitState waits on an
// instance through the client, against this agent or any cluster.
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
