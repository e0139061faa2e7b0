package client

// Decision is what an operator decides about an instance (Client.Decide):
// the last element of POST /v1/instances/{id}/{decision}.
type Decision string

// The decisions the API takes.
const (
	// Approve lets an instance WAITING_APPROVAL run (policy.approval
	// "before_run"), or a running attempt that asked for approval go on.
	Approve Decision = "approve"
	// Reject cancels an instance WAITING_APPROVAL.
	Reject Decision = "reject"
	// Cancel cancels an instance that is not running yet (SCHEDULED,
	// READY, BLOCKED, WAITING_APPROVAL, RETRYING).
	Cancel Decision = "cancel"
	// Terminate stops a running attempt (its process group is killed)
	// and ends the instance TERMINATED.
	Terminate Decision = "terminate"
)

// wellFormed reports whether d can be sent as one path element: a
// lowercase word. Whether the server knows it is the server's to say, so
// that a client need not be upgraded for a decision added later.
func (d Decision) wellFormed() bool {
	if d == "" || len(d) > 64 {
		return false
	}
	for _, r := range d {
		if (r < 'a' || r > 'z') && r != '_' {
			return false
		}
	}
	return true
}
