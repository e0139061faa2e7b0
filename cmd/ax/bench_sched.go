package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ax-scheduler/ax/client"
	"github.com/ax-scheduler/ax/model"
)

func benchTask(ctx context.Context, cl *client.Client, name string) error {
	// A high-volume task: no executor runs it here, so the fired instances
	// stay READY (a concurrency limit of 1 would queue them as BLOCKED).
	_, err := cl.PutTask(ctx, &model.Task{Name: name, Trigger: model.Trigger{Type: model.TriggerEvent},
		Action: model.Action{Type: model.ActionShell, Command: "true"}, Policy: model.Policy{MaxConcurrency: 1_000_000}})
	return err
}

func runBenchSubmit(ctx context.Context, args []string) error {
	bf := newBenchFlags("bench submit")
	n := bf.fs.Int("n", 200000, "batched submissions")
	batch := bf.fs.Int("batch", 1000, "submissions per request (array)")
	clients := bf.fs.Int("clients", 4, "concurrent batched clients")
	singleN := bf.fs.Int("single-n", 20000, "single submissions (0 to skip)")
	singleClients := bf.fs.Int("single-clients", 64, "concurrent single-submission clients")
	goClient := bf.fs.Bool("go-client", false, "also run the single submissions through the Go API client (heavier on the shared CPU)")
	delay := bf.fs.Duration("delay", time.Hour, "delay of each submission (kept pending during the run)")
	if err := bf.fs.Parse(args); err != nil {
		return err
	}
	cl, stop, err := bf.start(ctx)
	if err != nil {
		return err
	}
	defer stop()
	if err := benchTask(ctx, cl, "bench-submit"); err != nil {
		return err
	}
	payload := json.RawMessage(`{"order":123456,"action":"close"}`)
	fmt.Printf("%-28s %10s %12s %10s %10s\n", "mode", "submitted", "per second", "p50", "p99")
	if *n > 0 {
		reqs := make([]model.SubmitRequest, *batch)
		for i := range reqs {
			reqs[i] = model.SubmitRequest{Payload: payload, Delay: model.Duration(*delay)}
		}
		r, err := runLoad(ctx, *clients, (*n+*batch-1) / *batch, func() error {
			_, err := cl.SubmitBatch(ctx, "bench-submit", reqs)
			return err
		})
		if err != nil {
			return err
		}
		fmt.Printf("%-28s %10d %12.0f %10s %10s\n", fmt.Sprintf("batched %d x %d clients", *batch, *clients), r.n**batch, float64(r.n**batch)/r.elapsed.Seconds(), r.p50, r.p99)
	}
	if *singleN > 0 {
		req := model.SubmitRequest{Payload: payload, Delay: model.Duration(*delay)}
		if *goClient {
			r, err := runLoad(ctx, *singleClients, *singleN, func() error {
				_, err := cl.Submit(ctx, "bench-submit", req)
				return err
			})
			if err != nil {
				return err
			}
			fmt.Printf("%-28s %10d %12.0f %10s %10s\n", fmt.Sprintf("single x %d (Go client)", *singleClients), r.n, float64(r.n)/r.elapsed.Seconds(), r.p50, r.p99)
		}
		leader, err := leaderAddr(ctx, cl)
		if err != nil {
			return err
		}
		body, err := json.Marshal(req)
		if err != nil {
			return err
		}
		r, err := rawLoad(ctx, leader, bf.tlsConf, *singleClients, *singleN, 0, func(buf []byte, _ int) []byte {
			return rawPost(buf, leader, "/v1/tasks/bench-submit/submit", bf.token, body)
		})
		if err != nil {
			return err
		}
		fmt.Printf("%-28s %10d %12.0f %10s %10s\n", fmt.Sprintf("single x %d clients", *singleClients), r.n, float64(r.n)/r.elapsed.Seconds(), r.p50, r.p99)
		// The same requests to a route that does not exist: what the HTTP
		// layer alone costs on this machine, the ceiling for single writes.
		r, err = rawLoad(ctx, leader, bf.tlsConf, *singleClients, *singleN, http.StatusNotFound, func(buf []byte, _ int) []byte {
			return rawPost(buf, leader, "/v1/no-such-route", bf.token, body)
		})
		if err != nil {
			return err
		}
		fmt.Printf("%-28s %10d %12.0f %10s %10s\n", "  HTTP only (404 route)", r.n, float64(r.n)/r.elapsed.Seconds(), r.p50, r.p99)
	}
	return nil
}

type loadResult struct {
	n             int
	elapsed       time.Duration
	p50, p99, max time.Duration
}

