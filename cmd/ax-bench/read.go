package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/ax-scheduler/ax/client"
	"github.com/ax-scheduler/ax/internal/benchkit"
	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/model/member"
)

type readCommand struct{}

func (*readCommand) Usage() string {
	return `
Usage: ax-bench read [-clients 1,64] [-n 4000] [-via leader,follower] [-modes stale,default] [-repeat 1] [-ryw 200] [common flags]

What a linearizable read costs: GET /v1/tasks/NAME (one small task) -n
times per row, through the leader and through a follower (-via), as a
stale read (?stale=true: the node's state as it is) and as a default read
(linearizable: a read index from the leader, then the node applies up to
it), from each client count, the modes back to back (-repeat runs the
whole set again); reads/s and latency percentiles per row.
"rounds" is how many reads shared one read-index fetch on the node read
through (ax_read_barriers_total / ax_read_barrier_rounds_total), and
"confirms" how many read indexes shared one leadership confirmation on
the leader (ax_read_index_requests_total / ax_read_index_rounds_total).
Then -ryw times a write through one follower and at once a read of it
through the other: with default reads (each must find it; the latency of
read-your-writes), then with stale reads (how many miss it).

Without -addr it starts a temporary 3-node loopback cluster and removes it
afterwards; with -addr the cluster there needs at least two nodes for a
follower row (every address is asked for /healthz to tell their roles).

Examples:
	ax-bench read -clients 1,64 -n 4000
	ax-bench read -clients 1,64 -n 4000 -repeat 3 -ryw 200
	ax-bench read -clients 1,8,64 -n 8000 -via follower
	ax-bench read -addr 127.0.0.1:7070,127.0.0.1:7080,127.0.0.1:7090 -modes default
`
}

func (c *readCommand) Run(ctx context.Context, args []string) error {
	bf := newBenchFlags("read", c.Usage())
	clients := bf.fs.String("clients", "1,64", "client counts to run, comma-separated")
	n := bf.fs.Int("n", 4000, "reads per row")
	via := bf.fs.String("via", "leader,follower", "which node to read through: leader, follower, or both, comma-separated")
	modes := bf.fs.String("modes", "stale,default", "read modes: stale (?stale=true), default (linearizable), comma-separated")
	ryw := bf.fs.Int("ryw", 200, "write-then-read pairs through two nodes (0 to skip)")
	repeat := bf.fs.Int("repeat", 1, "run the rows this many times (the modes alternate within each)")
	if err := bf.parse(args); err != nil {
		return err
	}
	counts, err := benchkit.ParseCounts("-clients", *clients)
	if err != nil {
		return fmt.Errorf("read: %w", err)
	}
	vias, err := oneOf("-via", *via, "leader", "follower")
	if err != nil {
		return fmt.Errorf("read: %w", err)
	}
	ms, err := oneOf("-modes", *modes, "stale", "default")
	if err != nil {
		return fmt.Errorf("read: %w", err)
	}
	if *n < 1 || *ryw < 0 || *repeat < 1 {
		return fmt.Errorf("read: -n and -repeat must be positive, -ryw not negative")
	}
	t, err := bf.start(ctx)
	if err != nil {
		return err
	}
	defer t.close()
	nodes, err := t.roles(ctx)
	if err != nil {
		return err
	}
	const name = "bench-read"
	if _, err := t.cl.PutTask(ctx, &model.Task{Name: name, Trigger: model.Trigger{Type: model.TriggerEvent},
		Action: model.Action{Type: model.ActionShell, Command: "true"}}); err != nil {
		return err
	}
	fmt.Printf("%-9s %-8s %-8s %7s %9s %9s %9s %9s %7s %9s\n", "via", "mode", "clients", "reads", "reads/s", "p50", "p99", "max", "rounds", "confirms")
	for rep := 0; rep < *repeat; rep++ {
		for _, v := range vias {
			addr := nodes[v]
			if addr == "" {
				fmt.Printf("%-9s (no %s among %s: skipped)\n", v, v, strings.Join(t.addrs, ","))
				continue
			}
			// Connections to this node only, no retries: what one node
			// answers. The modes alternate at each client count, so an
			// A/B pair runs back to back on the shared machine.
			cl := t.nodeClient(addr, 5*time.Second)
			for _, cc := range counts {
				for _, m := range ms {
					var opts []client.ReadOption
					if m == "stale" {
						opts = append(opts, client.Stale())
					}
					before := t.readCounters(ctx, addr, nodes["leader"])
					r, err := benchkit.RunLoad(ctx, cc, *n, func() error {
						_, err := cl.GetTask(ctx, name, opts...)
						return err
					})
					if err != nil {
						return fmt.Errorf("read via %s (%s): %w", v, m, err)
					}
					after := t.readCounters(ctx, addr, nodes["leader"])
					fmt.Printf("%-9s %-8s %-8d %7d %9.0f %9s %9s %9s %7s %9s\n", v, m, cc, r.N, r.Rate(), r.P50, r.P99, r.Max,
						ratio(after.barriers-before.barriers, after.rounds-before.rounds),
						ratio(after.requests-before.requests, after.confirms-before.confirms))
				}
			}
		}
	}
	if *ryw > 0 {
		return readYourWrites(ctx, t, nodes, *ryw)
	}
	return nil
}

