package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync/atomic"
	"time"

	"github.com/ax-scheduler/ax/client"
	"github.com/ax-scheduler/ax/internal/benchkit"
	"github.com/ax-scheduler/ax/model"
)

type consoleCommand struct{}

func (*consoleCommand) Usage() string {
	return `
Usage: ax-bench console [-tasks 1000] [-instances 1000000] [-finished 20000] [-n 30] [common flags]

Fills the cluster like a busy installation (-tasks, a third each cron,
interval and event; -instances delayed ones that stay SCHEDULED; -finished
run to the end by the agents' embedded executors) and times every request
the operator console makes, -n times each, sequentially, on a follower
and on the leader.

Examples:
	ax-bench console -tasks 1000 -instances 1000000
	ax-bench console -tasks 1000 -instances 1000000 -finished 20000 -n 30
`
}

func (c *consoleCommand) Run(ctx context.Context, args []string) error {
	bf := newBenchFlags("console", c.Usage())
	var o consoleOptions
	bf.fs.IntVar(&o.tasks, "tasks", 1000, "tasks: a third cron, a third interval, a third event")
	bf.fs.IntVar(&o.instances, "instances", 1_000_000, "delayed instances submitted (due in 6h: they stay SCHEDULED)")
	bf.fs.IntVar(&o.finished, "finished", 20000, "instances due at once that the embedded executors run to SUCCESS or FAILED")
	bf.fs.IntVar(&o.reps, "n", 30, "requests per console endpoint")
	if err := bf.parse(args); err != nil {
		return err
	}
	if o.tasks < 3 || o.instances < 0 || o.finished < 0 || o.reps < 1 {
		return fmt.Errorf("console: -tasks must be at least 3, -n positive, -instances and -finished not negative")
	}
	t, err := bf.start(ctx)
	if err != nil {
		return err
	}
	defer t.close()
	return benchConsole(ctx, t, o)
}

// consoleOptions are the console scenario's flags.
type consoleOptions struct {
	tasks, instances, finished, reps int
}

