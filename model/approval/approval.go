// Package approval is where a running attempt's mid-run approval request
// stands (GET /v1/instances/{id}/approval?attempt=N).
package approval

import "github.com/ax-scheduler/ax/model"

// Decisions on a mid-run approval request, as Status reports them.
const (
	// Pending: the attempt waits for an operator.
	Pending = "pending"
	// Approved: an operator approved; the attempt runs on.
	Approved = "approved"
	// Rejected: an operator rejected the request or canceled the
	// instance; the attempt must stop.
	Rejected = "rejected"
	// Over: the attempt ended otherwise (terminated, lost, its
	// own report arrived) or a newer attempt runs.
	Over = "over"
)

// Status is where a running attempt's approval request stands:
// the answer of GET /v1/instances/{id}/approval?attempt=N, which `ax
// approval request` polls. An executor token may read it only for an
// attempt leased to its executor.
type Status struct {
	ID      string `json:"id"`
	Attempt int    `json:"attempt"`
	// Decision is one of the constants above.
	Decision string `json:"decision"`
	// State is the instance's state, CurrentAttempt its latest attempt.
	State          string `json:"state"`
	CurrentAttempt int    `json:"currentAttempt"`
	// By and Comment are who decided and what they wrote, once decided.
	By      string `json:"by,omitempty"`
	Comment string `json:"comment,omitempty"`
}

// AttemptExecutor returns the executor that ran (or runs) attempt n of
// in, and false when in has no such attempt.
func AttemptExecutor(in *model.Instance, n int) (string, bool) {
	if n == in.Attempts && n > 0 && in.Executor != "" {
		return in.Executor, true
	}
	for _, a := range in.AttemptList {
		if a.Number == n {
			return a.Executor, true
		}
	}
	return "", false
}

// Of returns where the approval request of attempt n of in
// stands: pending while the instance waits for approval with that
// attempt, approved once it runs again, rejected once it was rejected or
// canceled, over otherwise. By and Comment come from the instance's
// latest decision event, when it has its events.
func Of(in *model.Instance, n int) Status {
	s := Status{ID: in.ID, Attempt: n, State: in.State, CurrentAttempt: in.Attempts, Decision: Over}
	if in.Attempts != n {
		return s
	}
	event := ""
	switch in.State {
	case model.StateWaitingApproval:
		s.Decision = Pending
	case model.StateRunning:
		s.Decision, event = Approved, "approved"
	case model.StateCanceled:
		s.Decision, event = Rejected, "rejected"
	}
	for i := len(in.Events) - 1; i >= 0 && event != ""; i-- {
		e := in.Events[i]
		if e.Type == event || (event == "rejected" && e.Type == "canceled") {
			s.By, s.Comment = e.Actor, e.Message
			break
		}
		if e.Type == "approval_requested" {
			break
		}
	}
	return s
}
