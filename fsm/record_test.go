package fsm

import (
	"bytes"
	"encoding/binary"
	"path/filepath"
	"reflect"
	"strconv"
	"testing"

	bolt "go.etcd.io/bbolt"
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

// TestScanDecoder: a scan's decode keeps every field ActiveInstances
// reads, equal to the full decode's, leaves out the rest, and holds
// nothing of the bytes it was decoded from.
func TestScanDecoder(t *testing.T) {
	full := &record{ID: 7, State: stRunning, Source: 1, Attempts: 2, CreatedAt: 10, ScheduledAt: 20, FiredAt: 30,
		TaskVersion: 3, Task: "nightly", IdemKey: "k-1", Node: "n2", Params: []byte(`{"a":1}`), Payload: []byte("body"),
		Executor: "e1", LastError: "exit 1", LeaseUntil: 40, RetryAt: 50, AttemptStart: 35, Host: "h1", Date: "2026-12-04",
		Flags: flagMidRunApproval, Held: "slot", Pool: "gpu", Canary: true, Parent: 5, ShardIndex: 1, Shards: 4, Pin: "e2",
		Link: []byte("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")}
	b := full.encode()
	want, err := decodeRecord(7, b)
	if err != nil {
		t.Fatal(err)
	}
	var dec scanDecoder
	var got record
	if err := dec.decode(&got, 7, b); err != nil {
		t.Fatal(err)
	}
	for i := range b {
		b[i] = 'x'
	}
	kept := *want
	kept.IdemKey, kept.Node, kept.Params, kept.Payload, kept.LastError, kept.Host, kept.Date, kept.Held, kept.Pool, kept.Link =
		"", "", nil, nil, "", "", "", "", "", nil
	if !reflect.DeepEqual(got, kept) {
		t.Fatalf("scan decode\n got %+v\nwant %+v", got, kept)
	}
	// The next record reuses got: nothing of the first stays.
	next := &record{ID: 8, State: stReady, Task: "nightly"}
	if err := dec.decode(&got, 8, next.encode()); err != nil {
		t.Fatal(err)
	}
	if got.Executor != "" || got.Canary || got.Pin != "" || got.Task != "nightly" {
		t.Fatalf("a reused record kept the previous one's fields: %+v", got)
	}
}

// BenchmarkDecodeRecord: one active instance's record, as the apply path
// decodes it, and as ActiveInstances' scan (the dispatcher's load, the
// watchdog's every -watch-interval) does.
func BenchmarkDecodeRecord(b *testing.B) {
	r := &record{ID: 7, State: stRunning, Source: 1, Attempts: 1, CreatedAt: 10, ScheduledAt: 20, FiredAt: 30, TaskVersion: 3,
		Task: "bench-sdk-task", Node: "n1", Payload: bytes.Repeat([]byte("p"), 64), Executor: "e1", LeaseUntil: 40, AttemptStart: 35}
	v := r.encode()
	b.Run("full", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := decodeRecord(7, v); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("scan", func(b *testing.B) {
		var dec scanDecoder
		var got record
		b.ReportAllocs()
		for b.Loop() {
			if err := dec.decode(&got, 7, v); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkActiveInstances: the scan of 10,000 READY instances with
// 1 KiB payloads (a dispatch backlog), as ActiveInstances does it and,
// for the ratio, as it did with the full decode of each record.
func BenchmarkActiveInstances(b *testing.B) {
	f, err := Open(Config{Path: filepath.Join(b.TempDir(), "fsm.db"), NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	payload := bytes.Repeat([]byte("p"), 1024)
	err = f.db.Update(func(tx *bolt.Tx) error {
		for id := uint64(1); id <= 10000; id++ {
			r := &record{ID: id, State: stReady, Source: 1, CreatedAt: 10, ScheduledAt: 20, FiredAt: 30, TaskVersion: 1,
				Task: "backlog", IdemKey: "key-" + strconv.FormatUint(id, 10), Node: "n1", Payload: payload}
			if err := tx.Bucket(bktInstances).Put(u64key(id), r.encode()); err != nil {
				return err
			}
			if err := tx.Bucket(bktActive).Put(u64key(id), nil); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Run("scan", func(b *testing.B) {
		for b.Loop() {
			n := 0
			if err := f.ActiveInstances(func(Active) { n++ }); err != nil || n != 10000 {
				b.Fatal(n, err)
			}
		}
	})
	b.Run("full-decode", func(b *testing.B) {
		for b.Loop() {
			n := 0
			err := f.db.View(func(tx *bolt.Tx) error {
				insts := tx.Bucket(bktInstances)
				return tx.Bucket(bktActive).ForEach(func(k, _ []byte) error {
					r, err := decodeRecord(binary.BigEndian.Uint64(k), insts.Get(k))
					if err == nil && r.Task != "" {
						n++
					}
					return err
				})
			})
			if err != nil || n != 10000 {
				b.Fatal(n, err)
			}
		}
	})
}