// benchConsole fills a cluster the way a busy installation looks (many
// tasks, a million instances, some finished) and times each request the
// console makes, on a follower and on the leader.
func benchConsole(ctx context.Context, t *target, o consoleOptions) error {
	cl := t.cl
	start := time.Now()
	zones := []string{"UTC", "America/New_York", "Europe/Berlin", "Asia/Tokyo"}
	var next atomic.Int64
	if _, err := benchkit.RunLoad(ctx, 16, o.tasks, func() error {
		i := int(next.Add(1) - 1)
		t := &model.Task{Name: fmt.Sprintf("console-%04d", i), Labels: map[string]string{"team": fmt.Sprintf("t%d", i%10)},
			// One run in sixteen fails (its hex id ends in 0), 64 at a time.
			Action: model.Action{Type: model.ActionShell, Command: `case "$AX_INSTANCE_ID" in *0) exit 3;; esac`},
			Policy: model.Policy{MaxConcurrency: 64}}
		switch i % 3 {
		case 0:
			t.Trigger = model.Trigger{Type: model.TriggerCron, Expression: fmt.Sprintf("%d */2 * * *", i%60), Timezone: zones[i%len(zones)]}
		case 1:
			t.Trigger = model.Trigger{Type: model.TriggerInterval, Every: model.Duration(time.Duration(30+i%90) * time.Minute)}
		default:
			t.Trigger = model.Trigger{Type: model.TriggerEvent}
		}
		_, err := cl.PutTask(ctx, t)
		return err
	}); err != nil {
		return err
	}
	fmt.Printf("%d tasks in %v\n", o.tasks, time.Since(start).Round(time.Millisecond))

	// Submissions go to the event tasks, 10,000 per request.
	events := max(o.tasks/3, 1)
	submit := func(n int, delay time.Duration) error {
		const batch = 10000
		var sent atomic.Int64
		var req atomic.Int64
		_, err := benchkit.RunLoad(ctx, 4, (n+batch-1)/batch, func() error {
			r := int(req.Add(1) - 1)
			size := min(batch, n-r*batch)
			reqs := make([]model.SubmitRequest, size)
			for i := range reqs {
				reqs[i] = model.SubmitRequest{Delay: model.Duration(delay), Payload: json.RawMessage(`{"order":1}`)}
			}
			_, err := cl.SubmitBatch(ctx, fmt.Sprintf("console-%04d", 3*(r%events)+2), reqs)
			if s := sent.Add(int64(size)); s%100_000 < int64(size) {
				fmt.Printf("  %d submitted\n", s)
			}
			return err
		})
		return err
	}
	start = time.Now()
	if err := submit(o.instances, 6*time.Hour); err != nil {
		return err
	}
	fmt.Printf("%d delayed instances in %v\n", o.instances, time.Since(start).Round(time.Millisecond))
	if o.finished > 0 {
		start = time.Now()
		if err := submit(o.finished, 0); err != nil {
			return err
		}
		if err := waitFinished(ctx, cl, o.finished); err != nil {
			return err
		}
		fmt.Printf("%d instances run to the end in %v\n", o.finished, time.Since(start).Round(time.Millisecond))
	}

	leader, err := benchkit.LeaderAddr(ctx, cl)
	if err != nil {
		return err
	}
	var follower string
	for _, a := range t.addrs {
		if a != leader {
			follower = a
			break
		}
	}
	hc := &http.Client{Timeout: 30 * time.Second}
	if t.tls != nil {
		hc.Transport = &http.Transport{TLSClientConfig: t.tls}
	}
	scheme := "http://"
	if t.tls != nil {
		scheme = "https://"
	}
	paths := []string{
		"/v1/overview",
		"/v1/upcoming?within=1h&limit=500",
		"/v1/upcoming?within=1d&limit=500",
		"/v1/tasks?summary=true&limit=100",
		"/v1/tasks/console-0000",
		"/v1/tasks/console-0000/calendar?days=91",
		"/v1/tasks/console-0000/fires?n=20",
		"/v1/tasks/console-0000/graph",
		"/v1/tasks/console-0000/history",
		"/v1/audit?limit=50",
		"/v1/alerts", "/v1/executors", "/v1/cluster",
		"/v1/channels", "/v1/pools", "/v1/calendars", "/v1/windows",
		"/v1/instances?limit=50",
		"/v1/instances?limit=50&state=FAILED",
		"/v1/instances?limit=50&state=READY",
		"/v1/instances?limit=50&task=console-0002",
		"/ui/",
	}
	fmt.Printf("\n%-44s %-9s %9s %9s %9s %10s\n", "request (sequential, loopback)", "node", "p50", "p99", "max", "bytes")
	for _, p := range paths {
		for _, node := range []struct{ name, addr string }{{"follower", follower}, {"leader", leader}} {
			if node.addr == "" {
				continue
			}
			var lat []time.Duration
			size := 0
			for range o.reps {
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, scheme+node.addr+p, nil)
				if t.token != "" {
					req.Header.Set("Authorization", "Bearer "+t.token)
				}
				t0 := time.Now()
				res, err := hc.Do(req)
				if err != nil {
					return err
				}
				n, _ := io.Copy(io.Discard, res.Body)
				res.Body.Close()
				lat = append(lat, time.Since(t0))
				if res.StatusCode != http.StatusOK {
					return fmt.Errorf("GET %s on the %s: %s", p, node.name, res.Status)
				}
				size = int(n)
			}
			slices.Sort(lat)
			fmt.Printf("%-44s %-9s %9s %9s %9s %10d\n", p, node.name, round(lat[len(lat)/2]), round(lat[len(lat)*99/100]), round(lat[len(lat)-1]), size)
		}
	}
	if follower == "" {
		return nil
	}
	return liveLatency(ctx, t, cl, follower, o.reps)
}

// liveLatency prints how soon a change shows on the follower's event
// stream, which the console's pages redraw on (benchkit.LiveLatency).
func liveLatency(ctx context.Context, t *target, cl *client.Client, follower string, n int) error {
	lat, err := benchkit.LiveLatency(ctx, cl, t.nodeClient(follower, 5*time.Second), "console-0002", n)
	if err != nil {
		return err
	}
	fmt.Printf("%-44s %-9s %9s %9s %9s\n", "live: trigger -> its event on the stream", "follower", round(lat[len(lat)/2]), round(lat[len(lat)*99/100]), round(lat[len(lat)-1]))
	return nil
}

// waitFinished waits until the overview counts n finished instances in the
// last hour.
func waitFinished(ctx context.Context, cl *client.Client, n int) error {
	deadline := time.Now().Add(10 * time.Minute)
	for time.Now().Before(deadline) {
		var o struct {
			LastHour map[string]int `json:"lastHour"`
		}
		if err := cl.Do(ctx, client.Request{Method: http.MethodGet, Path: "/v1/overview"}, &o); err != nil {
			return err
		}
		done := o.LastHour[model.StateSuccess] + o.LastHour[model.StateFailed]
		if done >= n {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
	return fmt.Errorf("console: %d instances did not finish within 10 minutes", n)
}

func round(d time.Duration) time.Duration {
	if d > 10*time.Millisecond {
		return d.Round(100 * time.Microsecond)
	}
	return d.Round(10 * time.Microsecond)
}
