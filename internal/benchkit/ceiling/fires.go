package ceiling

import (
	"context"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ax-scheduler/ax/internal/benchkit"
	"github.com/ax-scheduler/ax/internal/benchkit/scale"
	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/worker"
)

// FireRow is one window of the fires phase at one rate.
type FireRow struct {
	Rate      int
	Hold      bool // a minute of the hold, not a step
	Took      time.Duration
	Submitted int64 // fires submitted in the window
	Failed    int64 // submissions that failed
	Started   int   // handler starts in the window
	// P50, P99 and Max are due (scheduledAt) -> handler start of the
	// starts in the window: fire lateness plus dispatch.
	P50, P99, Max time.Duration
	Backlog       int64 // due but not started, at the window's end
	MaxBacklog    int64 // the most seen, sampled every second
	MaxActive     int   // the leader's READY+RUNNING+..., the most seen
	Pending       int   // the leader's SCHEDULED count at the end
	Procs         []Proc
	Pass          bool
}

// fireLoad is the steady stream: a submitter whose rate can change and a
// record of the handlers' starts.
type fireLoad struct {
	rate      atomic.Int64
	submitted atomic.Int64
	failed    atomic.Int64
	due       dueLog
	mu        sync.Mutex
	late      []time.Duration // starts since the window opened
	started   atomic.Int64
}

// dueLog records each submitted batch's last due time, to count what is
// due by a time.
type dueLog struct {
	mu    sync.Mutex
	times []time.Time
	sizes []int64
}

func (d *dueLog) add(at time.Time, n int64) {
	d.mu.Lock()
	d.times, d.sizes = append(d.times, at), append(d.sizes, n)
	d.mu.Unlock()
}

// by counts the fires due by t (a batch is counted once its last is due).
func (d *dueLog) by(t time.Time) int64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	var n int64
	for i := range d.times {
		if !d.times[i].After(t) {
			n += d.sizes[i]
		}
	}
	return n
}

// submit submits, every 100 ms, what the rate asks for since the last
// rate change, spread evenly over the next 100 ms lead later, up to 8
// requests in flight.
func (l *fireLoad) submit(ctx context.Context, c scale.Cluster, lead time.Duration) {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	sem := make(chan struct{}, 8)
	var owed float64
	last := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			now := time.Now()
			owed += float64(l.rate.Load()) * max(0, now.Sub(last).Seconds())
			last = now
			n := int(owed)
			if n < 1 {
				continue
			}
			owed -= float64(n)
			reqs := make([]model.SubmitRequest, n)
			base := now.Add(lead)
			for i := range reqs {
				at := model.Time{Time: base.Add(time.Duration(i) * 100 * time.Millisecond / time.Duration(n))}
				reqs[i] = model.SubmitRequest{At: &at}
			}
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				return
			}
			go func() {
				defer func() { <-sem }()
				if _, err := c.Client.SubmitBatch(ctx, fireTask, reqs); err != nil {
					l.failed.Add(int64(n))
					return
				}
				l.submitted.Add(int64(n))
				l.due.add(reqs[n-1].At.Time, int64(n))
			}()
		}
	}
}

func (l *fireLoad) handle(_ context.Context, j worker.Job) error {
	late := time.Since(j.ScheduledAt)
	l.started.Add(1)
	l.mu.Lock()
	l.late = append(l.late, late)
	l.mu.Unlock()
	return nil
}

const fireTask = "ceiling-fire"

// fires runs the steps, then the hold.
func fires(ctx context.Context, c scale.Cluster, o Options, rates []int) ([]FireRow, error) {
	if err := putTask(ctx, c.Client, fireTask, "ceiling-fire", model.Trigger{Type: model.TriggerEvent}); err != nil {
		return nil, err
	}
	l := &fireLoad{}
	wctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() { stop(); wg.Wait() }()
	for i := range o.Workers {
		w, err := worker.New(worker.Config{Servers: c.Local.Addrs(), Name: fmt.Sprintf("ceiling-fire-%02d", i), Capacity: o.Capacity,
			TLS: c.TLS, Token: c.Token, Labels: map[string]string{"kind": "ceiling-fire"}, Logger: hclog.NewNullLogger(),
			ShutdownGrace: -1, Handlers: map[string]worker.Handler{handler: l.handle}})
		if err != nil {
			return nil, err
		}
		wg.Add(1)
		go func() { defer wg.Done(); _ = w.Run(wctx) }()
	}
	wg.Add(1)
	go func() { defer wg.Done(); l.submit(wctx, c, o.Lead) }()
	if _, err := waitExecutors(ctx, c, o.Workers, time.Minute); err != nil {
		return nil, err
	}
	var rows []FireRow
	best := 0
	for _, r := range rates {
		row, err := l.window(ctx, c, o, r, o.Step, false)
		rows = append(rows, row)
		if err != nil {
			return rows, err
		}
		logf(o, "%d fires/s: started %d, p99 %s, backlog %d (max %d), pass %v; CPU %s", r, row.Started, row.P99, row.Backlog, row.MaxBacklog, row.Pass, cores(row.Procs))
		if !row.Pass {
			break
		}
		best = r
	}
	hold := o.HoldRate
	if hold == 0 {
		hold = best
	}
	if o.Hold <= 0 || hold == 0 {
		return rows, nil
	}
	// Let a failed step's backlog drain before the hold.
	l.rate.Store(0)
	_ = benchkit.Sleep(ctx, o.Lead)
	for end := time.Now().Add(2 * time.Minute); time.Now().Before(end) && l.due.by(time.Now()) > l.started.Load(); {
		_ = benchkit.Sleep(ctx, time.Second)
	}
	logf(o, "holding %d fires/s for %s", hold, o.Hold)
	for held := time.Duration(0); held < o.Hold; held += time.Minute {
		row, err := l.window(ctx, c, o, hold, min(time.Minute, o.Hold-held), held > 0)
		row.Hold = true
		rows = append(rows, row)
		if err != nil {
			return rows, err
		}
		logf(o, "hold minute %d: started %d, p99 %s, backlog %d (max %d), leader active max %d, pending %d; CPU %s", held/time.Minute+1, row.Started, row.P99, row.Backlog, row.MaxBacklog, row.MaxActive, row.Pending, cores(row.Procs))
	}
	return rows, nil
}

