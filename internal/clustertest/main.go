package clustertest

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/internal/localcluster"
	"github.com/ax-scheduler/ax/internal/testkit"
)

// AxPkg is the import path of the ax command.
const AxPkg = "github.com/ax-scheduler/ax/cmd/ax"

// BenchPkg is ax-bench's package, the load tool the failover tests run.
const BenchPkg = "github.com/ax-scheduler/ax/cmd/ax-bench"

// Binary is a command of this module that Main installs for its test
// package.
type Binary struct {
	Pkg  string   // import path (AxPkg, ...)
	Tags []string // build tags
	Path *string  // set to the installed file
}

// installed is what Main installed: the ax that StartProcesses runs, and
// the source files it stats for go test's cache (see
// localcluster.StatSources).
var installed struct {
	mu    sync.Mutex
	ax    string
	files []string
	once  sync.Once
}

// installedAx returns the ax binary Main installed, failing the test if
// it installed none.
func installedAx(t testing.TB) string {
	t.Helper()
	installed.mu.Lock()
	defer installed.mu.Unlock()
	if installed.ax == "" {
		t.Fatal("clustertest: no ax binary; the package's TestMain must call clustertest.Main with AxPkg")
	}
	return installed.ax
}

// statInstalled stats the sources of what Main installed, once per test
// binary, from a test (where go test records it).
func statInstalled() {
	installed.once.Do(func() {
		installed.mu.Lock()
		defer installed.mu.Unlock()
		localcluster.StatSources(installed.files)
	})
}

// Main runs a multi-process test package and exits: it installs bins
// into a directory of the run's own (from the build cache the packages
// share; AX_TEST_RACE=1 builds race-enabled binaries), the ax that
// StartProcesses runs among them, runs the tests,
// and then fails the run if a process it started (an agent, an executor,
// an attempt they ran, `ax approval request`...) outlives it, killing
// those; killed executors' reapers get 15 s to stop what ran.
func Main(m *testing.M, bins ...Binary) {
	mark := markRun()
	dir, err := os.MkdirTemp("", "ax-tests-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	for _, b := range bins {
		*b.Path = filepath.Join(dir, path.Base(b.Pkg))
		if len(b.Tags) > 0 {
			*b.Path += "-" + strings.Join(b.Tags, "-")
		}
		files, err := localcluster.Install(*b.Path, b.Pkg, b.Tags...)
		if err != nil {
			fmt.Fprintf(os.Stderr, "building %s: %v\n", b.Pkg, err)
			os.RemoveAll(dir)
			os.Exit(1)
		}
		installed.mu.Lock()
		installed.files = append(installed.files, files...)
		if b.Pkg == AxPkg && len(b.Tags) == 0 {
			installed.ax = *b.Path
		}
		installed.mu.Unlock()
	}
	code := m.Run()
	if left := checkLeftovers(mark, dir, 15*time.Second); len(left) > 0 {
		fmt.Fprintf(os.Stderr, "FAIL: %d process(es) of this test run outlived it (killed now):\n\t%s\n", len(left), strings.Join(left, "\n\t"))
		code = 1
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

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
		if err != nil || pid == os.Getpid() || ProcGone(pid) {
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

// ProcGone reports whether process pid has exited (a zombie counts as
// gone).
func ProcGone(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && len(s) > i+2 && (s[i+2] == 'Z' || s[i+2] == 'X')
}
