// Package agenttest starts a real ax agent in the test's process: a
// single-node cluster on loopback ports with its data in t.TempDir(),
// stopped when the test ends. Tests of the packages the agent is built on
// (client, worker) use it from their external test packages to run
// against the real API rather than a stand-in.
package agenttest

import (
	"context"
	"net"
	"os"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ax-scheduler/ax/agent"
)

// Start starts a single-node agent, lets tweak change its configuration
// first (tweak may be nil), and returns it once it leads. Its logs go to
// t.Log at the level of $AX_TEST_LOG (default warn).
func Start(t testing.TB, tweak func(*agent.Config)) *agent.Agent {
	t.Helper()
	if testing.Short() {
		t.Skip("in-process agent skipped in -short mode")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	raftAddr := ln.Addr().String()
	ln.Close()
	level := hclog.LevelFromString(os.Getenv("AX_TEST_LOG"))
	if level == hclog.NoLevel {
		level = hclog.Warn
	}
	cfg := agent.Config{NodeID: "n1", DataDir: t.TempDir(), HTTPAddr: "127.0.0.1:0", RaftAddr: raftAddr,
		LeaderWait: 2 * time.Second, Logger: hclog.New(&hclog.LoggerOptions{Level: level, Output: logWriter{t}})}
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
	deadline := time.Now().Add(30 * time.Second)
	for {
		h := a.Health(context.Background())
		if h.Problem == "" && h.Leader == cfg.NodeID {
			return a
		}
		if time.Now().After(deadline) {
			t.Fatalf("the agent does not lead after 30s: %+v", h)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// logWriter sends the agent's log lines to the test's log.
type logWriter struct{ t testing.TB }

func (w logWriter) Write(p []byte) (int, error) {
	w.t.Log(string(p))
	return len(p), nil
}
