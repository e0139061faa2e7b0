package fsm

import (
	"errors"
	"os"
	"strings"
)

// bootMarker names the file beside an unsynced state file that holds the
// boot id of the kernel it was opened under.
const bootMarker = ".boot"

// bootID returns the running kernel's boot id, "" when it cannot be read
// (not Linux). Tests replace it.
var bootID = func() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// sameBoot reports whether the state file at path, left without its
// clean marker, was last opened under the running kernel (boot id id). Then only the
// process died (kill -9, a panic, the OOM killer): every write it made
// is in this kernel's page cache, and bbolt wrote each transaction's
// pages before its meta page, so the file holds exactly the transactions
// that committed, the applied index with them. A machine that crashed or
// restarted since (another boot id), a file moved from another machine,
// or no boot id at all: the file may hold pages that never reached the
// disk, and is rebuilt.
func sameBoot(path, id string) bool {
	if id == "" {
		return false
	}
	b, err := os.ReadFile(path + bootMarker)
	return err == nil && string(b) == id
}

// markBoot records the running kernel's boot id (id) beside the state
// file before anything is written to it; where there is none, it removes
// any earlier marker, so that an unclean file is rebuilt.
func markBoot(path, id string) error {
	if id == "" {
		if err := os.Remove(path + bootMarker); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		return nil
	}
	return os.WriteFile(path+bootMarker, []byte(id), 0o600)
}
