package dispatch

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/fsm"
	"github.com/ax-scheduler/ax/fsm/command"
	"github.com/ax-scheduler/ax/model"
)

// TestDispatcher_Executors: polls and heartbeats make an executor known
// with what it last reported; one silent for a minute is dropped.
func TestDispatcher_Executors(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	d := New(Config{Now: func() time.Time { return now }}, &fakeStore{}, nil)
	ctx := context.Background()
	if _, err := d.Poll(ctx, model.PollRequest{Executor: "b", Host: "h2", Labels: map[string]string{"pool": "gpu"}, Free: 3, WaitMs: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Heartbeat(ctx, model.HeartbeatRequest{Executor: "a"}); err != nil {
		t.Fatal(err)
	}
	d.leases[7] = lease{attempt: 1, until: now.Add(time.Minute).UnixMilli(), executor: "b"}
	got := d.Executors()
	if len(got) != 2 || got[0].Name != "a" || got[1].Name != "b" {
		t.Fatalf("executors %+v, want a and b by name", got)
	}
	if b := got[1]; b.Host != "h2" || b.Labels["pool"] != "gpu" || b.Free != 3 || b.Running != 1 || !b.LastSeen.Equal(now) {
		t.Fatalf("b: %+v", b)
	}
	now = now.Add(45 * time.Second)
	if _, err := d.Heartbeat(ctx, model.HeartbeatRequest{Executor: "b"}); err != nil {
		t.Fatal(err)
	}
	now = now.Add(30 * time.Second) // a silent for 75s, b for 30s
	if got := d.Executors(); len(got) != 1 || got[0].Name != "b" || got[0].Free != 3 {
		t.Fatalf("after a minute of silence from a: %+v, want only b (still with its last poll's figures)", got)
	}
}

// TestDispatcher_ReapKeepsLeaseUntilExpired: a lease whose Expire could
// not be proposed stays known and is proposed again on the next reap; it
// is dropped only once an Expire applied.
func TestDispatcher_ReapKeepsLeaseUntilExpired(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	var proposed [][]command.ExpireItem
	fail := true
	propose := func(ctx context.Context, c *command.Command) (*fsm.Result, error) {
		var e command.Expire
		if err := json.Unmarshal(c.Body, &e); err != nil {
			t.Fatal(err)
		}
		proposed = append(proposed, e.Items)
		if fail {
			return nil, errors.New("leadership lost")
		}
		return &fsm.Result{Data: []byte(`{"expired":2}`)}, nil
	}
	// Leases are expired ExpireGrace (5s, half the default lease) late.
	d := New(Config{Now: func() time.Time { return now.Add(5 * time.Second) }}, &fakeStore{}, propose)
	// Leases seen applied at their stamp: due ExpireGrace after until.
	seen := func(attempt int, until time.Time) lease {
		return lease{attempt: attempt, until: until.UnixMilli(), executor: "a", deadline: until.Add(d.cfg.ExpireGrace)}
	}
	d.leases[7], d.leases[3], d.leases[9] = seen(1, now.Add(-time.Second)), seen(2, now), seen(1, now.Add(time.Second)) // 9 not due
	want := []command.ExpireItem{{ID: 3, Attempt: 2}, {ID: 7, Attempt: 1}}
	ctx := context.Background()
	d.reap(ctx)
	if len(proposed) != 1 || !reflect.DeepEqual(proposed[0], want) {
		t.Fatalf("first reap proposed %+v, want %+v", proposed, want)
	}
	if len(d.leases) != 3 {
		t.Fatalf("after a failed proposal %d leases known, want all 3", len(d.leases))
	}
	fail = false
	d.reap(ctx)
	if len(proposed) != 2 || !reflect.DeepEqual(proposed[1], want) {
		t.Fatalf("second reap proposed %+v, want %+v again", proposed, want)
	}
	if _, ok := d.leases[9]; len(d.leases) != 1 || !ok {
		t.Fatalf("after the Expire applied: %+v, want only lease 9", d.leases)
	}
	d.reap(ctx)
	if len(proposed) != 2 {
		t.Fatalf("a third reap proposed %+v with nothing due", proposed[2:])
	}
}

// TestDispatcher_PollReleasedWhenTermEnds: polls waiting on a dispatcher
// are answered at once, Released and empty, when its Run ends, and so is
// a poll that arrives later.
func TestDispatcher_PollReleasedWhenTermEnds(t *testing.T) {
	d := New(Config{}, &fakeStore{}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- d.Run(ctx) }()
	type answer struct {
		resp *model.PollResponse
		err  error
	}
	answers := make(chan answer, 3)
	for i := 0; i < 3; i++ {
		go func() {
			resp, err := d.Poll(context.Background(), model.PollRequest{Executor: "e", Free: 1, WaitMs: 30_000})
			answers <- answer{resp, err}
		}()
	}
	cancel()
	start := time.Now()
	for i := 0; i < 3; i++ {
		select {
		case a := <-answers:
			if a.err != nil || !a.resp.Released || len(a.resp.Jobs) != 0 {
				t.Fatalf("parked poll answered %+v, %v; want released with no jobs", a.resp, a.err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("a parked poll was not released when the term ended")
		}
	}
	if err := <-ran; err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > time.Second {
		t.Fatalf("releasing parked polls took %s", took)
	}
	resp, err := d.Poll(context.Background(), model.PollRequest{Executor: "e", Free: 1, WaitMs: 30_000})
	if err != nil || !resp.Released {
		t.Fatalf("a poll after the term: %+v, %v; want released at once", resp, err)
	}
}
