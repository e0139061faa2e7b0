package tests

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ax-scheduler/ax/internal/testkit"
)

// runMarkEnv marks every process this test run starts, and what those
// start (agents, executors, the attempts they run, `ax approval
// request`...): they inherit it through their environment.
const runMarkEnv = "AX_TEST_RUN"

// markRun sets this run's mark in the environment and returns it.
func markRun() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	mark := hex.EncodeToString(b[:])
	os.Setenv(runMarkEnv, mark)
	return mark
}

// leftovers lists the live processes (other than this one) that this run
// started, by its mark in their environment or binDir in their command
// line, as "pid: command line".
func leftovers(mark, binDir string) []string {
	names, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	want := []byte(runMarkEnv + "=" + mark)
	var out []string
	for _, d := range names {
		pid, err := strconv.Atoi(d.Name())
		if err != nil || pid == os.Getpid() || procGone(pid) {
			continue
		}
		cmdline, _ := os.ReadFile("/proc/" + d.Name() + "/cmdline")
		env, _ := os.ReadFile("/proc/" + d.Name() + "/environ")
		ours := bytes.Contains(cmdline, []byte(binDir))
		for _, kv := range bytes.Split(env, []byte{0}) {
			ours = ours || bytes.Equal(kv, want)
		}
		if ours {
			out = append(out, fmt.Sprintf("%d: %s", pid, strings.TrimSpace(strings.ReplaceAll(string(cmdline), "\x00", " "))))
		}
	}
	return out
}

// checkLeftovers waits up to within for this run's processes to be gone;
// it kills and names those that are not.
func checkLeftovers(mark, binDir string, within time.Duration) []string {
	var left []string
	err := testkit.Poll(within, func() error {
		if left = leftovers(mark, binDir); len(left) > 0 {
			return fmt.Errorf("%d left", len(left))
		}
		return nil
	})
	if err == nil {
		return nil
	}
	for _, l := range left {
		if pid, err := strconv.Atoi(l[:strings.IndexByte(l, ':')]); err == nil {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	return left
}
