//go:build unix

package action

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/action/redact"
	"github.com/ax-scheduler/ax/internal/testkit"
	"github.com/ax-scheduler/ax/model"
)

func shellJob(command string) Job {
	return Job{
		InstanceID:  "inst1",
		ExecutionID: "inst1-1",
		Task:        "t",
		Attempt:     1,
		ScheduledAt: time.Date(2026, 3, 1, 2, 30, 0, 0, time.UTC),
		Action:      model.Action{Type: model.ActionShell, Command: command},
	}
}

// waitGroupGone waits until no process of group pgid exists (exited
// members are reaped by init, which may take a moment).
func waitGroupGone(t *testing.T, pgid int) {
	t.Helper()
	if pgid <= 0 {
		t.Fatalf("PID = %d, want a process group id", pgid)
	}
	testkit.Until(t, 10*time.Second, fmt.Sprintf("process group %d to be gone", pgid), func() bool {
		return syscall.Kill(-pgid, 0) == syscall.ESRCH
	})
}

func TestRunner_Run_shellExitCodes(t *testing.T) {
	tests := []struct {
		name          string
		command       string
		codes         []int
		wantSuccess   bool
		wantRetryable bool
		wantExit      int
		wantErr       string
		wantOutput    string
	}{
		{name: "exit 0", command: "echo hi", wantSuccess: true, wantOutput: "hi\n"},
		{name: "any code retryable by default", command: "exit 3", wantRetryable: true, wantExit: 3, wantErr: "exit status 3"},
		{name: "listed code", command: "exit 75", codes: []int{3, 75}, wantRetryable: true, wantExit: 75, wantErr: "exit status 75"},
		{name: "unlisted code", command: "exit 4", codes: []int{3, 75}, wantExit: 4, wantErr: "exit status 4"},
		{name: "killed by signal", command: "kill -9 $$", wantRetryable: true, wantExit: -1, wantErr: "signal: killed"},
		{name: "killed by signal, codes listed", command: "kill -9 $$", codes: []int{3}, wantExit: -1, wantErr: "signal: killed"},
		{name: "stdout and stderr", command: "echo out; echo err >&2; exit 1", wantRetryable: true, wantExit: 1, wantErr: "exit status 1", wantOutput: "out\nerr\n"},
		{name: "command not found", command: "no-such-command-ax", wantRetryable: true, wantExit: 127, wantErr: "exit status 127"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			job := shellJob(tt.command)
			job.Policy.RetryableExitCodes = tt.codes
			got := (&Runner{}).Run(context.Background(), job, nil)
			if got.Success != tt.wantSuccess || got.Retryable != tt.wantRetryable || got.ExitCode != tt.wantExit {
				t.Errorf("got Success=%v Retryable=%v ExitCode=%d, want %v %v %d",
					got.Success, got.Retryable, got.ExitCode, tt.wantSuccess, tt.wantRetryable, tt.wantExit)
			}
			if tt.wantErr == "" && got.Error != "" || !strings.Contains(got.Error, tt.wantErr) {
				t.Errorf("Error = %q, want %q", got.Error, tt.wantErr)
			}
			if tt.wantOutput != "" && string(got.Output) != tt.wantOutput {
				t.Errorf("Output = %q, want %q", got.Output, tt.wantOutput)
			}
			if got.TimedOut || got.Canceled || got.PID <= 0 {
				t.Errorf("got TimedOut=%v Canceled=%v PID=%d", got.TimedOut, got.Canceled, got.PID)
			}
		})
	}
}

func TestRunner_Run_shellEnv(t *testing.T) {
	job := shellJob(`for v in AX_PARAM_ORDER_ID AX_PARAM_MODE AX_PAYLOAD AX_INSTANCE_ID AX_EXECUTION_ID AX_SCHEDULED_AT AX_TASK AX_ATTEMPT FROM_ACTION FROM_JOB FROM_SECRET OVERRIDE; do eval "printf '%s=%s\n' $v \"\$$v\""; done; printf 'PATH=%s\n' "${PATH:+set}"`)
	job.Params = map[string]string{"order-id": "o'7 $x", "mode": "full"}
	job.Payload = json.RawMessage(`{"id":7}`)
	job.Attempt = 3
	job.ExecutionID = "inst1-3"
	job.Action.Env = map[string]model.Value{"FROM_ACTION": {Text: "a"}, "OVERRIDE": {Text: "action"}, "AX_TASK": {Text: "spoofed"},
		"FROM_SECRET": model.SecretValue("pw")}
	job.Env = map[string]string{"FROM_JOB": "j", "OVERRIDE": "job"}
	job.Secrets = map[string]string{"pw": "hunter22"}
	got := (&Runner{}).Run(context.Background(), job, nil)
	if !got.Success {
		t.Fatalf("failed: %+v", got)
	}
	want := []string{
		"AX_PARAM_ORDER_ID=o'7 $x",
		"AX_PARAM_MODE=full",
		`AX_PAYLOAD={"id":7}`,
		"AX_INSTANCE_ID=inst1",
		"AX_EXECUTION_ID=inst1-3",
		"AX_SCHEDULED_AT=2026-03-01T02:30:00.000Z",
		"AX_TASK=t",
		"AX_ATTEMPT=3",
		"FROM_ACTION=a",
		"FROM_JOB=j",
		"FROM_SECRET=" + redact.Mask, // the value is set, and masked in the output
		"OVERRIDE=job",
		"PATH=set",
	}
	if g, w := string(got.Output), strings.Join(want, "\n")+"\n"; g != w {
		t.Errorf("got env\n%s\nwant\n%s", g, w)
	}
}

