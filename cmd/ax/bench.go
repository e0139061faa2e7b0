package main

import (
	"context"
	"crypto/tls"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/ax-scheduler/ax/client"
	"github.com/ax-scheduler/ax/localcluster"
	"github.com/ax-scheduler/ax/model"
)

type benchCommand struct{}

func (*benchCommand) Usage() string {
	return `
Usage: ax bench tasks|submit|fire|run|failover|soak|console [flags]

tasks:
Writes tasks over HTTP (PUT /v1/tasks/NAME, each a Raft commit acknowledged
by a majority) and prints writes/s and latency percentiles per client count.
Without -addr it starts a temporary 3-node loopback cluster of this binary
(fsync on for the Raft log) and removes it afterwards.

submit: delayed submissions/s committed, batched (arrays) and single
(single ones from a lean keep-alive HTTP/1.1 generator, then the same
requests to a missing route: what HTTP alone costs; -go-client adds a run
through the Go API client).
fire: fires at given rates; lateness (firedAt - scheduledAt) percentiles.
run: end to end, submission to SUCCESS, through executors (sdk no-op
handlers in this process, or shell "true" in ax executor processes);
dispatch latency (firedAt -> startedAt) at a paced rate.
failover: fills the cluster with pending delayed instances, fails the
leader (SIGKILL on a temporary cluster, a leadership transfer with -addr)
and measures how long until a new leader holds every one in its wheel.
With -dispatch it measures dispatch instead, over -tries leader changes:
trigger -> instance started right after a transfer, and kill -9 of the
leader -> new leader and -> first instance started (ax executor processes
run the instances; the killed node is restarted between tries).

soak: a mixed load for -minutes (delayed submissions due in seconds and
in hours, triggers, per-second crons, an SDK worker and an ax executor)
with a short retention; every 10 s it prints each node's memory (RSS),
goroutines, file descriptors and data directory size, then compares the
first sample after the warm-up with the last. -agent-binary runs the
cluster from another ax binary (an earlier release) under the same load.

console: fills the cluster like a busy installation (-tasks, -instances
delayed ones, -finished run to the end) and times every request the
operator console makes, sequentially, on a follower and on the leader.

-tls runs the temporary cluster with TLS on HTTP and Raft (certificates
made in its directory); run a scenario with and without it to compare.

Examples:
	ax bench tasks -clients 1,8,64 -n 4000
	ax bench tasks -tls -clients 1,8,64 -n 4000
	ax bench submit -batch 1000 -n 200000 -clients 4 -single-clients 64 -single-n 40000
	ax bench fire -rates 1000,10000,50000 -seconds 4
	ax bench run -n 50000 -executors 2 -rate 1000
	ax bench failover -pending 1000000
	ax bench failover -dispatch -tries 20
	ax bench soak -minutes 5 -retention 30s -retention-interval 5s
	ax bench soak -minutes 5 -agent-binary /tmp/ax-previous
	ax bench console -tasks 1000 -instances 1000000
	ax bench tasks -addr 127.0.0.1:7070,127.0.0.1:7080,127.0.0.1:7090 -clients 64 -n 20000
`
}

func (c *benchCommand) Run(ctx context.Context, args []string) error {
	if len(args) == 0 {
		fmt.Fprint(os.Stderr, strings.TrimLeft(c.Usage(), "\n"))
		return fmt.Errorf("bench: want a scenario: tasks, submit, fire, run, failover, soak or console")
	}
	switch args[0] {
	case "tasks":
		return c.runTasks(ctx, args[1:])
	case "submit":
		return runBenchSubmit(ctx, args[1:])
	case "fire":
		return runBenchFire(ctx, args[1:])
	case "run":
		return runBenchRun(ctx, args[1:])
	case "failover":
		return runBenchFailover(ctx, args[1:])
	case "soak":
		return runBenchSoak(ctx, args[1:])
	case "console":
		return runBenchConsole(ctx, args[1:])
	default:
		return fmt.Errorf("bench: unknown scenario %q: want tasks, submit, fire, run, failover, soak or console", args[0])
	}
}

// benchLocal is the temporary cluster benchCluster started, if any.
var benchLocal *localcluster.Cluster

