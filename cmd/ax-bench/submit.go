package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/ax-scheduler/ax/client"
	"github.com/ax-scheduler/ax/internal/benchkit"
	"github.com/ax-scheduler/ax/model"
)

type submitCommand struct{}

func (*submitCommand) Usage() string {
	return `
Usage: ax-bench submit [-n 200000 -batch 1000 -clients 4] [-single-n 20000 -single-clients 64] [common flags]

Delayed submissions/s committed: batched (arrays of -batch per request from
-clients Go API clients); single ones from -single-clients goroutines
through the Go SDK's client.Submitter, which coalesces them into array
requests (-sdk-linger, -sdk-inflight, -sdk-batch; -sdk=false skips it);
single ones from a lean keep-alive HTTP/1.1 generator, one request each;
then the same requests to a missing route: what HTTP alone costs on this
machine, the ceiling for one request per submission. -go-client adds a
run of the single submissions through Client.Submit (one request each).
-cron-tasks (with -cron-expr, -cron-jitter, -cron-window) has cron tasks
fire in the background during the run, as ax-bench fire -h says.

Examples:
	ax-bench submit -batch 1000 -n 200000 -clients 4 -single-clients 64 -single-n 40000
	ax-bench submit -n 0 -single-n 100000 -sdk-inflight 1,2 -sdk-linger none,1ms -sdk-goroutines 64,1024
	ax-bench submit -tls -n 200000 -clients 4 -batch 1000 -single-n 0
	ax-bench submit -addr 10.0.0.1:7070 -token-file admin.token -n 0 -single-n 20000
`
}

func (c *submitCommand) Run(ctx context.Context, args []string) error {
	bf := newBenchFlags("submit", c.Usage())
	n := bf.fs.Int("n", 200000, "batched submissions (0 to skip)")
	batch := bf.fs.Int("batch", 1000, "submissions per request (array)")
	clients := bf.fs.Int("clients", 4, "concurrent batched clients")
	singleN := bf.fs.Int("single-n", 20000, "single submissions (0 to skip)")
	singleClients := bf.fs.Int("single-clients", 64, "concurrent single-submission clients")
	goClient := bf.fs.Bool("go-client", false, "also run the single submissions through Client.Submit, one request each (heavier on the shared CPU)")
	sdk := bf.fs.Bool("sdk", true, "run the single submissions through client.Submitter too")
	sdkLinger := bf.fs.String("sdk-linger", client.DefaultSubmitLinger.String(), "the Submitter's Linger: durations, comma-separated (one row each; \"none\" for none)")
	sdkInFlight := bf.fs.String("sdk-inflight", strconv.Itoa(client.DefaultSubmitMaxInFlight), "the Submitter's MaxInFlight: counts, comma-separated (one row each)")
	sdkGoroutines := bf.fs.String("sdk-goroutines", "", "goroutines of the -sdk rows, comma-separated (default -single-clients)")
	sdkBatch := bf.fs.Int("sdk-batch", client.DefaultSubmitMaxBatch, "the Submitter's MaxBatch")
	delay := bf.fs.Duration("delay", time.Hour, "delay of each submission (kept pending during the run)")
	var crons cronLoad
	crons.register(bf.fs)
	if err := bf.parse(args); err != nil {
		return err
	}
	if *n < 0 || *singleN < 0 || *batch < 1 || *clients < 1 || *singleClients < 1 || *sdkBatch < 1 {
		return fmt.Errorf("submit: -batch, -clients, -single-clients and -sdk-batch must be positive, -n and -single-n not negative")
	}
	lingers, err := parseLingers("-sdk-linger", *sdkLinger)
	if err != nil {
		return err
	}
	inflights, err := benchkit.ParseCounts("-sdk-inflight", *sdkInFlight)
	if err != nil {
		return err
	}
	goroutines := []int{*singleClients}
	if *sdkGoroutines != "" {
		if goroutines, err = benchkit.ParseCounts("-sdk-goroutines", *sdkGoroutines); err != nil {
			return err
		}
	}
	var sdkRuns []sdkRun
	if *sdk {
		for _, g := range goroutines {
			for _, f := range inflights {
				for _, l := range lingers {
					sdkRuns = append(sdkRuns, sdkRun{goroutines: g, cfg: client.SubmitterConfig{MaxBatch: *sdkBatch, MaxInFlight: f, Linger: l}})
				}
			}
		}
	}
	t, err := bf.start(ctx)
	if err != nil {
		return err
	}
	defer t.close()
	if err := crons.start(ctx, t.cl); err != nil {
		return err
	}
	if err := benchSubmit(ctx, t, submitOptions{n: *n, batch: *batch, clients: *clients,
		singleN: *singleN, singleClients: *singleClients, goClient: *goClient, sdk: sdkRuns, delay: *delay}); err != nil {
		return err
	}
	return crons.report(ctx, t.cl)
}

// submitOptions are the submit scenario's flags.
type submitOptions struct {
	n, batch, clients      int
	singleN, singleClients int
	goClient               bool
	sdk                    []sdkRun // one row each
	delay                  time.Duration
}

