package raftnode

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
)

// TestAbandonRestore: the snapshots past the index a restore began
// after, and the log entries past it, are removed; the earlier ones
// stay. Table: where the restore began relative to the data.
func TestAbandonRestore(t *testing.T) {
	for _, tc := range []struct {
		name                      string
		after                     uint64
		wantSnaps, wantEntries    int
		keptSnapshot, keptLastLog uint64
	}{
		{"the restore's snapshot and the entries after it", 10, 1, 5, 5, 10},
		{"nothing past it", 15, 0, 0, 12, 15},
		{"before an older snapshot too", 4, 2, 11, 0, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := t.TempDir()
			dir := filepath.Join(data, "raft")
			store, err := raft.NewFileSnapshotStoreWithLogger(dir, 5, hclog.NewNullLogger())
			if err != nil {
				t.Fatal(err)
			}
			for _, index := range []uint64{5, 12} {
				sink, err := store.Create(raft.SnapshotVersionMax, index, 1, raft.Configuration{}, 1, nil)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := sink.Write([]byte("state")); err != nil {
					t.Fatal(err)
				}
				if err := sink.Close(); err != nil {
					t.Fatal(err)
				}
			}
			logs, err := raftboltdb.New(raftboltdb.Options{Path: filepath.Join(dir, "raft.db")})
			if err != nil {
				t.Fatal(err)
			}
			var entries []*raft.Log
			for i := uint64(1); i <= 15; i++ {
				entries = append(entries, &raft.Log{Index: i, Term: 1, Type: raft.LogCommand})
			}
			if err := logs.StoreLogs(entries); err != nil {
				t.Fatal(err)
			}
			logs.Close()

			snaps, removed, err := AbandonRestore(data, tc.after)
			if err != nil || snaps != tc.wantSnaps || removed != tc.wantEntries {
				t.Fatalf("AbandonRestore(%d) = %d snapshots, %d entries, %v; want %d, %d", tc.after, snaps, removed, err, tc.wantSnaps, tc.wantEntries)
			}
			list, err := store.List()
			if err != nil {
				t.Fatal(err)
			}
			var latest uint64
			if len(list) > 0 {
				latest = list[0].Index
			}
			logs, err = raftboltdb.New(raftboltdb.Options{Path: filepath.Join(dir, "raft.db")})
			if err != nil {
				t.Fatal(err)
			}
			defer logs.Close()
			last, err := logs.LastIndex()
			if err != nil || latest != tc.keptSnapshot || last != tc.keptLastLog {
				t.Errorf("after: latest snapshot %d, last entry %d (%v); want %d, %d", latest, last, err, tc.keptSnapshot, tc.keptLastLog)
			}
		})
	}
}

// TestRestoreMark: MarkRestore's mark reads back, ClearRestore removes
// it, and a mark that is not an index is an error, not a restore to undo.
func TestRestoreMark(t *testing.T) {
	dir := t.TempDir()
	if _, ok, err := PendingRestore(dir); ok || err != nil {
		t.Fatalf("no mark: %v %v", ok, err)
	}
	if err := MarkRestore(dir, 77); err != nil {
		t.Fatal(err)
	}
	if after, ok, err := PendingRestore(dir); after != 77 || !ok || err != nil {
		t.Fatalf("PendingRestore = %d %v %v, want 77", after, ok, err)
	}
	if err := ClearRestore(dir); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := PendingRestore(dir); ok || err != nil {
		t.Fatalf("after ClearRestore: %v %v", ok, err)
	}
	if err := os.WriteFile(filepath.Join(dir, restorePending), []byte("7x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := PendingRestore(dir); ok || err == nil {
		t.Fatalf("a mark that is not an index: %v %v", ok, err)
	}
}
