package client_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"sync"
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

// Approve an instance waiting for approval (a task with policy.approval
// "before_run", or a script that ran `ax approval request`). The other
// decisions are client.Reject, client.Cancel and client.Terminate.
func ExampleClient_Decide() {
	c := client.New(client.Config{Addrs: []string{"127.0.0.1:7070"}, Token: "axt_...", Actor: "alice"})
	state, err := c.Decide(context.Background(), "0000000000100000", client.Approve, "checked the plan")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(state) // READY, or RUNNING for an attempt that asked
}

// Run a failed instance again: the same instance, for the same fire time,
// with a new attempt chain (its earlier attempts stay). RerunTask does it
// for a task's fire-time range.
func ExampleClient_Rerun() {
	c := client.New(client.Config{Addrs: []string{"127.0.0.1:7070"}, Token: "axt_...", Actor: "alice"})
	s, err := c.Rerun(context.Background(), "0000000000100000")
	if err != nil {
		log.Fatal(err) // 409 for an unfinished instance, naming its state
	}
	fmt.Println(s.ID, s.State) // READY, or BLOCKED, WAITING_APPROVAL... as a fresh fire
	from := model.Time{Time: time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)}
	to := model.Time{Time: time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)}
	res, err := c.RerunTask(context.Background(), "daily_report", model.RerunRequest{From: from, To: to,
		States: []string{model.StateFailed, model.StateTerminated}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Rerun, "re-run")
}

// Many goroutines, one submission each: a Submitter sends them together,
// as array requests, and gives each caller its own instance.
func ExampleSubmitter() {
	c := client.New(client.Config{Addrs: []string{"n1:7070", "n2:7070", "n3:7070"}, Token: "axt_..."})
	s := client.NewSubmitter(c, client.SubmitterConfig{}) // 2ms linger, 1 request out
	defer s.Close()                                       // sends what is queued
	var wg sync.WaitGroup
	for order := range 1000 {
		wg.Go(func() {
			sub, err := s.Submit(context.Background(), "close-order", model.SubmitRequest{
				Payload: json.RawMessage(fmt.Sprintf(`{"order": %d}`, order)),
				Delay:   model.Duration(30 * time.Minute),
			})
			if err != nil {
				log.Print(err)
				return
			}
			fmt.Println(order, sub.ID)
		})
	}
	wg.Wait()
}