// benchCluster returns a client for -addr, or starts a temporary loopback
// cluster when -addr is empty: of bin, or of this binary if bin is "".
func benchCluster(ctx context.Context, cf *clientFlags, nodes int, withTLS bool, bin string, extra ...string) (*client.Client, func(), error) {
	if cf.addr != "" {
		if withTLS {
			return nil, nil, fmt.Errorf("bench: -tls starts a temporary TLS cluster; with -addr give -ca-cert instead")
		}
		cl, err := cf.client()
		return cl, func() {}, err
	}
	dir, err := os.MkdirTemp("", "ax-bench-")
	if err != nil {
		return nil, nil, err
	}
	if bin == "" {
		if bin, err = os.Executable(); err != nil {
			return nil, nil, err
		}
	}
	lcfg := localcluster.Config{Binary: bin, Nodes: nodes, Dir: dir, Token: cf.token,
		Args: append([]string{"-log-level", "warn"}, extra...)}
	kind := ""
	if withTLS {
		lcfg.TLSDir = filepath.Join(dir, "tls")
		cert, key := localcluster.ClientCert(lcfg.TLSDir)
		cf.tls = tlsFlags{caCert: localcluster.CAFile(lcfg.TLSDir), clientCert: cert, clientKey: key}
		kind = " TLS"
	}
	fmt.Printf("starting a %d-node loopback%s cluster in %s\n", nodes, kind, dir)
	lc, err := localcluster.Start(ctx, lcfg)
	if err != nil {
		os.RemoveAll(dir)
		return nil, nil, err
	}
	cf.addr = strings.Join(lc.Addrs(), ",")
	cl, err := cf.client()
	benchLocal = lc
	return cl, func() { lc.Close(); os.RemoveAll(dir) }, err
}

// benchFlags are the flags every bench scenario has: the client's (with no
// default address: without -addr a temporary cluster is started) and -nodes.
type benchFlags struct {
	clientFlags
	fs      *flag.FlagSet
	nodes   *int
	withTLS *bool
	tlsConf *tls.Config // the clients' TLS, set by start
	binary  string      // the temporary cluster's ax binary ("": this one)
}

func newBenchFlags(name string) *benchFlags {
	b := &benchFlags{fs: newFlagSet(name, (&benchCommand{}).Usage())}
	b.register(b.fs)
	b.addr = ""
	b.nodes = b.fs.Int("nodes", 3, "nodes of the temporary cluster (without -addr)")
	b.withTLS = b.fs.Bool("tls", false, "run the temporary cluster with TLS on HTTP and Raft (compare with a run without)")
	return b
}

// start connects to -addr, or starts a temporary cluster with extra agent
// flags; the caller defers the returned stop. It reads -token-file into
// b.token, which the raw load generator and health probes use.
func (b *benchFlags) start(ctx context.Context, extra ...string) (*client.Client, func(), error) {
	tok, err := readToken(b.token, b.tokenFile)
	if err != nil {
		return nil, nil, err
	}
	b.token, b.tokenFile = tok, ""
	cl, stop, err := benchCluster(ctx, &b.clientFlags, *b.nodes, *b.withTLS, b.binary, extra...)
	if err != nil {
		return nil, nil, err
	}
	if b.tlsConf, err = b.tls.config(); err != nil {
		stop()
		return nil, nil, err
	}
	return cl, stop, nil
}

// nodeClient returns a client of one address that gives up after retryFor.
func (b *benchFlags) nodeClient(addr string, retryFor time.Duration) *client.Client {
	return client.New(client.Config{Addrs: []string{addr}, TLS: b.tlsConf, Token: b.token, RetryFor: retryFor})
}

func (c *benchCommand) runTasks(ctx context.Context, args []string) error {
	bf := newBenchFlags("bench tasks")
	clients := bf.fs.String("clients", "1,8,64", "client counts to run, comma-separated")
	n := bf.fs.Int("n", 2000, "writes per client count")
	if err := bf.fs.Parse(args); err != nil {
		return err
	}
	var counts []int
	for _, s := range strings.Split(*clients, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || v < 1 {
			return fmt.Errorf("bench: bad -clients entry %q", s)
		}
		counts = append(counts, v)
	}
	cl, stop, err := bf.start(ctx)
	if err != nil {
		return err
	}
	defer stop()
	fmt.Printf("%-8s %8s %10s %10s %10s %10s\n", "clients", "writes", "writes/s", "p50", "p99", "max")
	for round, cc := range counts {
		r, err := benchTasks(ctx, cl, round, cc, *n)
		if err != nil {
			return err
		}
		fmt.Printf("%-8d %8d %10.0f %10s %10s %10s\n", cc, r.n, r.rate, r.p50, r.p99, r.max)
	}
	return nil
}

func benchTasks(ctx context.Context, cl *client.Client, round, clients, n int) (*benchResult, error) {
	var next atomic.Int64
	r, err := runLoad(ctx, clients, n, func() error {
		i := next.Add(1) - 1
		_, err := cl.PutTask(ctx, &model.Task{
			Name:    fmt.Sprintf("bench-%d-%d", round, i),
			Trigger: model.Trigger{Type: model.TriggerEvent},
			Action:  model.Action{Type: model.ActionShell, Command: "true"},
			Labels:  map[string]string{"bench": strconv.Itoa(round)},
		})
		return err
	})
	if err != nil {
		return nil, err
	}
	return &benchResult{n: r.n, rate: float64(r.n) / r.elapsed.Seconds(), p50: r.p50, p99: r.p99, max: r.max}, nil
}

type benchResult struct {
	n             int
	rate          float64
	p50, p99, max time.Duration
}
