//go:build linux

package action

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/action/proc"
	"github.com/ax-scheduler/ax/internal/testkit"
)

// TestReaperHelperProcess is the reaper helper when the test binary runs
// itself as one (see startTestReaper); otherwise it does nothing.
func TestReaperHelperProcess(t *testing.T) {
	if os.Getenv("AX_TEST_REAPER_HELPER") != "1" {
		t.Skip("runs only as the reaper helper of another test")
	}
	var session string
	grace := time.Second
	args := os.Args
	for i := 0; i+1 < len(args); i++ {
		switch args[i] {
		case "-session":
			session = args[i+1]
		case "-grace":
			grace, _ = time.ParseDuration(args[i+1])
		}
	}
	os.Exit(proc.ReaperMain(os.Stdin, session, grace))
}

func startTestReaper(t *testing.T) *proc.Reaper {
	t.Helper()
	t.Setenv("AX_TEST_REAPER_HELPER", "1")
	r, err := proc.StartReaper([]string{os.Args[0], "-test.run=^TestReaperHelperProcess$", "--"}, 300*time.Millisecond, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(5 * time.Second) })
	return r
}

// processGone reports whether pid has exited (a zombie counts as gone).
func processGone(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	i := bytes.LastIndexByte(stat, ')')
	return i > 0 && len(stat) > i+2 && (stat[i+2] == 'Z' || stat[i+2] == 'X')
}

func readPID(t *testing.T, path string) int {
	t.Helper()
	var pid int
	testkit.Until(t, 10*time.Second, "pid file "+path, func() bool {
		b, err := os.ReadFile(path)
		if err != nil {
			return false
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil
	})
	return pid
}

// TestReaper_StopsRunningAttemptsWhenExecutorGoes: when the pipe to the
// helper breaks (the executor died), every process of a running attempt
// is stopped, also one that left the attempt's process group.
func TestReaper_StopsRunningAttemptsWhenExecutorGoes(t *testing.T) {
	r := startTestReaper(t)
	dir := t.TempDir()
	escaped, child := filepath.Join(dir, "escaped"), filepath.Join(dir, "child")
	var live testkit.Buffer
	done := make(chan Result, 1)
	go func() {
		done <- (&Runner{Reaper: r}).Run(context.Background(),
			shellJob("setsid sleep 1000 & echo $! > "+escaped+"; sleep 1000 & echo $! > "+child+"; echo started; sleep 1000"), &live)
	}()
	waitContains(t, &live, "started")
	pids := []int{readPID(t, escaped), readPID(t, child)}
	start := time.Now()
	if err := r.Close(5 * time.Second); err != nil { // as if the executor died
		t.Fatal(err)
	}
	select {
	case got := <-done:
		if got.Success {
			t.Fatalf("attempt succeeded, want it stopped: %+v", got)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the attempt's shell still runs 5s after its executor went")
	}
	for _, pid := range pids {
		testkit.Until(t, 10*time.Second, "process "+strconv.Itoa(pid)+" to be gone", func() bool { return processGone(pid) })
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("stopping took %s, want within the helper's grace (300ms) and a little", took)
	}
}

// TestReaper_LeavesEndedAttemptsAlone: what an attempt that has ended
// left behind outside its group (a daemon it started with setsid) is not
// the helper's business.
func TestReaper_LeavesEndedAttemptsAlone(t *testing.T) {
	r := startTestReaper(t)
	daemon := filepath.Join(t.TempDir(), "daemon")
	// The daemon writes its pid once it has its own session; the shell
	// waits for that, so that the daemon is out of the group when the
	// shell ends (what is left in the group is killed then).
	cmd := "setsid sh -c 'echo $$ > " + daemon + ".tmp; mv " + daemon + ".tmp " + daemon + "; exec sleep 1000' & " +
		"while [ ! -s " + daemon + " ]; do sleep 0.01; done"
	got := (&Runner{Reaper: r}).Run(context.Background(), shellJob(cmd), nil)
	if !got.Success {
		t.Fatalf("got %+v, want success", got)
	}
	pid := readPID(t, daemon)
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
	if err := r.Close(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	if processGone(pid) {
		t.Fatalf("the ended attempt's daemon %d was killed", pid)
	}
}
