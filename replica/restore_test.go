package replica

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ax-scheduler/ax/internal/testkit"
)

// TestOpen_OldRestoreMarker: a data dir an older ax left in the middle of
// a restore it led (its restore-pending file) is refused, saying what to
// do, rather than opened with a state the cluster may never have
// committed.
func TestOpen_OldRestoreMarker(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, oldRestoreMarker), []byte("42\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Open(Config{NodeID: "n1", DataDir: dir, Logger: testkit.Logger(t, "")})
	if err == nil || !strings.Contains(err.Error(), "start this node once with that older version") {
		t.Fatalf("Open with an old restore marker: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "fsm.db")); err == nil {
		t.Error("the state file was opened (created) anyway")
	}
}
