package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/ax-scheduler/ax/client"
	"github.com/ax-scheduler/ax/internal/cli"
	"github.com/ax-scheduler/ax/internal/localcluster"
	"github.com/ax-scheduler/ax/model/member"
)

// benchFlags are the flags every scenario has: the client's (with no
// default address: without -addr a temporary cluster is started), -nodes,
// -tls, -ax and -agent-args.
type benchFlags struct {
	fs        *flag.FlagSet
	conn      cli.ClientFlags
	nodes     int
	withTLS   bool
	ax        string // the temporary cluster's ax binary ("": build one)
	agentArgs string // more flags for the temporary cluster's agents
}

func newBenchFlags(name, usage string) *benchFlags {
	b := &benchFlags{fs: cli.NewFlagSet("ax-bench "+name, usage, os.Stdout)}
	b.conn.Register(b.fs, "", "the cluster's HTTP address(es), comma-separated; without it a temporary loopback cluster is started")
	b.fs.IntVar(&b.nodes, "nodes", 3, "nodes of the temporary cluster (without -addr)")
	b.fs.BoolVar(&b.withTLS, "tls", false, "run the temporary cluster with TLS on HTTP and Raft, certificates made in its directory (compare with a run without)")
	b.fs.StringVar(&b.ax, "ax", "", "the ax binary the temporary cluster's agents and executors run, a path or a name in $PATH (default: one built from this source tree)")
	b.fs.StringVar(&b.agentArgs, "agent-args", "", "more flags for the temporary cluster's agents, space-separated (after the scenario's own, so they win): \"-raft-heartbeat-timeout 300ms -raft-election-timeout 300ms -raft-lease-timeout 150ms\"")
	return b
}

// parse parses args and checks the common flags.
func (b *benchFlags) parse(args []string) error {
	if err := b.fs.Parse(args); err != nil {
		return err
	}
	if b.fs.NArg() > 0 {
		return fmt.Errorf("%s: unexpected arguments %q", b.fs.Name(), b.fs.Args())
	}
	if b.nodes < 1 {
		return fmt.Errorf("%s: -nodes must be at least 1", b.fs.Name())
	}
	if b.withTLS && b.conn.Addr != "" {
		return fmt.Errorf("%s: -tls starts a temporary TLS cluster; with -addr give -ca-cert instead", b.fs.Name())
	}
	if b.agentArgs != "" && b.conn.Addr != "" {
		return fmt.Errorf("%s: -agent-args are for the temporary cluster's agents; with -addr the cluster is already running", b.fs.Name())
	}
	return nil
}

// target is the cluster a scenario runs against: the one at -addr, or a
// temporary one this process started.
type target struct {
	cl    *client.Client // fails over across addrs
	addrs []string
	token string
	tls   *tls.Config // the clients' TLS, nil without
	// local is the temporary cluster, nil with -addr: the scenarios that
	// kill agents, sample their processes or start ax executor processes
	// need it.
	local *localcluster.Cluster
	close func()
}

// start connects to -addr, or starts a temporary cluster whose agents get
// the extra flags (then -agent-args); the caller defers the target's
// close. It prints this machine's load average before, and close prints
// it after: the figures mean little without it on a shared machine.
func (b *benchFlags) start(ctx context.Context, extra ...string) (*target, error) {
	fmt.Printf("machine: %s\n", machineLoad())
	if b.conn.Addr != "" {
		cfg, err := b.conn.Config()
		if err != nil {
			return nil, err
		}
		return newTarget(cfg, nil, func() {}), nil
	}
	token, err := cli.ReadToken(b.conn.Token, b.conn.TokenFile)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "ax-bench-")
	if err != nil {
		return nil, err
	}
	lc, err := startLocal(ctx, dir, b, token, extra)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	// The temporary cluster's clients use its TLS (-tls), not -ca-cert.
	cfg := client.Config{Addrs: lc.Addrs(), TLS: lc.TLS(), Token: token}
	return newTarget(cfg, lc, func() { lc.Close(); os.RemoveAll(dir) }), nil
}

func newTarget(cfg client.Config, local *localcluster.Cluster, closeFn func()) *target {
	cfg.Actor = "ax-bench"
	cfg.RetryFor = max(cfg.RetryFor, time.Minute) // ride out elections on a busy machine
	done := func() {
		fmt.Printf("machine at the end: %s\n", machineLoad())
		closeFn()
	}
	return &target{cl: client.New(cfg), addrs: cfg.Addrs, token: cfg.Token, tls: cfg.TLS, local: local, close: done}
}

// machineLoad describes this machine's load average (/proc/loadavg) and
// its CPUs.
func machineLoad() string {
	cpus := runtime.NumCPU()
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return fmt.Sprintf("%d CPUs, load average unknown", cpus)
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return fmt.Sprintf("%d CPUs, load average unknown", cpus)
	}
	return fmt.Sprintf("load average %s %s %s (1, 5, 15 min) on %d CPUs", f[0], f[1], f[2], cpus)
}

// startLocal starts a temporary cluster in dir of the -ax binary, or of
// one built there from the source tree.
func startLocal(ctx context.Context, dir string, b *benchFlags, token string, extra []string) (*localcluster.Cluster, error) {
	bin, err := axBinary(b.ax, dir)
	if err != nil {
		return nil, err
	}
	args := append(append([]string{"-log-level", "warn"}, extra...), strings.Fields(b.agentArgs)...)
	lcfg := localcluster.Config{Binary: bin, Nodes: b.nodes, Dir: dir, Token: token, Args: args}
	kind := ""
	if b.withTLS {
		lcfg.TLSDir = filepath.Join(dir, "tls")
		kind = " TLS"
	}
	fmt.Printf("starting a %d-node loopback%s cluster of %s in %s\n", b.nodes, kind, bin, dir)
	if b.agentArgs != "" {
		fmt.Printf("agents' extra flags: %s\n", b.agentArgs)
	}
	return localcluster.Start(ctx, lcfg)
}

// axBinary returns the absolute path of the ax binary -ax names (a path,
// or a command name looked up in $PATH), or, without -ax, of one it builds
// into dir from the source tree ax-bench runs in.
func axBinary(flagValue, dir string) (string, error) {
	if flagValue == "" {
		bin := filepath.Join(dir, "ax")
		fmt.Printf("building ax into %s (-ax PATH runs a given binary)\n", bin)
		if err := localcluster.Build(bin); err != nil {
			return "", fmt.Errorf("no -ax binary, and building one failed (run ax-bench in the ax source tree, or pass -ax PATH): %w", err)
		}
		return bin, nil
	}
	bin, err := exec.LookPath(flagValue)
	if err != nil {
		return "", fmt.Errorf("-ax: %w", err)
	}
	return filepath.Abs(bin)
}

// nodeClient returns a client of one address that gives up after retryFor.
func (t *target) nodeClient(addr string, retryFor time.Duration) *client.Client {
	return client.New(client.Config{Addrs: []string{addr}, TLS: t.tls, Token: t.token, RetryFor: retryFor})
}

// leaderHealth asks each address until it finds the leader's health.
func (t *target) leaderHealth(ctx context.Context) (*member.Health, error) {
	for _, a := range t.addrs {
		h, err := t.nodeClient(a, time.Second).Health(ctx)
		if err == nil && h.Role == member.RoleLeader {
			return h, nil
		}
	}
	return nil, errors.New("no leader")
}

// needLocal fails with -addr: what names it needs the temporary cluster.
func (t *target) needLocal(what string) error {
	if t.local == nil {
		return fmt.Errorf("%s needs the temporary cluster (no -addr)", what)
	}
	return nil
}
