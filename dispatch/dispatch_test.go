package dispatch

import (
	"context"
	"testing"
	"time"

	"ax/model"
)

// TestDispatcher_Executors: polls and heartbeats make an executor known
// with what it last reported; one silent for a minute is dropped.
func TestDispatcher_Executors(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	d := New(Config{Now: func() time.Time { return now }}, nil, nil)
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