func benchSubmit(ctx context.Context, t *target, o submitOptions) error {
	cl := t.cl
	if err := benchTask(ctx, cl, "bench-submit"); err != nil {
		return err
	}
	payload := json.RawMessage(`{"order":123456,"action":"close"}`)
	fmt.Printf("%-28s %10s %12s %10s %10s\n", "mode", "submitted", "per second", "p50", "p99")
	if o.n > 0 {
		reqs := make([]model.SubmitRequest, o.batch)
		for i := range reqs {
			reqs[i] = model.SubmitRequest{Payload: payload, Delay: model.Duration(o.delay)}
		}
		r, err := benchkit.RunLoad(ctx, o.clients, (o.n+o.batch-1)/o.batch, func() error {
			_, err := cl.SubmitBatch(ctx, "bench-submit", reqs)
			return err
		})
		if err != nil {
			return err
		}
		fmt.Printf("%-28s %10d %12.0f %10s %10s\n", fmt.Sprintf("batched %d x %d clients", o.batch, o.clients), r.N*o.batch, r.Rate()*float64(o.batch), r.P50, r.P99)
	}
	if o.singleN == 0 {
		return nil
	}
	req := model.SubmitRequest{Payload: payload, Delay: model.Duration(o.delay)}
	leader, err := benchkit.LeaderAddr(ctx, cl)
	if err != nil {
		return err
	}
	var sdkRate float64
	lc := leaderClient(t, leader)
	for _, run := range o.sdk {
		r, err := sdkLoad(ctx, lc, run.cfg, run.goroutines, o.singleN, req)
		if err != nil {
			return err
		}
		fmt.Printf("%-28s %10d %12.0f %10s %10s\n", run.label(len(o.sdk) > 1), r.N, r.Rate(), r.P50, r.P99)
		if run.goroutines == o.singleClients {
			sdkRate = max(sdkRate, r.Rate())
		}
	}
	if o.goClient {
		r, err := benchkit.RunLoad(ctx, o.singleClients, o.singleN, func() error {
			_, err := lc.Submit(ctx, "bench-submit", req)
			return err
		})
		if err != nil {
			return err
		}
		fmt.Printf("%-28s %10d %12.0f %10s %10s\n", fmt.Sprintf("single x %d (Go client)", o.singleClients), r.N, r.Rate(), r.P50, r.P99)
	}
	body, err := json.Marshal(req)
	if err != nil {
		return err
	}
	r, err := benchkit.RawLoad(ctx, leader, t.tls, o.singleClients, o.singleN, 0, func(buf []byte, _ int) []byte {
		return benchkit.RawPost(buf, leader, "/v1/tasks/bench-submit/submit", t.token, body)
	})
	if err != nil {
		return err
	}
	fmt.Printf("%-28s %10d %12.0f %10s %10s\n", fmt.Sprintf("single x %d clients", o.singleClients), r.N, r.Rate(), r.P50, r.P99)
	rawRate := r.Rate()
	// The same requests to a route that does not exist: what the HTTP
	// layer alone costs on this machine, the ceiling for single writes.
	r, err = benchkit.RawLoad(ctx, leader, t.tls, o.singleClients, o.singleN, http.StatusNotFound, func(buf []byte, _ int) []byte {
		return benchkit.RawPost(buf, leader, "/v1/no-such-route", t.token, body)
	})
	if err != nil {
		return err
	}
	fmt.Printf("%-28s %10d %12.0f %10s %10s\n", "  HTTP only (404 route)", r.N, r.Rate(), r.P50, r.P99)
	if sdkRate > 0 {
		fmt.Printf("sdk / single: %.1fx; sdk / HTTP only: %.2fx\n", sdkRate/rawRate, sdkRate/r.Rate())
	}
	return nil
}

// sdkRun is one row of single submissions through a client.Submitter.
type sdkRun struct {
	goroutines int
	cfg        client.SubmitterConfig
}

// label names the row; detailed when there are several.
func (r sdkRun) label(detailed bool) string {
	if !detailed {
		return fmt.Sprintf("sdk single x %d goroutines", r.goroutines)
	}
	linger := "none"
	if r.cfg.Linger > 0 {
		linger = r.cfg.Linger.String()
	}
	return fmt.Sprintf("sdk x %d, %d out, linger %s", r.goroutines, r.cfg.MaxInFlight, linger)
}

// sdkLoad submits n single submissions from `goroutines` goroutines
// through one client.Submitter.
func sdkLoad(ctx context.Context, c *client.Client, sc client.SubmitterConfig, goroutines, n int, req model.SubmitRequest) (*benchkit.LoadResult, error) {
	s := client.NewSubmitter(c, sc)
	defer s.Close()
	return benchkit.RunLoad(ctx, goroutines, n, func() error {
		_, err := s.Submit(ctx, "bench-submit", req)
		return err
	})
}

// leaderClient is a client of the target that asks the leader first.
func leaderClient(t *target, leader string) *client.Client {
	addrs := []string{leader}
	for _, a := range t.addrs {
		if strings.TrimPrefix(strings.TrimPrefix(a, "https://"), "http://") != leader {
			addrs = append(addrs, a)
		}
	}
	return client.New(client.Config{Addrs: addrs, TLS: t.tls, Token: t.token, Actor: "ax-bench"})
}

// parseLingers parses a comma-separated list of durations, or "none"
// (a negative Linger), the value of flag name.
func parseLingers(name, s string) ([]time.Duration, error) {
	var out []time.Duration
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "none" {
			out = append(out, -1)
			continue
		}
		d, err := time.ParseDuration(f)
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("bad %s entry %q: want durations (500us, 1ms) or none, comma-separated", name, f)
		}
		out = append(out, d)
	}
	return out, nil
}