// window sets the rate, waits the lead (unless the rate was already on)
// so that the fires due in the window are the new rate's, then measures
// for d.
func (l *fireLoad) window(ctx context.Context, c scale.Cluster, o Options, rate int, d time.Duration, continued bool) (FireRow, error) {
	row := FireRow{Rate: rate}
	l.rate.Store(int64(rate))
	if !continued {
		if err := benchkit.Sleep(ctx, o.Lead); err != nil {
			return row, err
		}
	}
	h, err := health(ctx, c)
	if err != nil {
		return row, err
	}
	win := startWindow(c, h.Node)
	l.mu.Lock()
	l.late = l.late[:0]
	l.mu.Unlock()
	sub0, fail0 := l.submitted.Load(), l.failed.Load()
	start := time.Now()
	for time.Since(start) < d {
		if err := benchkit.Sleep(ctx, time.Second); err != nil {
			return row, err
		}
		row.Backlog = max(0, l.due.by(time.Now())-l.started.Load())
		row.MaxBacklog = max(row.MaxBacklog, row.Backlog)
		if h, err := health(ctx, c); err == nil {
			row.MaxActive, row.Pending = max(row.MaxActive, h.Active), h.Pending
		}
	}
	row.Took = time.Since(start)
	row.Procs = win.end(c)
	row.Submitted, row.Failed = l.submitted.Load()-sub0, l.failed.Load()-fail0
	l.mu.Lock()
	late := append([]time.Duration(nil), l.late...)
	l.mu.Unlock()
	row.Started = len(late)
	if len(late) > 0 {
		row.P50, row.P99, row.Max = benchkit.Percentiles(late)
	}
	row.Pass = len(late) > 0 && row.P99 <= o.MaxLate && row.Backlog <= max(int64(float64(rate)*o.MaxLate.Seconds()), 10) && row.Failed == 0
	return row, nil
}

func printFires(w io.Writer, o Options, rows []FireRow) {
	if len(rows) == 0 {
		return
	}
	fmt.Fprintf(w, "\nFires: delayed submissions due in a steady stream (submitted %s ahead, every 100 ms), run by %d in-process SDK workers of capacity %d (a no-op handler). Lateness is due (scheduledAt) -> the handler's start, of the starts in the window; backlog is due but not started at the window's end (most seen in brackets); active is the leader's READY+RUNNING count, the most seen. CPU is cores busy over the window per process (* the leader). A row passes when p99 <= %s, the backlog stays within a second's fires, and no submission failed.\n\n",
		o.Lead, o.Workers, o.Capacity, o.MaxLate)
	fmt.Fprintln(w, "| fires/s | window | started/s | p50 | p99 | max | backlog (max) | active max | pending | leader RSS MB (anon) | leader data dir MB | CPU cores | CPU ms per start (leader) | pass |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
	for _, r := range rows {
		what := "step"
		if r.Hold {
			what = "hold"
		}
		ld := leaderProc(r.Procs)
		sum := 0.0
		for _, p := range r.Procs {
			sum += p.Cores
		}
		perStart := func(c float64) float64 { return c * r.Took.Seconds() * 1000 / float64(max(r.Started, 1)) }
		fmt.Fprintf(w, "| %d | %s %s | %.0f | %s | %s | %s | %d (%d) | %d | %d | %s (%s) | %s | %s | %.2f (%.2f) | %v |\n",
			r.Rate, what, r.Took.Round(time.Second), float64(r.Started)/r.Took.Seconds(), r.P50, r.P99, r.Max, r.Backlog, r.MaxBacklog,
			r.MaxActive, r.Pending, benchkit.MB(ld.RSSKB<<10), benchkit.MB(ld.AnonKB<<10), benchkit.MB(ld.DiskBytes), cores(r.Procs),
			perStart(sum), perStart(ld.Cores), r.Pass)
	}
}
