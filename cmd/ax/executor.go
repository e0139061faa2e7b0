package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ax-scheduler/ax/internal/cli"
	"github.com/ax-scheduler/ax/worker"
)

type executorCommand struct{}

func (*executorCommand) Usage() string {
	return `
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
`
}

func (c *executorCommand) Run(ctx context.Context, args []string) error {
	fs := newFlagSet("executor", c.Usage())
	servers := fs.String("server", envOr("AX_ADDR", "127.0.0.1:7070"), "agent HTTP address(es), comma-separated")
	host, _ := os.Hostname()
	name := fs.String("name", "", "executor name, unique in the cluster (default: host name)")
	labels := fs.String("labels", "", "labels k=v,k=v that tasks can require (policy.executorLabels)")
	capacity := fs.Int("capacity", 16, "attempts run at once")
	token := fs.String("token", "", "API or executor token (default env AX_TOKEN)")
	tokenFile := fs.String("token-file", "", "read the token from this file")
	logLevel := fs.String("log-level", "info", "log level: "+strings.Join(logLevels, ", "))
	shell := fs.Bool("shell", true, "run shell actions")
	httpActions := fs.Bool("http", true, "run http actions")
	grace := fs.Duration("shutdown-grace", 30*time.Second, "on SIGTERM, how long running attempts may finish before they are stopped")
	var tf cli.TLSFlags
	tf.Register(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	tc, err := tf.Config()
	if err != nil {
		return err
	}
	exportTLS(tf)
	if *token == "" && *tokenFile == "" {
		*token = os.Getenv("AX_TOKEN") // not the flag's default: -h would print it
	}
	level, err := parseLogLevel(*logLevel)
	if err != nil {
		return fmt.Errorf("executor: %w", err)
	}
	tok, err := readToken(*token, *tokenFile)
	if err != nil {
		return err
	}
	if *name == "" {
		*name = strings.ToLower(host)
	}
	lbl, err := parseLabels(*labels)
	if err != nil {
		return err
	}
	// The fault hook (-tags faults) offsets the executor's wall clock too:
	// its log's times show it. The executor times leases and retries by
	// intervals, never by the wall clock, so nothing else moves.
	clock, offset, err := faultClock()
	if err != nil {
		return err
	}
	logOpts := hclog.LoggerOptions{Name: "ax", Level: level, Output: os.Stderr}
	if clock != nil {
		logOpts.TimeFn = clock.Now
	}
	logger := hclog.New(&logOpts)
	if clock != nil {
		logger.Warn("fault hook: this executor's wall clock is offset (a binary built with -tags faults, for tests only)", "offset", offset)
	}
	ex, err := worker.New(worker.Config{
		Servers: strings.Split(*servers, ","), Name: *name, Labels: lbl, Capacity: *capacity, Token: tok, TLS: tc,
		Logger: logger,
		Shell:  *shell, HTTP: *httpActions, ShutdownGrace: shutdownGrace(*grace), Reaper: reaperArgv(),
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

func parseLabels(s string) (map[string]string, error) {
	if s == "" {
		return nil, nil
	}
	out := map[string]string{}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("labels: want k=v, got %q", kv)
		}
		out[k] = v
	}
	return out, nil
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}