// TestRunner_Run_shellQuoting runs hostile values through the shell in
// every place a template can put them: the output must be the value, and
// no command hidden in it may run.
func TestRunner_Run_shellQuoting(t *testing.T) {
	values := []string{
		"plain",
		"",
		"'; touch pwned; '",
		"$(touch pwned)",
		"`touch pwned`",
		`"; touch pwned; "`,
		`\`,
		"a\nb; touch pwned",
		"$HOME ~ *",
		`it's "quoted" \\ $x`,
		"' \"$(touch pwned)\" '",
	}
	places := []struct {
		name    string
		command string
		want    func(v string) string
	}{
		{"unquoted", `printf '%s|' {{.Params.v}}`, func(v string) string { return v + "|" }},
		{"in a word", `printf '%s|' --opt={{.Params.v}}`, func(v string) string { return "--opt=" + v + "|" }},
		{"double quotes", `printf '%s|' "<{{.Params.v}}>"`, func(v string) string { return "<" + v + ">|" }},
		{"single quotes", `printf '%s|' '<{{.Params.v}}>'`, func(v string) string { return "<" + v + ">|" }},
		{"command substitution", `printf '%s|' "$(printf '%s' {{.Params.v}})"`, func(v string) string { return v + "|" }},
		{"assignment", `x={{.Params.v}}; printf '%s|' "$x"`, func(v string) string { return v + "|" }},
		{"comment", "# {{.Params.v}}\nprintf ok", func(string) string { return "ok" }},
		{"payload", `printf '%s|' {{.Payload}}`, func(v string) string { return v + "|" }},
	}
	dir := t.TempDir()
	r := &Runner{}
	for _, p := range places {
		for i, v := range values {
			t.Run(fmt.Sprintf("%s/%d", p.name, i), func(t *testing.T) {
				job := shellJob(p.command)
				job.Action.Workdir = dir
				job.Params = map[string]string{"v": v}
				job.Payload, _ = json.Marshal(v)
				got := r.Run(context.Background(), job, nil)
				if !got.Success {
					t.Fatalf("value %q: failed: %+v", v, got)
				}
				if g, w := string(got.Output), p.want(v); g != w {
					t.Errorf("value %q: output %q, want %q", v, g, w)
				}
			})
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "pwned")); err == nil {
		t.Fatal("a value ran a command")
	}
}

func TestRunner_Run_shellTemplateError(t *testing.T) {
	tests := []struct{ name, command, wantErr string }{
		{"parse error", "echo {{.Task", "bad command template"},
		{"unsafe place", "cat <<EOF\n{{.Params.v}}\nEOF", "here-document"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := (&Runner{}).Run(context.Background(), shellJob(tt.command), nil)
			checkFailure(t, got, false, tt.wantErr)
			if got.ExitCode != -1 || got.PID != 0 {
				t.Errorf("ExitCode=%d PID=%d, want -1 0 (never started)", got.ExitCode, got.PID)
			}
		})
	}
}

func TestRunner_Run_shellOutputTail(t *testing.T) {
	const lines = 20000
	var all strings.Builder
	for i := range lines {
		fmt.Fprintf(&all, "line %d\n", i)
	}
	var live testkit.Buffer
	job := shellJob(fmt.Sprintf(`i=0; while [ $i -lt %d ]; do echo "line $i"; i=$((i+1)); done`, lines))
	got := (&Runner{}).Run(context.Background(), job, &live)
	if !got.Success {
		t.Fatalf("failed: %+v", got)
	}
	want := all.String()
	if live.String() != want {
		t.Errorf("live got %d bytes, want all %d", live.Len(), len(want))
	}
	if string(got.Output) != want[len(want)-OutputLimit:] {
		t.Errorf("Output is %d bytes ending %q, want the last %d bytes of the output",
			len(got.Output), got.Output[max(0, len(got.Output)-20):], OutputLimit)
	}
}

