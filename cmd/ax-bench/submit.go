package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/ax-scheduler/ax/model"
)

type submitCommand struct{}

func (*submitCommand) Usage() string {
	return `
Usage: ax-bench submit [-n 200000 -batch 1000 -clients 4] [-single-n 20000 -single-clients 64] [common flags]

Delayed submissions/s committed: batched (arrays of -batch per request from
-clients Go API clients), then single ones from a lean keep-alive HTTP/1.1
generator, then the same requests to a missing route: what HTTP alone
costs on this machine, the ceiling for single writes. -go-client adds a
run of the single submissions through the Go API client.

Examples:
	ax-bench submit -batch 1000 -n 200000 -clients 4 -single-clients 64 -single-n 40000
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
	goClient := bf.fs.Bool("go-client", false, "also run the single submissions through the Go API client (heavier on the shared CPU)")
	delay := bf.fs.Duration("delay", time.Hour, "delay of each submission (kept pending during the run)")
	if err := bf.parse(args); err != nil {
		return err
	}
	if *n < 0 || *singleN < 0 || *batch < 1 || *clients < 1 || *singleClients < 1 {
		return fmt.Errorf("submit: -batch, -clients and -single-clients must be positive, -n and -single-n not negative")
	}
	t, err := bf.start(ctx)
	if err != nil {
		return err
	}
	defer t.close()
	return benchSubmit(ctx, t, submitOptions{n: *n, batch: *batch, clients: *clients,
		singleN: *singleN, singleClients: *singleClients, goClient: *goClient, delay: *delay})
}

// submitOptions are the submit scenario's flags.
type submitOptions struct {
	n, batch, clients      int
	singleN, singleClients int
	goClient               bool
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
		r, err := runLoad(ctx, o.clients, (o.n+o.batch-1)/o.batch, func() error {
			_, err := cl.SubmitBatch(ctx, "bench-submit", reqs)
			return err
		})
		if err != nil {
			return err
		}
		fmt.Printf("%-28s %10d %12.0f %10s %10s\n", fmt.Sprintf("batched %d x %d clients", o.batch, o.clients), r.n*o.batch, r.rate()*float64(o.batch), r.p50, r.p99)
	}
	if o.singleN == 0 {
		return nil
	}
	req := model.SubmitRequest{Payload: payload, Delay: model.Duration(o.delay)}
	if o.goClient {
		r, err := runLoad(ctx, o.singleClients, o.singleN, func() error {
			_, err := cl.Submit(ctx, "bench-submit", req)
			return err
		})
		if err != nil {
			return err
		}
		fmt.Printf("%-28s %10d %12.0f %10s %10s\n", fmt.Sprintf("single x %d (Go client)", o.singleClients), r.n, r.rate(), r.p50, r.p99)
	}
	leader, err := leaderAddr(ctx, cl)
	if err != nil {
		return err
	}
	body, err := json.Marshal(req)
	if err != nil {
		return err
	}
	r, err := rawLoad(ctx, leader, t.tls, o.singleClients, o.singleN, 0, func(buf []byte, _ int) []byte {
		return rawPost(buf, leader, "/v1/tasks/bench-submit/submit", t.token, body)
	})
	if err != nil {
		return err
	}
	fmt.Printf("%-28s %10d %12.0f %10s %10s\n", fmt.Sprintf("single x %d clients", o.singleClients), r.n, r.rate(), r.p50, r.p99)
	// The same requests to a route that does not exist: what the HTTP
	// layer alone costs on this machine, the ceiling for single writes.
	r, err = rawLoad(ctx, leader, t.tls, o.singleClients, o.singleN, http.StatusNotFound, func(buf []byte, _ int) []byte {
		return rawPost(buf, leader, "/v1/no-such-route", t.token, body)
	})
	if err != nil {
		return err
	}
	fmt.Printf("%-28s %10d %12.0f %10s %10s\n", "  HTTP only (404 route)", r.n, r.rate(), r.p50, r.p99)
	return nil
}
