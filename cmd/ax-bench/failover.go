package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/ax-scheduler/ax/client"
	"github.com/ax-scheduler/ax/internal/benchkit"
	"github.com/ax-scheduler/ax/internal/localcluster"
	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/model/member"
)

type failoverCommand struct{}

func (*failoverCommand) Usage() string {
	return `
Usage: ax-bench failover [-pending 1000000] [common flags]
       ax-bench failover -dispatch [-tries 10] [-how transfer,kill] [-executors 2] [common flags]

Fills the cluster with pending delayed instances, fails the leader (SIGKILL
on the temporary cluster, a leadership transfer with -addr) and measures
how long until a new leader holds every one of them in its wheel.

With -dispatch it measures dispatch instead, over -tries leader changes:
trigger -> instance started right after a transfer, and kill -9 of the
leader -> new leader, -> next timer fired (delayed instances due every
10 ms across the kill) and -> first instance started (ax executor
processes run the instances; the killed node is restarted between
tries). -how kill needs the temporary cluster; -agent-args tries other
Raft timeouts on it.

Examples:
	ax-bench failover -pending 1000000
	ax-bench failover -dispatch -tries 20
	ax-bench failover -dispatch -how kill -tries 20 -agent-args "-raft-heartbeat-timeout 500ms -raft-election-timeout 500ms -raft-lease-timeout 500ms"
	ax-bench failover -dispatch -how transfer -addr 10.0.0.1:7070,10.0.0.2:7070,10.0.0.3:7070
`
}

func (c *failoverCommand) Run(ctx context.Context, args []string) error {
	bf := newBenchFlags("failover", c.Usage())
	pending := bf.fs.Int("pending", 1_000_000, "delayed instances pending when the leader fails")
	batch := bf.fs.Int("batch", 10_000, "submissions per request (array)")
	clients := bf.fs.Int("clients", 4, "concurrent submitting clients")
	dispatch := bf.fs.Bool("dispatch", false, "measure dispatch instead: how soon executors start work after a transfer and a kill -9 of the leader")
	var d dispatchOptions
	bf.fs.IntVar(&d.tries, "tries", 10, "with -dispatch: leader changes of each kind")
	how := bf.fs.String("how", "transfer,kill", "with -dispatch: transfer, kill, or both")
	bf.fs.IntVar(&d.executors, "executors", 2, "with -dispatch: ax executor processes (temporary cluster)")
	if err := bf.parse(args); err != nil {
		return err
	}
	if bf.conn.Addr == "" && bf.nodes < 3 {
		return fmt.Errorf("failover: needs a cluster of at least 3 nodes (-nodes %d)", bf.nodes)
	}
	if *dispatch {
		for _, h := range strings.Split(*how, ",") {
			switch h {
			case "transfer":
				d.transfer = true
			case "kill":
				d.kill = true
			default:
				return fmt.Errorf("failover: bad -how entry %q: want transfer, kill or both", h)
			}
		}
		if d.tries < 1 || d.executors < 0 {
			return fmt.Errorf("failover: -tries must be positive, -executors not negative")
		}
		t, err := startFailover(ctx, bf, "-executor", "false")
		if err != nil {
			return err
		}
		defer t.close()
		return benchFailoverDispatch(ctx, t, d)
	}
	if *pending < 1 || *batch < 1 || *clients < 1 {
		return fmt.Errorf("failover: -pending, -batch and -clients must be positive")
	}
	t, err := startFailover(ctx, bf)
	if err != nil {
		return err
	}
	defer t.close()
	return benchFailover(ctx, t, *pending, *batch, *clients)
}

// startFailover starts (or connects to) a cluster of at least 3 nodes.
func startFailover(ctx context.Context, bf *benchFlags, extra ...string) (*target, error) {
	t, err := bf.start(ctx, extra...)
	if err != nil {
		return nil, err
	}
	if len(t.addrs) < 3 {
		t.close()
		return nil, fmt.Errorf("failover: needs a cluster of at least 3 nodes (got %d addresses)", len(t.addrs))
	}
	return t, nil
}