func TestRunner_Run_shellWorkdir(t *testing.T) {
	dir := t.TempDir()
	job := shellJob("pwd")
	job.Action.Workdir = dir
	got := (&Runner{}).Run(context.Background(), job, nil)
	want, _ := filepath.EvalSymlinks(dir)
	if !got.Success || strings.TrimSpace(string(got.Output)) != want {
		t.Errorf("got %+v, want success with output %q", got, want)
	}

	job.Action.Workdir = filepath.Join(dir, "missing")
	got = (&Runner{}).Run(context.Background(), job, nil)
	checkFailure(t, got, true, "start")
	if got.ExitCode != -1 {
		t.Errorf("ExitCode = %d, want -1", got.ExitCode)
	}
}

func TestRunner_Run_shellTimeout(t *testing.T) {
	tests := []struct {
		name    string
		command string
		wantErr string
	}{
		{
			name:    "SIGTERM",
			command: "echo started; sleep 1000 & sleep 1000",
			wantErr: "timeout after 300ms: killed process group with SIGTERM",
		},
		{
			name:    "SIGKILL after grace",
			command: "trap '' TERM; echo started; sleep 1000 & sleep 1000",
			wantErr: "timeout after 300ms: killed process group with SIGKILL after 200ms grace",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var live testkit.Buffer
			job := shellJob(tt.command)
			job.Policy.Timeout = model.Timeout(300 * time.Millisecond)
			got := (&Runner{KillGrace: 200 * time.Millisecond}).Run(context.Background(), job, &live)
			if !got.TimedOut || got.Canceled {
				t.Errorf("TimedOut=%v Canceled=%v, want true false", got.TimedOut, got.Canceled)
			}
			checkFailure(t, got, true, tt.wantErr)
			if string(got.Output) != "started\n" || live.String() != "started\n" {
				t.Errorf("Output %q, live %q, want %q", got.Output, live.String(), "started\n")
			}
			waitGroupGone(t, got.PID)
		})
	}
}

func TestRunner_Run_shellCancel(t *testing.T) {
	t.Parallel()
	var live testkit.Buffer
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan Result, 1)
	go func() {
		done <- (&Runner{KillGrace: 200 * time.Millisecond}).Run(ctx, shellJob("echo started; sleep 1000 & sleep 1000"), &live)
	}()
	waitContains(t, &live, "started")
	cancel()
	got := <-done
	if !got.Canceled || got.TimedOut {
		t.Errorf("Canceled=%v TimedOut=%v, want true false", got.Canceled, got.TimedOut)
	}
	checkFailure(t, got, false, "canceled (context canceled): killed process group")
	waitGroupGone(t, got.PID)
}

// TestRunner_Run_shellStopGrace: a StopError cause replaces the Runner's
// kill grace for that stop (an executor that lost its lease stops fast).
func TestRunner_Run_shellStopGrace(t *testing.T) {
	t.Parallel()
	var live testkit.Buffer
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	done := make(chan Result, 1)
	go func() {
		done <- (&Runner{KillGrace: time.Hour}).Run(ctx, shellJob("trap '' TERM; echo started; sleep 1000 & sleep 1000"), &live)
	}()
	waitContains(t, &live, "started")
	start := time.Now()
	cancel(&StopError{Reason: "lease lost", Grace: 100 * time.Millisecond})
	got := <-done
	checkFailure(t, got, false, "canceled (lease lost): killed process group with SIGKILL after 100ms grace")
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("stop took %s, want about the stop's 100ms grace", took)
	}
	waitGroupGone(t, got.PID)
}

func TestRunner_Run_shellCanceledBeforeStart(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	got := (&Runner{}).Run(ctx, shellJob("echo hi"), nil)
	if !got.Canceled || got.PID != 0 || got.ExitCode != -1 {
		t.Errorf("got %+v, want Canceled, not started", got)
	}
}

// TestRunner_Run_shellLeftovers: a shell that exits leaving a background
// child that holds the output pipe returns at once, and the child is
// killed.
func TestRunner_Run_shellLeftovers(t *testing.T) {
	t.Parallel()
	start := time.Now()
	got := (&Runner{}).Run(context.Background(), shellJob("sleep 1000 & echo done"), nil)
	if !got.Success || string(got.Output) != "done\n" {
		t.Errorf("got %+v, want success with output %q", got, "done\n")
	}
	if d := time.Since(start); d > drainTimeout {
		t.Errorf("Run took %s, want it not to wait for the background child", d)
	}
	waitGroupGone(t, got.PID)
}
