package proc

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// ReaperMarkEnv is the environment variable that marks every process of a
// shell attempt run with a Reaper: "<session>.<n>", unique per attempt.
// Processes inherit it, also those that leave the attempt's process group.
const ReaperMarkEnv = "AX_ATTEMPT_MARK"

// Reaper is a helper process that stops the processes of an executor's
// running shell attempts when the executor is gone, however it went
// (kill -9 included), so that no attempt outlives its executor and runs
// on while the cluster hands the instance to another executor.
//
// The executor tells the helper, through a pipe that is the helper's
// stdin, which attempts run: an attempt is registered before its shell
// starts (so there is no moment when it runs unregistered), its process
// group once known, and it is unregistered when all its processes are
// gone. When the pipe breaks (the kernel closes it when the executor
// dies; Close closes it too) the helper sends SIGTERM to every registered
// attempt — its process group and every process whose environment carries
// its ReaperMarkEnv mark — then SIGKILL to what is left after its grace,
// and exits. It ignores SIGINT, SIGTERM and SIGHUP and runs in a process
// group of its own, so that what stops the executor does not stop it first.
//
// The helper is a program that calls ReaperMain: `ax executor-supervise`.
// This is PR_SET_PDEATHSIG's job done without its pitfalls (it fires when
// the forking thread exits, and reaches only the direct child): the
// executor's death is seen as the end of the pipe, and the helper reaches
// every process of an attempt, not only the shell.
type Reaper struct {
	session string
	cmd     *exec.Cmd
	exited  chan struct{}
	stderr  io.Writer

	mu     sync.Mutex
	w      *os.File
	seq    uint64
	broken bool
}

// StartReaper starts the helper argv (with "-session S -grace G"
// appended); grace is the helper's SIGTERM-to-SIGKILL wait. The helper's
// output goes to stderr, which may be nil.
func StartReaper(argv []string, grace time.Duration, stderr io.Writer) (*Reaper, error) {
	if len(argv) == 0 {
		return nil, fmt.Errorf("action/proc: reaper: no command")
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	session := hex.EncodeToString(b[:])
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("action/proc: reaper: %w", err)
	}
	args := append(append([]string{}, argv[1:]...), "-session", session, "-grace", grace.String())
	cmd := exec.Command(argv[0], args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = pr, stderr, stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err = cmd.Start()
	pr.Close()
	if err != nil {
		pw.Close()
		return nil, fmt.Errorf("action/proc: reaper: start: %w", err)
	}
	r := &Reaper{session: session, cmd: cmd, exited: make(chan struct{}), stderr: stderr, w: pw}
	go func() {
		_ = cmd.Wait()
		close(r.exited)
	}()
	return r, nil
}

// send writes one registration line; a helper that is gone is reported
// once on stderr (attempts then run unprotected).
func (r *Reaper) send(line string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.broken || r.w == nil {
		return
	}
	if _, err := io.WriteString(r.w, line); err != nil {
		r.broken = true
		if r.stderr != nil {
			fmt.Fprintf(r.stderr, "ax: the executor's reaper is gone (%v): attempts' processes may outlive a killed executor\n", err)
		}
	}
}

// Begin registers an attempt about to start and returns its mark (the
// value of ReaperMarkEnv) and number.
func (r *Reaper) Begin() (mark string, n uint64) {
	r.mu.Lock()
	r.seq++
	n = r.seq
	r.mu.Unlock()
	r.send("+" + strconv.FormatUint(n, 10) + "\n")
	return r.session + "." + strconv.FormatUint(n, 10), n
}

// Started records the process group of attempt n.
func (r *Reaper) Started(n uint64, pgid int) {
	r.send("=" + strconv.FormatUint(n, 10) + " " + strconv.Itoa(pgid) + "\n")
}

// End unregisters attempt n: its processes are gone.
func (r *Reaper) End(n uint64) {
	r.send("-" + strconv.FormatUint(n, 10) + "\n")
}

// Close ends the helper as if the executor were gone: attempts still
// registered are stopped (an executor closes it once its attempts have
// ended, so normally none are). It waits for the helper to exit, at most
// wait (0: not at all; the helper finishes its work on its own).
func (r *Reaper) Close(wait time.Duration) error {
	r.mu.Lock()
	w := r.w
	r.w = nil
	r.mu.Unlock()
	if w != nil {
		w.Close()
	}
	if wait <= 0 {
		return nil
	}
	select {
	case <-r.exited:
		return nil
	case <-time.After(wait):
		return fmt.Errorf("action: reaper still running after %s", wait)
	}
}

// ReaperMain is the helper's main (see Reaper): it reads registrations
// from in until it ends, then stops the attempts still registered, giving
// their processes grace between SIGTERM and SIGKILL. It returns the exit
// code.
func ReaperMain(in io.Reader, session string, grace time.Duration) int {
	signal.Ignore(syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGPIPE)
	live := map[uint64]int{} // attempt -> process group (0: not known yet)
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		f := strings.Fields(line[1:])
		if len(f) == 0 {
			continue
		}
		n, err := strconv.ParseUint(f[0], 10, 64)
		if err != nil {
			continue
		}
		switch line[0] {
		case '+':
			live[n] = 0
		case '=':
			if _, ok := live[n]; ok && len(f) == 2 {
				live[n], _ = strconv.Atoi(f[1])
			}
		case '-':
			delete(live, n)
		}
	}
	if len(live) == 0 {
		return 0
	}
	marks := make(map[string]bool, len(live))
	for n := range live {
		marks[session+"."+strconv.FormatUint(n, 10)] = true
	}
	fmt.Fprintf(os.Stderr, "ax executor-supervise: the executor is gone; stopping %d running attempt(s)\n", len(live))
	reap(live, marks, grace)
	return 0
}

// reap stops the registered attempts: SIGTERM to their groups and marked
// processes, SIGKILL to what is left after grace.
func reap(live map[uint64]int, marks map[string]bool, grace time.Duration) {
	signalAll := func(sig syscall.Signal) int {
		n := 0
		for _, pgid := range live {
			if pgid > 0 && GroupAlive(pgid) {
				_ = syscall.Kill(-pgid, sig)
				n++
			}
		}
		for _, pid := range markedPIDs(marks) {
			_ = syscall.Kill(pid, sig)
			n++
		}
		return n
	}
	if signalAll(syscall.SIGTERM) == 0 {
		return
	}
	deadline := time.Now().Add(grace)
	for time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
		if signalAll(0) == 0 {
			return
		}
	}
	// Processes may have forked meanwhile: a few rounds.
	for i := 0; i < 5 && signalAll(syscall.SIGKILL) > 0; i++ {
		time.Sleep(20 * time.Millisecond)
	}
}

// markedPIDs lists the live processes (other than this one) whose
// environment holds ReaperMarkEnv with one of marks.
func markedPIDs(marks map[string]bool) []int {
	names, _ := procPIDs()
	self := os.Getpid()
	prefix := []byte(ReaperMarkEnv + "=")
	var out []int
	for _, name := range names {
		pid, err := strconv.Atoi(name)
		if err != nil || pid == self {
			continue
		}
		env, err := os.ReadFile("/proc/" + name + "/environ")
		if err != nil || len(env) == 0 {
			continue // gone, a zombie, or not ours to read
		}
		for _, kv := range bytes.Split(env, []byte{0}) {
			if v, ok := bytes.CutPrefix(kv, prefix); ok && marks[string(v)] {
				out = append(out, pid)
				break
			}
		}
	}
	return out
}
