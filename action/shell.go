//go:build unix

package action

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ax-scheduler/ax/action/proc"
	"github.com/ax-scheduler/ax/action/redact"
	"github.com/ax-scheduler/ax/action/result"
)

// runShell runs a shell action: /bin/sh -c command in its own process
// group, stdout and stderr into one pipe.
func (r *Runner) runShell(ctx context.Context, job Job, live io.Writer, red *redact.Masker) Result {
	res := Result{ExitCode: -1}
	command, err := expandCommand(job.Action.Command, job)
	if err != nil {
		res.Error = err.Error()
		res.Retryable = overTime(err)
		return res
	}
	env, err := shellEnv(job)
	if err != nil {
		res.Error = err.Error()
		return res
	}
	rf, err := result.NewFile()
	if err != nil {
		res.Error = err.Error()
		res.Retryable = true
		return res
	}
	defer rf.Remove()
	env = append(env, ResultEnv+"="+rf.Path())
	var mark uint64
	if r.Reaper != nil {
		// Registered before it starts: no moment runs unprotected.
		var m string
		m, mark = r.Reaper.Begin()
		env = append(env, proc.ReaperMarkEnv+"="+m)
		defer r.Reaper.End(mark) // after the whole group is gone
	}
	cmd := exec.Command("/bin/sh", "-c", command)
	cmd.Dir = job.Action.Workdir
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// One pipe of our own for stdout and stderr: Wait returns when the
	// shell exits, even if a process it left behind still holds the pipe.
	pr, pw, err := os.Pipe()
	if err != nil {
		res.Error = fmt.Sprintf("start: %v", err)
		res.Retryable = true
		return res
	}
	cmd.Stdout, cmd.Stderr = pw, pw
	err = cmd.Start()
	pw.Close()
	if err != nil {
		pr.Close()
		res.Error = fmt.Sprintf("start: %v", err)
		res.Retryable = retryableExit(job, -1)
		return res
	}
	pgid := cmd.Process.Pid
	res.PID = pgid
	if r.Reaper != nil {
		r.Reaper.Started(mark, pgid)
	}

	out := newSink(live, OutputLimit, red)
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		_, _ = io.Copy(out, pr)
	}()
	exited := make(chan struct{})
	var waitErr error
	go func() {
		waitErr = cmd.Wait()
		close(exited)
	}()

	var expired <-chan time.Time
	d := timeout(job)
	if d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		expired = t.C
	}
	why, grace := "", r.killGrace()
	select {
	case <-exited:
	case <-expired:
		res.TimedOut = true
		why = fmt.Sprintf("timeout after %s", d)
	case <-ctx.Done():
		res.Canceled = true
		why, grace = canceledError(ctx), r.stopGrace(ctx)
	}
	if why != "" {
		why += ": killed process group with " + terminate(pgid, exited, grace)
	} else if proc.GroupAlive(pgid) {
		// The shell is done; what it left running in its group goes too.
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
	}
	awaitGroupGone(pgid, drainTimeout)

	// Everything that could write is gone (unless it left the group): read
	// what is left in the pipe.
	select {
	case <-copied:
	case <-time.After(drainTimeout):
		_ = pr.SetReadDeadline(time.Now())
		<-copied
	}
	pr.Close()
	res.Output = out.close()

	res.ExitCode = cmd.ProcessState.ExitCode()
	switch {
	case why != "":
		res.Error = why
		res.Retryable = res.TimedOut
	case waitErr == nil:
		res.Success = true
	default:
		var ee *exec.ExitError
		if errors.As(waitErr, &ee) {
			res.Error = ee.Error() // "exit status 3", "signal: killed"
		} else {
			res.Error = waitErr.Error()
		}
		res.Retryable = retryableExit(job, res.ExitCode)
	}
	shellResult(&res, rf, red)
	return res
}

// terminate stops the process group pgid whose leader's Wait closes
// exited: SIGTERM to the group, then SIGKILL once grace has passed with
// the leader or another member still alive (no grace: SIGKILL at once).
// It returns when the leader has exited and says which signal ended the
// group.
func terminate(pgid int, exited <-chan struct{}, grace time.Duration) string {
	kill := func() string {
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-exited
		if grace <= 0 {
			return "SIGKILL"
		}
		return fmt.Sprintf("SIGKILL after %s grace", grace)
	}
	if grace <= 0 {
		return kill()
	}
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	deadline := time.NewTimer(grace)
	defer deadline.Stop()
	select {
	case <-exited:
	case <-deadline.C:
		return kill()
	}
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for proc.GroupAlive(pgid) {
		select {
		case <-tick.C:
		case <-deadline.C:
			return kill()
		}
	}
	return "SIGTERM"
}

// awaitGroupGone waits, at most bound, until process group pgid has no
// live member.
func awaitGroupGone(pgid int, bound time.Duration) {
	deadline := time.Now().Add(bound)
	for proc.GroupAlive(pgid) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
}

// retryableExit reports whether exit code code may be retried: any
// failure when the policy lists no retryable exit codes, else only those.
func retryableExit(job Job, code int) bool {
	codes := job.Policy.RetryableExitCodes
	return len(codes) == 0 || slices.Contains(codes, code)
}

// shellEnv is the environment of a shell action: the executor's own, the
// action's Env (with the values of its secrets), the job's Env, then the
// AX_ variables.
func shellEnv(job Job) ([]string, error) {
	env := os.Environ()
	add := func(k, v string) error {
		if strings.IndexByte(k, 0) >= 0 || strings.IndexByte(v, 0) >= 0 || strings.IndexByte(k, '=') >= 0 || k == "" {
			return fmt.Errorf("bad environment variable %q", k)
		}
		env = append(env, k+"="+v)
		return nil
	}
	for _, k := range sortedKeys(job.Action.Env) {
		v, err := valueText(job, job.Action.Env[k])
		if err != nil {
			return nil, fmt.Errorf("env %s: %w", k, err)
		}
		if err := add(k, v); err != nil {
			return nil, err
		}
	}
	for _, k := range sortedKeys(job.Env) {
		if err := add(k, job.Env[k]); err != nil {
			return nil, err
		}
	}
	for _, k := range sortedKeys(job.Params) {
		if err := add(ParamEnv(k), job.Params[k]); err != nil {
			return nil, fmt.Errorf("param %q contains a NUL byte", k)
		}
	}
	ax := [][2]string{
		{"AX_PAYLOAD", payloadText(job.Payload)},
		{"AX_INSTANCE_ID", job.InstanceID},
		{"AX_EXECUTION_ID", job.ExecutionID},
		{"AX_SCHEDULED_AT", scheduledText(job)},
		{"AX_TASK", job.Task},
		{"AX_ATTEMPT", strconv.Itoa(job.Attempt)},
	}
	if job.Traceparent != "" {
		ax = append(ax, [2]string{"TRACEPARENT", job.Traceparent})
	}
	if job.Shard != nil {
		ax = append(ax, [2]string{"AX_SHARD_INDEX", strconv.Itoa(job.Shard.Index)}, [2]string{"AX_SHARD_TOTAL", strconv.Itoa(job.Shard.Total)},
			[2]string{"AX_PARENT_ID", job.Parent})
	}
	for _, kv := range ax {
		if err := add(kv[0], kv[1]); err != nil {
			return nil, fmt.Errorf("%s contains a NUL byte", kv[0])
		}
	}
	return env, nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
