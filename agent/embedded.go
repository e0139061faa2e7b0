package agent

import (
	"context"
	"errors"
	"maps"
	"net"
	"time"

	"github.com/ax-scheduler/ax/worker"
)

// startExecutor runs the embedded executor, connected to this node's own
// API with token (its credential, in memory only); stopExec drains it.
func (a *Agent) startExecutor(token string) error {
	cfg := a.cfg
	a.execToken = token
	ex, err := worker.New(worker.Config{Servers: []string{loopbackFor(a.HTTPAddr())}, Name: cfg.NodeID, Token: token, TLS: a.rep.PeerTLS(),
		Capacity: cfg.ExecutorCapacity, Labels: cfg.ExecutorLabels, Logger: a.log, Shell: true, HTTP: true, Reaper: cfg.ExecutorReaper,
		Handlers: cfg.Handlers,
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

// Handle adds (or replaces) an in-process sdk handler of the embedded
// executor: tasks whose action is {"type": "sdk", "handler": name} run
// in this process. The executor restarts with the new set: attempts it
// was running are drained as at a shutdown (those past the grace run
// again, interrupted), so register handlers before their work arrives.
// It needs the embedded executor (Config.Executor).
func (a *Agent) Handle(name string, h worker.Handler) error {
	if !a.cfg.Executor {
		return errors.New("agent: Handle needs the embedded executor (Config.Executor)")
	}
	if h == nil || name == "" {
		return errors.New("agent: Handle needs a name and a handler")
	}
	a.execMu.Lock()
	defer a.execMu.Unlock()
	if a.execClosed {
		return errors.New("agent: stopped")
	}
	handlers := make(map[string]worker.Handler, len(a.cfg.Handlers)+1)
	maps.Copy(handlers, a.cfg.Handlers)
	handlers[name] = h
	a.cfg.Handlers = handlers
	if a.stopExec != nil {
		a.stopExec()
	}
	return a.startExecutor(a.execToken)
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
