package client_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"time"

	"github.com/ax-scheduler/ax/client"
	"github.com/ax-scheduler/ax/model"
)

// A delayed submission: an instance of the event task "close-order" due in
// 30 minutes, created once however often the call is retried (the
// idempotency key).
func ExampleClient_Submit() {
	c := client.New(client.Config{Addrs: []string{"127.0.0.1:7070"}, Token: "axt_..."})
	s, err := c.Submit(context.Background(), "close-order", model.SubmitRequest{
		Payload:        json.RawMessage(`{"order": 42}`),
		Delay:          model.Duration(30 * time.Minute),
		IdempotencyKey: "order-42",
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(s.ID, s.ScheduledAt, s.Existing)
}

// Run a task now with parameters ($AX_PARAM_DATE, {{.Params.date}}).
func ExampleClient_Trigger() {
	c := client.New(client.Config{Addrs: []string{"127.0.0.1:7070"}})
	s, err := c.Trigger(context.Background(), "daily_report", model.TriggerRequest{Params: map[string]string{"date": "2026-11-30"}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("instance", s.ID)
}

// Wait for an instance to end, then read its output.
func ExampleClient_GetInstance() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	c := client.New(client.Config{Addrs: []string{"127.0.0.1:7070"}})
	s, err := c.Trigger(ctx, "daily_report", model.TriggerRequest{})
	if err != nil {
		log.Fatal(err)
	}
	for {
		in, err := c.GetInstance(ctx, s.ID)
		if err != nil {
			log.Fatal(err)
		}
		switch in.State {
		case model.StateSuccess, model.StateFailed, model.StateTerminated, model.StateCanceled, model.StateSkipped:
			out, err := c.InstanceLog(ctx, s.ID, 0)
			if err != nil {
				log.Fatal(err)
			}
			fmt.Println(in.State, in.LastError)
			fmt.Print(out.Output)
			return
		}
		select {
		case <-ctx.Done():
			log.Fatal(ctx.Err())
		case <-time.After(time.Second):
		}
	}
}

// An executor in your own program: it runs the "charge" handler of tasks
// whose action is {"type": "sdk", "handler": "charge"}. A handler's error
// fails the attempt (retried by the task's policy unless it wraps
// client.ErrPermanent).
func ExampleNewWorker() {
	w, err := client.NewWorker(client.WorkerConfig{
		Servers:  []string{"127.0.0.1:7070"},
		Name:     "billing-1",
		Capacity: 8,
		Handlers: map[string]client.Handler{
			"charge": func(ctx context.Context, job client.Job) error {
				var p struct{ Amount int }
				if err := json.Unmarshal(job.Payload, &p); err != nil {
					return fmt.Errorf("bad payload: %w", client.ErrPermanent)
				}
				return nil // charged
			},
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := w.Run(ctx); err != nil { // until ctx ends
		log.Fatal(err)
	}
}
