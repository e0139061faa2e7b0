package main

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/ax-scheduler/ax/client"
	"github.com/ax-scheduler/ax/internal/benchkit"
	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/model/calendar"
	"github.com/ax-scheduler/ax/trigger"
)

// cronLoad is the -cron-* flags of the fire and submit scenarios: cron
// tasks that fire in the background while the scenario measures, with
// or without a window, maxRuns and jitter (the A/B of issue 23: their
// cost to fire lateness and submission throughput), and the lateness of
// their own fires, measured from each fire's moved time.
type cronLoad struct {
	n        int
	expr     string
	jitter   time.Duration
	window   bool
	calendar bool
	blackout bool

	since time.Time
}

func (c *cronLoad) register(fs *flag.FlagSet) {
	fs.IntVar(&c.n, "cron-tasks", 0, "cron tasks firing in the background during the run (0: none)")
	fs.StringVar(&c.expr, "cron-expr", "*/10 * * * * *", "the background tasks' cron expression (UTC)")
	fs.DurationVar(&c.jitter, "cron-jitter", 0, "the background tasks' trigger.jitter (0: none; needs protocol 7)")
	fs.BoolVar(&c.window, "cron-window", false, "give the background tasks a startAt an hour ago, an endAt in an hour and maxRuns 1000000 (protocol 7)")
	fs.BoolVar(&c.calendar, "cron-calendar", false, "give the background tasks a calendar of 60 excluded days, none of them today (protocol 8)")
	fs.BoolVar(&c.blackout, "cron-blackout", false, "put blackout windows matching the background tasks that are not in force during the run (protocol 8)")
}

// definitions puts the calendar and the windows of -cron-calendar and
// -cron-blackout, and gives tr and labels what refers to them. They
// exclude and hold nothing during the run, so that the A/B compares the
// same fires: what is measured is their evaluation.
func (c *cronLoad) definitions(ctx context.Context, cl *client.Client, tr *model.Trigger, labels map[string]string) error {
	put := func(path string, body any) error {
		return cl.Do(ctx, client.Request{Method: http.MethodPut, Path: path, Body: body}, nil)
	}
	if c.calendar {
		var days []string
		for d := 2; len(days) < 60; d += 3 {
			days = append(days, time.Now().UTC().AddDate(0, 0, d).Format(time.DateOnly))
		}
		if err := put("/v1/calendars/bench-holidays", calendar.Calendar{Exclude: days}); err != nil {
			return fmt.Errorf("-cron-calendar: %w", err)
		}
		tr.Calendars = []string{"bench-holidays"}
	}
	if c.blackout {
		later := time.Now().UTC().Add(2 * time.Hour)
		for i, w := range []calendar.Window{{Cron: later.Format("4 15 * * *"), Duration: model.Duration(time.Hour)},
			{Ranges: []string{later.AddDate(0, 1, 0).Format(time.DateOnly)}}} {
			w.Selector = labels
			if err := put(fmt.Sprintf("/v1/windows/bench-freeze-%d", i), w); err != nil {
				return fmt.Errorf("-cron-blackout: %w", err)
			}
		}
	}
	return nil
}

// start creates the background tasks.
func (c *cronLoad) start(ctx context.Context, cl *client.Client) error {
	if c.n <= 0 {
		return nil
	}
	if _, err := trigger.ParseCron(c.expr, "UTC"); err != nil {
		return fmt.Errorf("-cron-expr: %w", err)
	}
	tr := model.Trigger{Type: model.TriggerCron, Expression: c.expr, Jitter: model.Duration(c.jitter)}
	if c.window {
		start, end := model.Time{Time: time.Now().Add(-time.Hour)}, model.Time{Time: time.Now().Add(time.Hour)}
		tr.StartAt, tr.EndAt, tr.MaxRuns = &start, &end, 1_000_000
	}
	labels := map[string]string{"bench": "cron"}
	if err := c.definitions(ctx, cl, &tr, labels); err != nil {
		return err
	}
	var next atomic.Int64
	if _, err := benchkit.RunLoad(ctx, 8, c.n, func() error {
		_, err := cl.PutTask(ctx, &model.Task{Name: c.name(int(next.Add(1) - 1)), Trigger: tr, Labels: labels,
			Action: model.Action{Type: model.ActionShell, Command: "true"}, Policy: model.Policy{MaxConcurrency: 1_000_000}})
		return err
	}); err != nil {
		return fmt.Errorf("background cron tasks: %w", err)
	}
	c.since = time.Now()
	fmt.Printf("background: %d cron tasks %q, jitter %s, window and maxRuns %v, calendar %v, blackout windows %v\n",
		c.n, c.expr, c.jitter, c.window, c.calendar, c.blackout)
	return nil
}

func (c *cronLoad) name(i int) string { return fmt.Sprintf("bench-cron-%04d", i) }

// report prints the lateness of the background tasks' fires since they
// were created: firedAt minus the fire's time moved by its jitter.
func (c *cronLoad) report(ctx context.Context, cl *client.Client) error {
	if c.n <= 0 {
		return nil
	}
	sc, err := trigger.ParseCron(c.expr, "UTC")
	if err != nil {
		return err
	}
	elapsed := time.Since(c.since)
	// What the background tasks alone cost the log: its entries over a
	// quiet while (each entry a Raft commit and a state machine apply).
	const quiet = 5 * time.Second
	h0, err := cl.Health(ctx)
	if err != nil {
		return err
	}
	if err := benchkit.Sleep(ctx, quiet); err != nil {
		return err
	}
	h1, err := cl.Health(ctx)
	if err != nil {
		return err
	}
	var late []time.Duration
	early, dups := 0, 0
	var last time.Time
	for i := range c.n {
		name := c.name(i)
		seen := map[int64]bool{}
		err := benchkit.EachInstance(ctx, cl, model.InstanceFilter{Task: name, Limit: 1000}, func(in *model.Instance) bool {
			if in.FiredAt.IsZero() || in.ScheduledAt.Before(c.since) {
				return true
			}
			at := in.ScheduledAt.Time
			if seen[at.UnixMilli()] {
				dups++
			}
			seen[at.UnixMilli()] = true
			if at.After(last) {
				last = at
			}
			d := in.FiredAt.Sub(at.Add(trigger.Jitter(name, at, sc.Next(at), c.jitter)))
			if d < 0 {
				early++
			}
			late = append(late, d)
			return true
		})
		if err != nil {
			return err
		}
	}
	pct := benchkit.PercentileOf(late)
	fmt.Printf("background cron fires: %d (scheduled over %s; %s measured), lateness p50 %s p99 %s p99.9 %s max %s, early %d, duplicates %d; alone: %.0f log entries/s\n",
		len(late), last.Sub(c.since).Round(time.Second), elapsed.Round(time.Second), pct(0.5), pct(0.99), pct(0.999), pct(1), early, dups,
		float64(int64(h1.AppliedIndex)-int64(h0.AppliedIndex))/quiet.Seconds())
	return nil
}
