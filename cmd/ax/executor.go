package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/ax-scheduler/ax/internal/command"

	"github.com/hashicorp/go-hclog"

	"github.com/ax-scheduler/ax/agent/config"
	"github.com/ax-scheduler/ax/internal/cli"
	"github.com/ax-scheduler/ax/internal/faults"
	"github.com/ax-scheduler/ax/worker"
)

// executorCmd is ax executor.
type executorCmd struct {
	command.Base
	servers, name, labels, token, tokenFile, logLevel string
	capacity                                          int
	shell, http                                       bool
	grace                                             time.Duration
	tls                                               cli.TLSFlags
}

func newExecutorCmd(io *command.IO) command.Command {
	c := &executorCmd{}
	c.Init(io, "executor", `
Usage: ax executor -server ADDR[,ADDR] [-name N] [-labels k=v,k=v] [-capacity 16]
                   [-shell=true] [-http=true] [-shutdown-grace 30s]

Runs attempts of ax tasks (shell and http actions) handed out by the
cluster. Connect it to any node(s); it follows the leader and fails over.
The cluster leases it only what it runs (-shell, -http) and what its
labels allow. SIGTERM stops it cleanly: no new work, running attempts
get -shutdown-grace to finish, then they are stopped and reported.

Examples:
	ax executor -server 127.0.0.1:7070,127.0.0.1:7080 -name worker-1 -labels pool=batch -capacity 8
	ax executor -server 10.0.0.1:7070 -ca-cert tls/ax-ca.pem -name worker-2
	ax executor -server 10.0.0.1:7070 -name hooks -shell=false      # http actions only
`)
	c.FS.StringVar(&c.servers, "server", cli.DefaultAddr(io.Getenv), "agent HTTP address(es), comma-separated")
	c.FS.StringVar(&c.name, "name", "", "executor name, unique in the cluster (default: host name)")
	c.FS.StringVar(&c.labels, "labels", "", "labels k=v,k=v that tasks can require (policy.executorLabels)")
	c.FS.IntVar(&c.capacity, "capacity", 16, "attempts run at once")
	c.FS.StringVar(&c.token, "token", "", "API or executor token (default env AX_TOKEN)")
	c.FS.StringVar(&c.tokenFile, "token-file", "", "read the token from this file")
	c.FS.StringVar(&c.logLevel, "log-level", "info", "log level: "+strings.Join(config.LogLevels, ", "))
	c.FS.BoolVar(&c.shell, "shell", true, "run shell actions")
	c.FS.BoolVar(&c.http, "http", true, "run http actions")
	c.FS.DurationVar(&c.grace, "shutdown-grace", 30*time.Second, "on SIGTERM, how long running attempts may finish before they are stopped")
	c.tls.Register(c.FS, io.Getenv)
	return c
}

func (c *executorCmd) Run(ctx context.Context, args []string) error {
	if err := c.FS.Parse(args); err != nil {
		return err
	}
	tc, err := c.tls.Config()
	if err != nil {
		return err
	}
	// Shell tasks that run ax (ax approval request) reach the cluster
	// the same way.
	if err := exportTLS(c.IO, c.tls); err != nil {
		return err
	}
	token := c.token
	if token == "" && c.tokenFile == "" {
		token = c.IO.Getenv("AX_TOKEN") // not the flag's default: -h would print it
	}
	level, err := parseLogLevel(c.logLevel)
	if err != nil {
		return fmt.Errorf("executor: %w", err)
	}
	tok, err := cli.ReadToken(token, c.tokenFile)
	if err != nil {
		return err
	}
	name := c.name
	if name == "" {
		host, _ := os.Hostname()
		name = strings.ToLower(host)
	}
	lbl, err := cli.ParseLabels(c.labels)
	if err != nil {
		return err
	}
	// The fault hook (-tags faults) offsets the executor's wall clock too:
	// its log's times show it. The executor times leases and retries by
	// intervals, never by the wall clock, so nothing else moves.
	clock, offset, err := faults.Clock(c.IO.Getenv, c.IO.Stderr)
	if err != nil {
		return err
	}
	logOpts := hclog.LoggerOptions{Name: "ax", Level: level, Output: c.IO.Stderr}
	if clock != nil {
		logOpts.TimeFn = clock.Now
	}
	logger := hclog.New(&logOpts)
	if clock != nil {
		logger.Warn("fault hook: this executor's wall clock is offset (a binary built with -tags faults, for tests only)", "offset", offset)
	}
	ex, err := worker.New(worker.Config{
		Servers: strings.Split(c.servers, ","), Name: name, Labels: lbl, Capacity: c.capacity, Token: tok, TLS: tc,
		Logger: logger,
		Shell:  c.shell, HTTP: c.http, ShutdownGrace: shutdownGrace(c.grace), Reaper: reaperArgv(),
	})
	if err != nil {
		return err
	}
	return ex.Run(ctx)
}

// shutdownGrace maps the -shutdown-grace flag to worker.Config's field,
// where 0 means the default: 0 or less stops attempts at once.
func shutdownGrace(d time.Duration) time.Duration {
	if d <= 0 {
		return -1
	}
	return d
}
