package main

import (
	"context"
	"fmt"
	"os"

	"github.com/ax-scheduler/ax/internal/benchkit/scale"
)

type scaleCommand struct{}

func (*scaleCommand) Usage() string {
	return `
Usage: ax-bench scale [-target 10000000 -step 1000000] [-tasks 100000] [-executors 1000] [common flags]

Fills a temporary cluster step by step to -target pending delayed
submissions (due in -delay, -batch per request from -clients), after
making -tasks cron and interval tasks (daily, or every 6 to 30 hours) and
starting -executors SDK workers in this process (package worker, a no-op
handler) that long-poll. At each step it records the batched submission
rate, the fire lateness (firedAt - scheduledAt) of probes submitted every
250 ms during the step and due 2 s later, and per node fsm.db and the data
directory on disk, VmRSS and RssAnon, and the latest Raft snapshot's size
and write time. Then it kills the leader with SIGKILL (-> new leader ->
every pending instance counted by it -> first fire), restarts the killed
node and adds a fresh one, each until its applied index reaches the
leader's commit index at its start, sampling its memory every 100 ms.
-machine-crash also measures a restart after a simulated machine crash.
It prints Markdown tables, and the machine's load at the start and end.
It needs the temporary cluster (no -addr) of at least 3 nodes.

Examples:
	ax-bench scale -target 10000000 -step 1000000 -tasks 100000 -executors 1000
	ax-bench scale -target 2000000 -step 500000 -tasks 10000 -executors 200
	ax-bench scale -target 200000 -step 50000 -tasks 1000 -executors 50
`
}

func (c *scaleCommand) Run(ctx context.Context, args []string) error {
	bf := newBenchFlags("scale", c.Usage())
	o := scale.Options{Log: os.Stdout}
	o.Register(bf.fs)
	if err := bf.parse(args); err != nil {
		return err
	}
	if err := o.Check(); err != nil {
		return fmt.Errorf("scale: %w", err)
	}
	if bf.conn.Addr != "" || bf.nodes < 3 {
		return fmt.Errorf("scale: kills, restarts and adds agents: it needs the temporary cluster (no -addr) of at least 3 nodes (-nodes)")
	}
	t, err := bf.start(ctx, "-executor", "false")
	if err != nil {
		return err
	}
	defer t.close()
	res, err := scale.Run(ctx, scale.Cluster{Local: t.local, Client: t.cl, TLS: t.tls, Token: t.token}, o)
	if res != nil {
		res.Print(os.Stdout)
	}
	return err
}
