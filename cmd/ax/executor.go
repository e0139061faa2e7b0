package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"ax/client"
	"ax/model"
)

type executorCommand struct{}

func (*executorCommand) Usage() string {
	return `
Usage: ax executor -server ADDR[,ADDR] [-name N] [-labels k=v,k=v] [-capacity 16]

Runs attempts of ax tasks (shell and http actions) handed out by the
cluster. Connect it to any node(s); it follows the leader and fails over.

Examples:
	ax executor -server 127.0.0.1:7070,127.0.0.1:7080 -name worker-1 -labels pool=batch -capacity 8
	ax executor -server 10.0.0.1:7070 -ca-cert tls/ax-ca.pem -name worker-2
`
}

func (c *executorCommand) Run(ctx context.Context, args []string) error {
	fs := newFlagSet("executor", c.Usage())
	servers := fs.String("server", envOr("AX_ADDR", "127.0.0.1:7070"), "agent HTTP address(es), comma-separated")
	host, _ := os.Hostname()
	name := fs.String("name", "", "executor name, unique in the cluster (default: host name)")
	labels := fs.String("labels", "", "labels k=v,k=v that tasks can require (policy.executorLabels)")
	capacity := fs.Int("capacity", 16, "attempts run at once")
	token := fs.String("token", os.Getenv("AX_TOKEN"), "API or executor token (env AX_TOKEN)")
	tokenFile := fs.String("token-file", "", "read the token from this file")
	logLevel := fs.String("log-level", "info", "log level")
	var tf tlsFlags
	tf.register(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	tc, err := tf.config()
	if err != nil {
		return err
	}
	tf.export()
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
	logOpts := hclog.LoggerOptions{Name: "ax", Level: hclog.LevelFromString(*logLevel), Output: os.Stderr}
	if clock != nil {
		logOpts.TimeFn = clock.Now
	}
	logger := hclog.New(&logOpts)
	if clock != nil {
		logger.Warn("fault hook: this executor's wall clock is offset (a binary built with -tags faults, for tests only)", "offset", offset)
	}
	ex, err := client.NewWorker(client.WorkerConfig{
		Servers: strings.Split(*servers, ","), Name: *name, Labels: lbl, Capacity: *capacity, Token: tok, TLS: tc,
		Logger: logger,
	})
	if err != nil {
		return err
	}
	return ex.Run(ctx)
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

type approvalCommand struct{}

func (*approvalCommand) Usage() string {
	return `
Usage: ax approval request -summary TEXT

Run from inside a task's shell command: asks an operator to approve the
running attempt and blocks until they decide. Exits 0 when approved, 1 when
rejected. Uses $AX_INSTANCE_ID, $AX_ATTEMPT, $AX_ADDR and $AX_TOKEN, which
the executor sets.

Example (in a task command):
	./migrate --plan > plan.txt && ax approval request -summary "$(cat plan.txt)" && ./migrate --apply
`
}

func (c *approvalCommand) Run(ctx context.Context, args []string) error {
	if len(args) == 0 || args[0] != "request" {
		fmt.Fprint(os.Stderr, strings.TrimLeft(c.Usage(), "\n"))
		return fmt.Errorf("approval: want the subcommand request")
	}
	fs := newFlagSet("approval request", c.Usage())
	var cf clientFlags
	cf.register(fs)
	summary := fs.String("summary", "", "what the operator approves")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	id, attempt := os.Getenv("AX_INSTANCE_ID"), os.Getenv("AX_ATTEMPT")
	if id == "" || attempt == "" {
		return fmt.Errorf("approval request: AX_INSTANCE_ID and AX_ATTEMPT are not set: run it from a task's command")
	}
	var n int
	if _, err := fmt.Sscanf(attempt, "%d", &n); err != nil {
		return fmt.Errorf("approval request: bad AX_ATTEMPT %q", attempt)
	}
	cl, err := cf.client()
	if err != nil {
		return err
	}
	if _, err := cl.RequestApproval(ctx, id, n, *summary); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "waiting for approval of %s (ax instance approve %s)\n", id, id)
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
		in, err := cl.GetInstance(ctx, id, client.Consistent())
		if err != nil {
			continue
		}
		switch in.State {
		case model.StateWaitingApproval:
			continue
		case model.StateRunning:
			fmt.Fprintln(os.Stderr, "approved")
			return nil
		default:
			fmt.Fprintf(os.Stderr, "rejected (instance is %s)\n", in.State)
			os.Exit(1)
		}
	}
}
