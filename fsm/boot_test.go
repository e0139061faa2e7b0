package fsm

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/hashicorp/raft"
	bolt "go.etcd.io/bbolt"
)

// crashChildEnv names the state file a child process of
// TestFSM_KilledProcessKeepsCommitted writes to until it is killed.
const crashChildEnv = "AX_FSM_CRASH_CHILD"

// TestFSM_KilledProcessKeepsCommitted kills a process with SIGKILL while
// it applies batches to an unsynced state file, three times, and opens
// what it left under the same kernel: the file is kept, bbolt's check
// finds nothing wrong, it holds exactly the entries through its applied
// index (at least the last batch the child reported), and the log after
// that index applies on top of it.
func TestFSM_KilledProcessKeepsCommitted(t *testing.T) {
	if path := os.Getenv(crashChildEnv); path != "" {
		crashChild(t, path)
		return
	}
	if bootID() == "" {
		t.Skip("no boot id on this system: an unclean file is always rebuilt")
	}
	for round := 0; round < 3; round++ {
		path := filepath.Join(t.TempDir(), "fsm.db")
		child := exec.Command(os.Args[0], "-test.run=^TestFSM_KilledProcessKeepsCommitted$")
		child.Env = append(os.Environ(), crashChildEnv+"="+path)
		out, err := child.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := child.Start(); err != nil {
			t.Fatal(err)
		}
		// Kill it a varying number of batches in, while it applies the next.
		var reported uint64
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if n, err := strconv.ParseUint(strings.TrimPrefix(sc.Text(), "applied "), 10, 64); err == nil {
				reported = n
				if reported >= uint64(400+round*300) {
					break
				}
			}
		}
		child.Process.Signal(syscall.SIGKILL)
		child.Wait()
		if reported == 0 {
			t.Fatalf("round %d: the child reported nothing", round)
		}

		f := openTest(t, path, true)
		applied := f.AppliedIndex()
		if f.Rebuilt() || applied < reported {
			t.Fatalf("round %d: rebuilt %v applied %d, want kept with at least %d", round, f.Rebuilt(), applied, reported)
		}
		if err := f.db.View(func(tx *bolt.Tx) error {
			var first error
			for err := range tx.Check() {
				if first == nil {
					first = err
				}
			}
			return first
		}); err != nil {
			t.Fatalf("round %d: bbolt check: %v", round, err)
		}
		if got := f.CountTasks(); uint64(got) != applied {
			t.Fatalf("round %d: %d tasks at applied index %d, want one per entry", round, got, applied)
		}
		ap := &applier{t: t, f: f, index: applied}
		if r := ap.apply(crashEntry(t, applied+1)); r.Err != nil {
			t.Fatalf("round %d: apply after the crash: %v", round, r.Err)
		}
		t.Logf("round %d: killed after %d reported, kept %d", round, reported, applied)
	}
}

// crashChild applies batches of 50 task writes (one per entry) to path
// without fsync, reporting each batch's last index, until it is killed.
func crashChild(t *testing.T, path string) {
	f, err := Open(Config{Path: path, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	for index := uint64(0); ; {
		logs := make([]*raft.Log, 50)
		for i := range logs {
			index++
			logs[i] = &raft.Log{Index: index, Term: 1, Type: raft.LogCommand, Data: crashEntry(t, index).Encode()}
		}
		f.ApplyBatch(logs)
		fmt.Printf("applied %d\n", index)
	}
}

// crashEntry is the task write of log index i, with a padded command so
// that each batch spans many pages.
func crashEntry(t *testing.T, i uint64) *Command {
	task := cronTask(fmt.Sprintf("t%06d", i), "@hourly")
	task.Action.Command = "echo " + strings.Repeat("x", 512)
	return cmd(t, CmdPutTask, "", t0+int64(i), PutTask{Task: task})
}