// readYourWrites writes a task through one follower and reads it at once
// through the other, n times with a default read (each must find it),
// then n times with a stale read (counting those that miss it), and
// prints the latencies and the commit indexes the leader sent for them.
func readYourWrites(ctx context.Context, t *target, nodes map[string]string, n int) error {
	w, r := nodes["follower"], nodes["other"]
	if w == "" || r == "" {
		fmt.Println("read-your-writes: needs two followers (3 nodes): skipped")
		return nil
	}
	wc, rc := t.nodeClient(w, 5*time.Second), t.nodeClient(r, 5*time.Second)
	var i atomic.Int64
	pairs := func(opts ...client.ReadOption) (res *benchkit.LoadResult, writes []time.Duration, missed int, err error) {
		res, err = benchkit.RunLoad(ctx, 1, n, func() error {
			name := fmt.Sprintf("bench-ryw-%d", i.Add(1))
			t0 := time.Now()
			if _, err := wc.PutTask(ctx, &model.Task{Name: name, Trigger: model.Trigger{Type: model.TriggerEvent},
				Action: model.Action{Type: model.ActionShell, Command: "true"}}); err != nil {
				return err
			}
			writes = append(writes, time.Since(t0))
			_, err := rc.GetTask(ctx, name, opts...)
			if errors.Is(err, model.ErrNotFound) {
				missed++
				return nil
			}
			return err
		})
		return res, writes, missed, err
	}
	sends := func() int64 {
		var raw []byte
		_ = t.nodeClient(nodes["leader"], 5*time.Second).Do(ctx, client.Request{Method: http.MethodGet, Path: "/metrics"}, &raw)
		return metricValue(raw, "ax_read_commit_sends_total")
	}
	before := sends()
	res, writes, missed, err := pairs()
	if err != nil {
		return err
	}
	if missed > 0 {
		return fmt.Errorf("read-your-writes: %d of %d default reads through %s missed the write just made through %s", missed, n, r, w)
	}
	wp50, wp99, _ := benchkit.Percentiles(writes)
	fmt.Printf("read-your-writes: %d PUTs through follower %s, each then a default GET through follower %s: all found; PUT+GET p50 %s p99 %s (the PUTs alone p50 %s p99 %s); the leader sent the commit index early %d times\n",
		res.N, w, r, res.P50, res.P99, wp50, wp99, sends()-before)
	res, writes, missed, err = pairs(client.Stale())
	if err != nil {
		return err
	}
	wp50, _, _ = benchkit.Percentiles(writes)
	fmt.Printf("the same with ?stale=true GETs: %d of %d missed the write (404); PUT+GET p50 %s (the PUTs alone p50 %s)\n", missed, res.N, res.P50, wp50)
	return nil
}

// roles asks every address's /healthz and returns the leader's address,
// a follower's ("follower") and another follower's ("other").
func (t *target) roles(ctx context.Context) (map[string]string, error) {
	out := map[string]string{}
	for _, a := range t.addrs {
		h, err := t.nodeClient(a, 5*time.Second).Health(ctx)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", a, err)
		}
		switch {
		case h.Role == member.RoleLeader:
			out["leader"] = a
		case out["follower"] == "":
			out["follower"] = a
		default:
			out["other"] = a
		}
	}
	if out["leader"] == "" {
		return nil, errors.New("no node of " + strings.Join(t.addrs, ",") + " leads")
	}
	return out, nil
}

// readCounts are the read counters of the node read through and of the
// leader.
type readCounts struct{ barriers, rounds, requests, confirms int64 }

func (t *target) readCounters(ctx context.Context, addr, leader string) readCounts {
	metrics := func(a string) []byte {
		var raw []byte
		_ = t.nodeClient(a, 5*time.Second).Do(ctx, client.Request{Method: http.MethodGet, Path: "/metrics"}, &raw)
		return raw
	}
	m, l := metrics(addr), metrics(leader)
	return readCounts{metricValue(m, "ax_read_barriers_total"), metricValue(m, "ax_read_barrier_rounds_total"),
		metricValue(l, "ax_read_index_requests_total"), metricValue(l, "ax_read_index_rounds_total")}
}

// ratio is a/b with one decimal, "-" when b is zero.
func ratio(a, b int64) string {
	if b <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f", float64(a)/float64(b))
}

// oneOf splits a comma-separated flag value, each element one of allowed.
func oneOf(flagName, v string, allowed ...string) ([]string, error) {
	var out []string
	for _, s := range strings.Split(v, ",") {
		s = strings.TrimSpace(s)
		ok := false
		for _, a := range allowed {
			ok = ok || s == a
		}
		if !ok {
			return nil, fmt.Errorf("%s: %q is not one of %s", flagName, s, strings.Join(allowed, ", "))
		}
		out = append(out, s)
	}
	return out, nil
}
