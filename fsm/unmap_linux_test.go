package fsm

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// rssFileKB is this process's file-backed resident memory (RssFile).
func rssFileKB(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "RssFile:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb
		}
	}
	t.Fatal("no RssFile in /proc/self/status")
	return 0
}

// TestFSM_OpenLeavesFileUnmapped: opening a state file does not leave
// every page of it resident (bbolt walks the whole file to rebuild its
// free list, and a node that restored a snapshot or restarted used to
// count its whole state file in its RSS).
func TestFSM_OpenLeavesFileUnmapped(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fsm.db")
	db, err := bolt.Open(path, 0o600, &bolt.Options{NoSync: true, NoFreelistSync: true})
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucket([]byte("filler"))
		if err != nil {
			return err
		}
		v := make([]byte, 100)
		for i := range 50_000 { // 16 MB of file
			if err := b.Put(binary.BigEndian.AppendUint64(nil, uint64(i)), v); err != nil {
				return err
			}
		}
		return nil
	})
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	// As if closed cleanly, so that Open keeps it without syncing.
	if err := os.WriteFile(path+cleanMarker, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	before := rssFileKB(t)
	f := openTest(t, path, true)
	grew := rssFileKB(t) - before
	if fileKB := st.Size() / 1024; grew > fileKB/4 {
		t.Errorf("opening a %d kB state file left %d kB more of files resident, want under a quarter of it", fileKB, grew)
	}
	if got := f.CountTasks(); got != 0 { // still readable
		t.Errorf("CountTasks() = %d, want 0", got)
	}
}
