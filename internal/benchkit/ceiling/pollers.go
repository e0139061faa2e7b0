package ceiling

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ax-scheduler/ax/internal/benchkit"
	"github.com/ax-scheduler/ax/internal/benchkit/scale"
	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/worker"
)

// PollerRow is one step of the executors phase.
type PollerRow struct {
	Executors int
	Seen      int           // executors the leader heard from in the last minute
	Ready     time.Duration // the step's new workers started -> the leader heard from all
	// Probe is submission -> handler start of immediate submissions, 4 a
	// second over the window: dispatch to one of the idle executors.
	ProbeP50, ProbeP99 time.Duration
	Probes, Lost       int
	// Terms are the leader's Raft term when the step's workers started
	// and at the window's end: a rise is an election.
	Term0, Term1 uint64
	Procs        []Proc
	Took         time.Duration
}

const probeTask = "ceiling-probe"

// pollWait is the workers' long-poll wait (package worker's default): an
// idle executor asks again every pollWait.
const pollWait = 20 * time.Second

// pollers starts idle long-polling workers, step by step, and measures
// each step over a window of two poll waits.
func pollers(ctx context.Context, c scale.Cluster, o Options, counts []int) ([]PollerRow, error) {
	if err := putTask(ctx, c.Client, probeTask, "ceiling-idle", model.Trigger{Type: model.TriggerEvent}); err != nil {
		return nil, err
	}
	var mu sync.Mutex
	started := map[string]time.Duration{} // instance -> submission to start
	probe := func(_ context.Context, j worker.Job) error {
		mu.Lock()
		started[j.InstanceID] = time.Since(j.ScheduledAt)
		mu.Unlock()
		return nil
	}
	wctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() { stop(); wg.Wait() }()
	var rows []PollerRow
	running := 0
	for _, n := range counts {
		row := PollerRow{Executors: n}
		if h, err := health(ctx, c); err == nil {
			row.Term0 = h.Term
		}
		t0 := time.Now()
		for ; running < n; running++ {
			w, err := worker.New(worker.Config{Servers: c.Local.Addrs(), Name: fmt.Sprintf("ceiling-idle-%05d", running), Capacity: 1,
				TLS: c.TLS, Token: c.Token, Labels: map[string]string{"kind": "ceiling-idle"}, Logger: hclog.NewNullLogger(),
				ShutdownGrace: -1, PollWait: pollWait, Handlers: map[string]worker.Handler{handler: probe}})
			if err != nil {
				return rows, err
			}
			wg.Add(1)
			go func() { defer wg.Done(); _ = w.Run(wctx) }()
		}
		var err error
		row.Seen, err = waitExecutors(ctx, c, n, 3*time.Minute)
		row.Ready = time.Since(t0)
		if err != nil {
			if h, herr := health(ctx, c); herr == nil {
				row.Term1 = h.Term
			}
			rows = append(rows, row)
			return rows, err
		}
		// A poll wait for the new ones' first polls to spread out.
		if err := benchkit.Sleep(ctx, pollWait); err != nil {
			return rows, err
		}
		h, err := health(ctx, c)
		if err != nil {
			return rows, err
		}
		win := startWindow(c, h.Node)
		start := time.Now()
		var ids []string
		tick := time.NewTicker(250 * time.Millisecond)
		for time.Since(start) < 2*pollWait {
			if s, err := c.Client.Submit(ctx, probeTask, model.SubmitRequest{}); err == nil {
				ids = append(ids, s.ID)
			}
			<-tick.C
		}
		tick.Stop()
		row.Took = time.Since(start)
		row.Procs = win.end(c)
		if h, err := health(ctx, c); err == nil {
			row.Seen, row.Term1 = h.Executors, h.Term
		}
		_ = benchkit.Sleep(ctx, 2*time.Second)
		var late []time.Duration
		mu.Lock()
		for _, id := range ids {
			if d, ok := started[id]; ok {
				late = append(late, d)
			}
		}
		mu.Unlock()
		row.Probes, row.Lost = len(late), len(ids)-len(late)
		if len(late) > 0 {
			row.ProbeP50, row.ProbeP99, _ = benchkit.Percentiles(late)
		}
		rows = append(rows, row)
		logf(o, "%d executors (leader heard from %d, all within %s): probe p50 %s p99 %s (%d, %d not started); term %d -> %d; CPU %s", n, row.Seen, row.Ready.Round(time.Millisecond), row.ProbeP50, row.ProbeP99, row.Probes, row.Lost, row.Term0, row.Term1, cores(row.Procs))
	}
	return rows, nil
}

func printPollers(w io.Writer, rows []PollerRow) {
	if len(rows) == 0 {
		return
	}
	fmt.Fprintf(w, "\nExecutors: in-process SDK workers (package worker) of capacity 1, idle, long-polling (a poll waits %s: about executors/%d polls a second); the probe is an immediate submission 4 times a second, submission -> handler start, over a window of %s. Per process: CPU cores busy over the window, VmRSS (RssAnon), open descriptors, threads (* the leader).\n\n",
		pollWait, int(pollWait.Seconds()), 2*pollWait)
	fmt.Fprintln(w, "| executors | leader heard from | all heard within | probe p50 | probe p99 | probes (not started) | CPU cores | leader RSS MB (anon) | fds (leader / ax-bench) | threads (leader) | term |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|---|")
	for _, r := range rows {
		ld := leaderProc(r.Procs)
		self := Proc{FDs: -1}
		if len(r.Procs) > 0 {
			self = r.Procs[len(r.Procs)-1]
		}
		fmt.Fprintf(w, "| %d | %d | %s | %s | %s | %d (%d) | %s | %s (%s) | %d / %d | %d | %d -> %d |\n",
			r.Executors, r.Seen, r.Ready.Round(100*time.Millisecond), r.ProbeP50, r.ProbeP99, r.Probes, r.Lost, cores(r.Procs),
			benchkit.MB(ld.RSSKB<<10), benchkit.MB(ld.AnonKB<<10), ld.FDs, self.FDs, ld.Threads, r.Term0, r.Term1)
	}
}
