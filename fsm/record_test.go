package fsm

import (
	"bytes"
	"testing"
)

// TestDecodeRecord_CopiesOut: a decoded record holds nothing of the bytes
// it was decoded from (bbolt's memory, valid only in its transaction):
// overwriting them afterwards leaves every field as it was.
func TestDecodeRecord_CopiesOut(t *testing.T) {
	want := &record{ID: 7, State: stRunning, Source: 1, Attempts: 2, CreatedAt: 10, ScheduledAt: 20, FiredAt: 30,
		TaskVersion: 3, Task: "nightly", IdemKey: "k-1", Node: "n2", Params: []byte(`{"a":1}`), Payload: []byte("body"),
		Executor: "e1", LastError: "exit 1", LeaseUntil: 40, RetryAt: 50, AttemptStart: 35, Host: "h1", Date: "2026-12-04"}
	b := want.encode()
	got, err := decodeRecord(7, b)
	if err != nil {
		t.Fatal(err)
	}
	for i := range b {
		b[i] = 'x'
	}
	if got.Task != "nightly" || got.IdemKey != "k-1" || got.Node != "n2" || !bytes.Equal(got.Params, []byte(`{"a":1}`)) ||
		!bytes.Equal(got.Payload, []byte("body")) || got.Executor != "e1" || got.LastError != "exit 1" || got.Host != "h1" || got.Date != "2026-12-04" {
		t.Fatalf("the record changed with the bytes it was decoded from: %+v", got)
	}
}

// BenchmarkDecodeRecord: one active instance's record, as the apply path
// and the watchdog's scan decode it.
func BenchmarkDecodeRecord(b *testing.B) {
	r := &record{ID: 7, State: stRunning, Source: 1, Attempts: 1, CreatedAt: 10, ScheduledAt: 20, FiredAt: 30, TaskVersion: 3,
		Task: "bench-sdk-task", Node: "n1", Payload: bytes.Repeat([]byte("p"), 64), Executor: "e1", LeaseUntil: 40, AttemptStart: 35}
	v := r.encode()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := decodeRecord(7, v); err != nil {
			b.Fatal(err)
		}
	}
}
