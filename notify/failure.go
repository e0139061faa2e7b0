package notify

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ax-scheduler/ax/model"
)

// LogTailLines is how many lines of an attempt's output a failure report
// carries.
const LogTailLines = 20

// Failure builds the report of a failed instance: in must hold its
// attempts (fsm GetInstance), task is its definition (nil if deleted),
// output the latest attempt's kept output (fsm Log), link the console
// page of the instance.
func Failure(in *model.Instance, task *model.Task, output, link string) *model.FailureReport {
	r := &model.FailureReport{Task: in.Task, InstanceID: in.ID, FailedAt: in.FinishedAt, Attempt: in.Attempts,
		MaxAttempts: 1, Error: in.LastError, Link: link, LogTail: Tail(output, LogTailLines)}
	var pol model.Policy
	if task != nil {
		pol = task.Policy
		r.MaxAttempts = pol.MaxRetries + 1
		r.Timeout = model.Duration(pol.Timeout.Std()) // 0: unset (the agent default applies) or none
		if r.Timeout == 0 && task.Action.Type == model.ActionHTTP {
			r.Timeout = task.Action.Timeout
		}
	}
	var a *model.Attempt
	for i := range in.AttemptList {
		if in.AttemptList[i].Number == in.Attempts {
			a = &in.AttemptList[i]
		}
	}
	if a == nil && len(in.AttemptList) > 0 {
		a = &in.AttemptList[len(in.AttemptList)-1]
	}
	if a != nil {
		r.Attempt, r.Outcome, r.Executor, r.Host, r.HTTPStatus = a.Number, a.Outcome, a.Executor, a.Host, a.HTTPStatus
		if a.Error != "" {
			r.Error = a.Error
		}
		if r.FailedAt.IsZero() {
			r.FailedAt = a.EndedAt
		}
		if a.ExitCode != nil && a.HTTPStatus == 0 {
			ec := *a.ExitCode
			r.ExitCode = &ec
		}
	}
	if r.FailedAt.IsZero() {
		r.FailedAt = in.FinishedAt
	}
	httpAction := task != nil && task.Action.Type == model.ActionHTTP
	switch {
	case in.State == model.StateTerminated || in.State == model.StateCanceled || r.Outcome == model.OutcomeTerminated || r.Outcome == model.OutcomeCanceled:
		r.Class = model.FailureStopped
	case r.Outcome == model.OutcomeLost:
		r.Class, r.Retryable = model.FailureLost, true
	case r.Outcome == model.OutcomeTimeout:
		r.Class, r.Retryable = model.FailureTimeout, true
	case r.HTTPStatus >= 500:
		r.Class, r.Retryable = model.FailureHTTP5xx, true
	case r.HTTPStatus >= 400:
		r.Class, r.Retryable = model.FailureHTTP4xx, r.HTTPStatus == 408 || r.HTTPStatus == 429
	case httpAction && r.HTTPStatus == 0:
		r.Class, r.Retryable = model.FailureHTTPConn, true
	case r.ExitCode != nil && *r.ExitCode > 0:
		r.Class = model.FailureExit
		r.Retryable = len(pol.RetryableExitCodes) == 0 || slices.Contains(pol.RetryableExitCodes, *r.ExitCode)
	default:
		r.Class = model.FailureError
	}
	r.RetriesExhausted = r.Retryable && r.Attempt >= r.MaxAttempts
	r.Suggestion = suggest(r)
	return r
}

// suggest says what to do about a failure, in one sentence.
func suggest(r *model.FailureReport) string {
	trigger := "ax trigger " + r.Task
	where := r.Executor
	if r.Host != "" {
		where += " on host " + r.Host
	}
	var s string
	switch r.Class {
	case model.FailureStopped:
		return "an operator stopped it; trigger again if it should still run (" + trigger + ")"
	case model.FailureLost:
		s = fmt.Sprintf("the executor running it stopped renewing its lease (it died, was killed or lost the network): check executor %s", where)
	case model.FailureTimeout:
		d := "its timeout"
		if r.Timeout > 0 {
			d = "the timeout of " + r.Timeout.Std().String()
		}
		s = fmt.Sprintf("it ran past %s and was stopped: raise policy.timeout if the work needs longer, or check the host (%s) for what made it slow", d, where)
	case model.FailureHTTP5xx:
		s = fmt.Sprintf("the endpoint failed (HTTP %d): retry (%s) or check the endpoint", r.HTTPStatus, trigger)
	case model.FailureHTTP4xx:
		if r.HTTPStatus == 429 || r.HTTPStatus == 408 {
			s = fmt.Sprintf("the endpoint throttled or timed out the request (HTTP %d): retry later (%s) or lower how often the task runs", r.HTTPStatus, trigger)
		} else {
			s = fmt.Sprintf("the request is wrong (HTTP %d): fix the action (url, method, headers, body) and trigger again (%s)", r.HTTPStatus, trigger)
		}
	case model.FailureHTTPConn:
		s = "the endpoint did not answer (connection, DNS or TLS error): check that it is up and reachable from the executor, then retry (" + trigger + ")"
	case model.FailureExit:
		if !r.Retryable {
			return fmt.Sprintf("exit %d is not retryable (policy.retryableExitCodes): fix the input and trigger again (%s)", *r.ExitCode, trigger)
		}
		s = fmt.Sprintf("it exited %d: read the output below, fix the cause and trigger again (%s)", *r.ExitCode, trigger)
	default:
		return "the action could not run: fix the action (its command, template or secrets) and trigger again (" + trigger + ")"
	}
	if r.RetriesExhausted && r.MaxAttempts > 1 {
		s = fmt.Sprintf("retries exhausted (%d attempts, policy.maxRetries %d): the failure did not go away; %s", r.MaxAttempts, r.MaxAttempts-1, s)
	}
	return s
}

// Tail returns the last n lines of s (without a trailing empty line).
func Tail(s string, n int) []string {
	s = strings.TrimRight(s, "\n")
	if s == "" {
		return nil
	}
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, "\r")
	}
	return lines
}

// ClassText describes the failure class in a few words, e.g. "exit 3
// (not retryable)", "timeout after 20m0s", "lost (executor w1)".
func ClassText(r *model.FailureReport) string {
	var s string
	switch r.Class {
	case model.FailureExit:
		s = fmt.Sprintf("exit %d", *r.ExitCode)
	case model.FailureTimeout:
		s = "timeout"
		if r.Timeout > 0 {
			s += " after " + r.Timeout.Std().String()
		}
	case model.FailureLost:
		s = "lost (executor " + r.Executor + " stopped renewing its lease)"
	case model.FailureHTTP4xx, model.FailureHTTP5xx:
		s = fmt.Sprintf("HTTP %d", r.HTTPStatus)
	case model.FailureHTTPConn:
		s = "no HTTP answer"
	case model.FailureStopped:
		s = "stopped by an operator"
	default:
		s = "could not run"
	}
	switch {
	case r.Class == model.FailureStopped:
	case !r.Retryable:
		s += " (not retryable)"
	case r.RetriesExhausted:
		s += " (retryable; retries exhausted)"
	default:
		s += " (retryable)"
	}
	return s
}

// timeText formats a time for people: UTC, to the second.
func timeText(t model.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}