// benchFailover fills the cluster with pending delayed instances, fails
// the leader and measures how long until a new leader holds every one of
// them in its wheel. (Memory per pending instance is measured by the
// scheduler's Rebuild benchmark: across processes, garbage not yet
// collected outweighs it.)
func benchFailover(ctx context.Context, t *target, pending, batch, clients int) error {
	cl := t.cl
	if err := benchTask(ctx, cl, "bench-failover"); err != nil {
		return err
	}
	// Due 10 to 50 minutes from now: inside the default 1h horizon, so a
	// leader holds every one in its wheel, and none fires during the run.
	payload := json.RawMessage(`{"order":123456,"action":"close"}`)
	reqs := make([]model.SubmitRequest, batch)
	for i := range reqs {
		spread := time.Duration(i) * 40 * time.Minute / time.Duration(batch)
		reqs[i] = model.SubmitRequest{Payload: payload, Delay: model.Duration(10*time.Minute + spread)}
	}
	requests := (pending + batch - 1) / batch
	r, err := benchkit.RunLoad(ctx, clients, requests, func() error {
		_, err := cl.SubmitBatch(ctx, "bench-failover", reqs)
		return err
	})
	if err != nil {
		return err
	}
	total := r.N * batch
	fmt.Printf("submitted %d pending instances in %s (%.0f/s)\n", total, r.Elapsed.Round(time.Millisecond), float64(total)/r.Elapsed.Seconds())

	old, err := t.leaderHealth(ctx)
	if err != nil {
		return err
	}
	if err := waitAllApplied(ctx, t, old.AppliedIndex); err != nil {
		return err
	}

	// One client per node, made before the clock starts: a poll reuses its
	// connection (with TLS a new one costs a handshake), and a dead node
	// refuses at once.
	probes := map[string]*client.Client{}
	for _, a := range t.addrs {
		probes[a] = t.nodeClient(a, time.Second)
	}
	start := time.Now()
	how := "transferred"
	if t.local != nil {
		how = "killed (SIGKILL)"
		for _, n := range t.local.Nodes {
			if n.ID == old.Node {
				n.Kill()
			}
		}
	} else if err := cl.Transfer(ctx, ""); err != nil {
		return fmt.Errorf("failover: transfer leadership: %w", err)
	}
	var elected, full time.Duration
	var h *member.Health
	err = localcluster.WaitFor(ctx, 60*time.Second, func() error {
		for _, a := range t.addrs {
			got, err := probes[a].Health(ctx)
			if err != nil || got.Role != member.RoleLeader || got.Node == old.Node {
				continue
			}
			if elected == 0 {
				elected = time.Since(start)
			}
			if got.WheelSize >= total && got.WheelLoad > 0 { // filled, and the load done
				full, h = time.Since(start), got
				return nil
			}
			return fmt.Errorf("new leader %s holds %d of %d", got.Node, got.WheelSize, total)
		}
		return fmt.Errorf("no new leader yet")
	})
	if err != nil {
		return err
	}
	fmt.Printf("leader %s %s; new leader %s\n", old.Node, how, h.Node)
	fmt.Printf("%-52s %12s\n", "measure", "figure")
	fmt.Printf("%-52s %12s\n", "leader lost -> new leader elected (seen)", elected.Round(time.Millisecond))
	fmt.Printf("%-52s %12s\n", fmt.Sprintf("new leader loads its wheel (%d timers)", h.WheelSize), time.Duration(h.WheelLoad).Round(10*time.Microsecond))
	fmt.Printf("%-52s %12s\n", "leader lost -> every pending instance in the wheel", full.Round(time.Millisecond))
	return nil
}

// waitAllApplied waits until every node has applied index.
func waitAllApplied(ctx context.Context, t *target, index uint64) error {
	return localcluster.WaitFor(ctx, 60*time.Second, func() error {
		for _, a := range t.addrs {
			h, err := t.nodeClient(a, time.Second).Health(ctx)
			if err != nil {
				return err
			}
			if h.AppliedIndex < index {
				return fmt.Errorf("%s applied %d of %d", a, h.AppliedIndex, index)
			}
		}
		return nil
	})
}
