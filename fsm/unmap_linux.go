package fsm

import (
	"fmt"

	bolt "go.etcd.io/bbolt"
	"golang.org/x/sys/unix"
)

// unmapPages drops the pages of db's memory map from this process's
// resident set (madvise MADV_DONTNEED). bbolt opens a file whose free
// list it does not store (NoFreelistSync) by walking every page of it,
// which left the whole file mapped: a node that restored a snapshot, or
// restarted, counted its whole state file in its RSS (1.9 GB at 10M
// pending), where a node that wrote its file counts only the pages it
// touched. The map is shared and read-only and bbolt writes through the
// file, so nothing is lost: a page read again faults back in from the
// page cache. Nothing else may use db yet.
func unmapPages(db *bolt.DB) error {
	var size int64
	if err := db.View(func(tx *bolt.Tx) error { size = tx.Size(); return nil }); err != nil {
		return err
	}
	if size == 0 {
		return nil
	}
	if _, _, errno := unix.Syscall(unix.SYS_MADVISE, db.Info().Data, uintptr(size), unix.MADV_DONTNEED); errno != 0 {
		return fmt.Errorf("fsm: madvise: %w", errno)
	}
	return nil
}
