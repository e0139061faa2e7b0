package agent

import (
	"context"
	"net"
	"time"

	"github.com/ax-scheduler/ax/worker"
)

// startExecutor runs the embedded executor, connected to this node's own
// API with token (its credential, in memory only); stopExec drains it.
func (a *Agent) startExecutor(token string) error {
	cfg := a.cfg
	ex, err := worker.New(worker.Config{Servers: []string{loopbackFor(a.HTTPAddr())}, Name: cfg.NodeID, Token: token, TLS: a.rep.PeerTLS(),
		Capacity: cfg.ExecutorCapacity, Labels: cfg.ExecutorLabels, Logger: a.log, Shell: true, HTTP: true, Reaper: cfg.ExecutorReaper,
		// The node is going away: its attempts may finish within the
		// grace; those still running then are stopped and reported
		// interrupted while the node can still take the reports.
		ShutdownGrace: execShutdownGrace(cfg.ExecutorShutdownGrace)})
	if err != nil {
		return err
	}
	ectx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	a.stopExec = func() {
		cancel()
		select { // its reports go through this node's API
		case <-done:
		case <-time.After(max(cfg.ExecutorShutdownGrace, 0) + 15*time.Second):
		}
	}
	a.wg.Add(1)
	go func() { defer a.wg.Done(); defer close(done); _ = ex.Run(ectx) }()
	return nil
}

// execShutdownGrace is the embedded executor's worker.Config.ShutdownGrace
// for the agent's setting: none (negative) for 0.
func execShutdownGrace(d time.Duration) time.Duration {
	if d <= 0 {
		return -1
	}
	return d
}

// loopbackFor is a listen address as a process on this host dials it: a
// wildcard IP (0.0.0.0, ::) becomes 127.0.0.1. The embedded executor
// dials its node so, and hands the address to its shell tasks as AX_ADDR,
// where `ax approval request` verifies the node's TLS certificate against
// it: the certificate names 127.0.0.1, not a wildcard.
func loopbackFor(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if ip := net.ParseIP(host); err == nil && ip != nil && ip.IsUnspecified() {
		return net.JoinHostPort("127.0.0.1", port)
	}
	return addr
}
