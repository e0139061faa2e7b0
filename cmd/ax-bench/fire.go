package main

import (
	"context"
	"fmt"
	"time"

	"github.com/ax-scheduler/ax/client"
	"github.com/ax-scheduler/ax/internal/benchkit"
	"github.com/ax-scheduler/ax/model"
)

type fireCommand struct{}

func (*fireCommand) Usage() string {
	return `
Usage: ax-bench fire [-rates 1000,10000,50000] [-seconds 4] [-lead 10s] [-cron-tasks N ...] [common flags]

Fires delayed instances at each given rate for -seconds (submitted -lead
ahead of their due times) and prints the lateness percentiles (firedAt -
scheduledAt) and how many fired early. With -cron-tasks, that many cron
tasks fire in the background (-cron-expr, -cron-jitter, -cron-window),
and the lateness of their fires is printed at the end (from each fire's
time moved by its jitter).

Examples:
	ax-bench fire -rates 1000,10000,50000 -seconds 4
	ax-bench fire -tls -rates 10000 -seconds 6
	ax-bench fire -rates 1000,10000 -cron-tasks 1000 -cron-jitter 9s -cron-window
`
}

func (c *fireCommand) Run(ctx context.Context, args []string) error {
	bf := newBenchFlags("fire", c.Usage())
	rates := bf.fs.String("rates", "1000,10000,50000", "fire rates per second, comma-separated")
	seconds := bf.fs.Float64("seconds", 4, "how long each rate fires")
	lead := bf.fs.Duration("lead", 10*time.Second, "how far ahead of their due time instances are submitted")
	var crons cronLoad
	crons.register(bf.fs)
	if err := bf.parse(args); err != nil {
		return err
	}
	rs, err := benchkit.ParseCounts("-rates", *rates)
	if err != nil {
		return fmt.Errorf("fire: %w", err)
	}
	if *seconds <= 0 || *lead <= 0 {
		return fmt.Errorf("fire: -seconds and -lead must be positive")
	}
	t, err := bf.start(ctx)
	if err != nil {
		return err
	}
	defer t.close()
	if err := crons.start(ctx, t.cl); err != nil {
		return err
	}
	fmt.Printf("%-10s %10s %10s %10s %10s %10s %8s\n", "rate/s", "instances", "p50", "p99", "p99.9", "max", "early")
	for round, rate := range rs {
		if err := fireRound(ctx, t.cl, fmt.Sprintf("bench-fire-%d", round), rate, *seconds, *lead); err != nil {
			return err
		}
	}
	return crons.report(ctx, t.cl)
}

// fireRound submits rate*seconds instances of a new task, due at rate a
// second from lead from now, waits for them to fire and prints their
// lateness.
func fireRound(ctx context.Context, cl *client.Client, task string, rate int, seconds float64, lead time.Duration) error {
	if err := benchTask(ctx, cl, task); err != nil {
		return err
	}
	total := int(float64(rate) * seconds)
	t0 := time.Now().Add(lead).Truncate(time.Second).Add(time.Second)
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
		return fmt.Errorf("fire: submitting %d took longer than -lead %s; raise -lead", total, lead)
	}
	// Wait for every instance to fire, then read them back (a while longer
	// if some have not fired yet).
	end := t0.Add(time.Duration(seconds * float64(time.Second)))
	if err := benchkit.Sleep(ctx, time.Until(end)+500*time.Millisecond); err != nil {
		return err
	}
	var late []time.Duration
	early := 0
	for attempt := 0; ; attempt++ {
		late, early = late[:0], 0
		pending := 0
		err := benchkit.EachInstance(ctx, cl, model.InstanceFilter{Task: task, Limit: 1000}, func(in *model.Instance) bool {
			if in.FiredAt.IsZero() {
				pending++
				return true
			}
			d := in.FiredAt.Sub(in.ScheduledAt.Time)
			if d < 0 {
				early++
			}
			late = append(late, d)
			return true
		})
		if err != nil {
			return err
		}
		if pending == 0 || attempt > 20 {
			break
		}
		if err := benchkit.Sleep(ctx, 500*time.Millisecond); err != nil {
			return err
		}
	}
	pct := benchkit.PercentileOf(late)
	fmt.Printf("%-10d %10d %10s %10s %10s %10s %8d\n", rate, len(late), pct(0.5), pct(0.99), pct(0.999), pct(1), early)
	return nil
}