// runLoad runs op n times from the given number of goroutines.
func runLoad(ctx context.Context, clients, n int, op func() error) (*loadResult, error) {
	var next atomic.Int64
	lat := make([]time.Duration, n)
	var wg sync.WaitGroup
	var firstErr error
	var mu sync.Mutex
	start := time.Now()
	for w := 0; w < clients; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n || ctx.Err() != nil {
					return
				}
				t0 := time.Now()
				if err := op(); err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
					return
				}
				lat[i] = time.Since(t0)
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	return summarize(lat, time.Since(start)), nil
}

// summarize sorts the latencies of a finished load run into its result.
func summarize(lat []time.Duration, el time.Duration) *loadResult {
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	pct := func(p float64) time.Duration {
		return lat[min(len(lat)-1, int(p*float64(len(lat))))].Round(10 * time.Microsecond)
	}
	return &loadResult{n: len(lat), elapsed: el, p50: pct(0.5), p99: pct(0.99), max: lat[len(lat)-1].Round(10 * time.Microsecond)}
}

func runBenchFire(ctx context.Context, args []string) error {
	bf := newBenchFlags("bench fire")
	rates := bf.fs.String("rates", "1000,10000,50000", "fire rates per second, comma-separated")
	seconds := bf.fs.Float64("seconds", 4, "how long each rate fires")
	lead := bf.fs.Duration("lead", 10*time.Second, "how far ahead of their due time instances are submitted")
	if err := bf.fs.Parse(args); err != nil {
		return err
	}
	cl, stop, err := bf.start(ctx)
	if err != nil {
		return err
	}
	defer stop()
	fmt.Printf("%-10s %10s %10s %10s %10s %10s %8s\n", "rate/s", "instances", "p50", "p99", "p99.9", "max", "early")
	for round, rs := range strings.Split(*rates, ",") {
		rate, err := strconv.Atoi(strings.TrimSpace(rs))
		if err != nil || rate < 1 {
			return fmt.Errorf("bench fire: bad rate %q", rs)
		}
		task := fmt.Sprintf("bench-fire-%d", round)
		if err := benchTask(ctx, cl, task); err != nil {
			return err
		}
		total := int(float64(rate) * *seconds)
		t0 := time.Now().Add(*lead).Truncate(time.Second).Add(time.Second)
		const batch = 1000
		var reqs []model.SubmitRequest
		flush := func() error {
			if len(reqs) == 0 {
				return nil
			}
			_, err := cl.SubmitBatch(ctx, task, reqs)
			reqs = reqs[:0]
			return err
		}
		for i := 0; i < total; i++ {
			at := model.Time{Time: t0.Add(time.Duration(float64(i) / float64(rate) * float64(time.Second)))}
			reqs = append(reqs, model.SubmitRequest{At: &at})
			if len(reqs) == batch {
				if err := flush(); err != nil {
					return err
				}
			}
		}
		if err := flush(); err != nil {
			return err
		}
		if time.Now().After(t0) {
			return fmt.Errorf("bench fire: submitting %d took longer than -lead %s; raise -lead", total, *lead)
		}
		// Wait for every instance to fire, then read them back.
		end := t0.Add(time.Duration(*seconds * float64(time.Second)))
		select {
		case <-time.After(time.Until(end) + 500*time.Millisecond):
		case <-ctx.Done():
			return ctx.Err()
		}
		var late []time.Duration
		early := 0
		for attempt := 0; ; attempt++ {
			late, early = late[:0], 0
			pending := 0
			f := model.InstanceFilter{Task: task, Limit: 1000}
			for {
				page, err := cl.ListInstances(ctx, f, client.Consistent())
				if err != nil {
					return err
				}
				for _, in := range page.Instances {
					if in.FiredAt.IsZero() {
						pending++
						continue
					}
					d := in.FiredAt.Sub(in.ScheduledAt.Time)
					if d < 0 {
						early++
					}
					late = append(late, d)
				}
				if page.NextCursor == "" {
					break
				}
				f.Cursor = page.NextCursor
			}
			if pending == 0 || attempt > 20 {
				break
			}
			time.Sleep(500 * time.Millisecond)
		}
		sort.Slice(late, func(i, j int) bool { return late[i] < late[j] })
		pct := func(p float64) time.Duration {
			if len(late) == 0 {
				return 0
			}
			return late[min(len(late)-1, int(p*float64(len(late))))]
		}
		fmt.Printf("%-10d %10d %10s %10s %10s %10s %8d\n", rate, len(late), pct(0.5), pct(0.99), pct(0.999), pct(1), early)
	}
	return nil
}
