package main

import (
	"context"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/ax-scheduler/ax/internal/command"

	"github.com/hashicorp/go-hclog"

	"github.com/ax-scheduler/ax/agent"
	"github.com/ax-scheduler/ax/agent/config"
	"github.com/ax-scheduler/ax/internal/faults"
)

// agentGCPercent is the agent's garbage-collection target unless GOGC is set.
const agentGCPercent = 200

// agentCmd is ax agent. Its flags, their config-file keys and the checks
// of their values are the table of agent/config.
type agentCmd struct {
	command.Base
	s config.Settings
}

func newAgentCmd(io *command.IO) command.Command {
	c := &agentCmd{}
	c.Init(io, "agent", `
Usage: ax agent [flags]

Runs an ax node. With no flags it is a single-node cluster for trying ax
out: data in ./ax-data, HTTP on 127.0.0.1:7070, Raft on 127.0.0.1:7071.

Examples:
	# try it out
	ax agent

	# a three-node cluster on one machine
	ax agent -node n1 -data /var/lib/ax/n1 -http 127.0.0.1:7070 -raft 127.0.0.1:7071
	ax agent -node n2 -data /var/lib/ax/n2 -http 127.0.0.1:7080 -raft 127.0.0.1:7081 -join 127.0.0.1:7070
	ax agent -node n3 -data /var/lib/ax/n3 -http 127.0.0.1:7090 -raft 127.0.0.1:7091 -join 127.0.0.1:7070

	# in a container: listen everywhere, advertise the reachable address
	ax agent -node n1 -data /data -http 0.0.0.0:7070 -raft 0.0.0.0:7071 \
		-advertise-http ax1.example.com:7070 -advertise-raft ax1.example.com:7071 ...

	# settings from a file (deploy/ax-agent.hcl lists every key); a flag
	# given as well wins over the file
	ax agent -config /etc/ax/agent.hcl -log-level debug

	# TLS (certificates from ax tls; SIGHUP reloads them)
	ax agent -node n1 -http 10.0.0.1:7070 -raft 10.0.0.1:7071 \
		-tls-ca tls/ax-ca.pem -tls-cert tls/n1.pem -tls-key tls/n1-key.pem

The settings come from the flags' defaults, then the -config file, then
AX_TOKEN / AX_EXECUTOR_TOKEN, then the flags given. Relative paths in the
file are relative to the file's directory.

A node with existing state restarts with the same command line; -join is
then only a fallback. SIGTERM on the leader transfers leadership first.
A non-loopback HTTP or Raft address needs TLS, or -insecure. A node
listening on 0.0.0.0 or :: needs -advertise-http / -advertise-raft.
`)
	c.s.Register(c.FS)
	return c
}

func (c *agentCmd) Run(ctx context.Context, args []string) error {
	warnings, err := c.s.Parse(c.FS, args, c.IO.Getenv)
	if err != nil {
		return err
	}
	cfg, more, err := c.s.Config()
	if err != nil {
		return err
	}
	warnings = append(warnings, more...)
	if cfg.TLS != nil {
		// The embedded executor's shell tasks (ax approval request)
		// verify the node with the CA; the node's own key stays out of
		// their environment.
		if err := c.IO.Setenv("AX_CACERT", c.s.TLSCA); err != nil {
			return err
		}
	}
	cfg.ExecutorReaper = reaperArgv()
	clock, offset, err := faults.Clock(c.IO.Getenv, c.IO.Stderr)
	if err != nil {
		return err
	}
	level, err := parseLogLevel(c.s.LogLevel)
	if err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	logOpts := hclog.LoggerOptions{Name: "ax", Level: level, JSONFormat: c.s.LogJSON, Output: c.IO.Stderr}
	if clock != nil {
		cfg.Clock, logOpts.TimeFn = clock, clock.Now
		warnings = append(warnings, fmt.Sprintf("fault hook: this node's wall clock is offset by %s (a binary built with -tags faults, for tests only)", offset))
	}
	cfg.Logger = hclog.New(&logOpts)
	for _, w := range warnings {
		cfg.Logger.Warn(w)
	}
	if c.IO.Getenv("GOGC") == "" {
		// The apply path allocates fast over a small live heap, so the
		// default GOGC=100 collects several times a second; 200 halves
		// that and measurably steadies fire lateness (docs/performance.md,
		// Submissions and firing). GOGC in the environment still wins.
		debug.SetGCPercent(agentGCPercent)
	}
	reloadOnSIGHUP(ctx, cfg.TLS, cfg.Logger)
	cfg.Version = version
	a, err := agent.New(cfg)
	if err != nil {
		return err
	}
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	return a.Shutdown(sctx)
}
