package command

import "github.com/ax-scheduler/ax/model"

// Execution commands: every transition of an instance after it fires is
// one of these, checked by the state machine against the instance's
// current state (the compare-and-set of DESIGN §5).

// Lease hands READY instances to an executor: READY -> RUNNING.
type Lease struct {
	Executor string   `json:"e"`
	Host     string   `json:"h,omitempty"`
	IDs      []uint64 `json:"i"`
	LeaseMs  int64    `json:"l"`
}

// Heartbeat renews an executor's leases.
type Heartbeat struct {
	Executor string       `json:"e"`
	Items    []AttemptRef `json:"i"`
	LeaseMs  int64        `json:"l"`
}

// AttemptRef names one attempt of an instance.
type AttemptRef struct {
	ID      uint64 `json:"i"`
	Attempt int    `json:"a"`
	// Unstarted, in a heartbeat, renews the lease without confirming the
	// attempt: its executor has not started it yet (protocol 6).
	Unstarted bool `json:"u,omitempty"`
}

// Complete ends an attempt.
type Complete struct {
	ID      uint64                `json:"i"`
	Attempt int                   `json:"a"`
	Report  model.CompleteRequest `json:"r"`
}

// Expire ends attempts whose lease ran out (the executor died or was cut
// off). Before protocol 6 each is "lost" and the retry policy decides.
// From protocol 6 a lapse is charged to maxRetries only when the attempt
// surely started: its executor confirmed it (a heartbeat for it was
// applied) in this leader's term, or restarted since it was leased
// without confirming it (the attempt may have crashed it). Any other
// lapse ends the attempt interrupted: the instance is READY again and no
// retry is used.
type Expire struct {
	Items []ExpireItem `json:"i"`
}

// ExpireItem names one attempt whose lease ran out, with what only the
// leader knows of it.
type ExpireItem struct {
	ID      uint64 `json:"i"`
	Attempt int    `json:"a"`
	// Interrupted: the lease was last renewed under an earlier leader;
	// its executor may have been unable to reach this one (protocol 6).
	Interrupted bool `json:"n,omitempty"`
	// Restarted: the executor it was leased to has polled as a new
	// process (another session) since, without confirming it (protocol
	// 6).
	Restarted bool `json:"r,omitempty"`
}

// Decide is an operator's decision on an instance.
type Decide struct {
	ID      uint64 `json:"i"`
	Action  string `json:"a"` // approve, reject, cancel, terminate, request_approval
	Attempt int    `json:"n,omitempty"`
	Comment string `json:"c,omitempty"`
}

// Decision actions.
const (
	DecideApprove         = "approve"
	DecideReject          = "reject"
	DecideCancel          = "cancel"
	DecideTerminate       = "terminate"
	DecideRequestApproval = "request_approval"
)

// Validate checks the executor, its host, the ids and the lease.
func (l *Lease) Validate(c *Command) *model.Error {
	if e := checkName(field("executor"), l.Executor); e != nil {
		return e
	}
	if e := checkLen(field("host"), l.Host, maxHost); e != nil {
		return e
	}
	if e := checkIDs("ids", l.IDs, 1); e != nil {
		return e
	}
	return checkSpan(field("leaseMs"), c, l.LeaseMs, 1)
}

func checkRefs(name string, refs []AttemptRef) *model.Error {
	if len(refs) == 0 || len(refs) > maxIDs {
		return model.FieldErrorf(name, "%d attempts, want 1 to %d", len(refs), maxIDs)
	}
	for i, r := range refs {
		if r.ID == 0 {
			return model.FieldErrorf(item(name, i, "id").String(), "instance id 0")
		}
		if e := checkAttempt(item(name, i, "attempt"), r.Attempt); e != nil {
			return e
		}
	}
	return nil
}

// Validate checks the executor, the attempts and the lease.
func (h *Heartbeat) Validate(c *Command) *model.Error {
	if e := checkName(field("executor"), h.Executor); e != nil {
		return e
	}
	if e := checkRefs("items", h.Items); e != nil {
		return e
	}
	return checkSpan(field("leaseMs"), c, h.LeaseMs, 1)
}

// Validate checks the attempt and the report's executor, host, error and
// output.
func (cp *Complete) Validate(*Command) *model.Error {
	if cp.ID == 0 {
		return model.FieldErrorf("id", "instance id 0")
	}
	if e := checkAttempt(field("attempt"), cp.Attempt); e != nil {
		return e
	}
	r := &cp.Report
	if e := checkName(field("report.executor"), r.Executor); e != nil {
		return e
	}
	if e := checkLen(field("report.host"), r.Host, maxHost); e != nil {
		return e
	}
	if e := checkLen(field("report.error"), r.Error, MaxText); e != nil {
		return e
	}
	if e := checkLen(field("report.output"), r.Output, MaxText); e != nil {
		return e
	}
	return checkResult(r)
}

// checkResult checks a report's result as model.CheckResult does, with
// the deterministic JSON check of payloads.
func checkResult(r *model.CompleteRequest) *model.Error {
	switch {
	case len(r.Result) == 0:
		return nil
	case !r.Success:
		return model.FieldErrorf("report.result", "only a successful attempt publishes a result")
	case len(r.Result) > model.MaxResult:
		return model.FieldErrorf("report.result", "%d bytes, over the limit of %d", len(r.Result), model.MaxResult)
	case !validJSON(r.Result):
		return model.FieldErrorf("report.result", "not JSON")
	}
	return nil
}

// Validate checks the attempts.
func (e *Expire) Validate(*Command) *model.Error {
	refs := make([]AttemptRef, len(e.Items))
	for i, it := range e.Items {
		refs[i] = AttemptRef{ID: it.ID, Attempt: it.Attempt}
	}
	return checkRefs("items", refs)
}

// Validate checks the instance id, the action (only request_approval
// names an attempt) and the comment.
func (d *Decide) Validate(*Command) *model.Error {
	if d.ID == 0 {
		return model.FieldErrorf("id", "instance id 0")
	}
	switch d.Action {
	case DecideRequestApproval:
		if e := checkAttempt(field("attempt"), d.Attempt); e != nil {
			return e
		}
	case DecideApprove, DecideReject, DecideCancel, DecideTerminate:
		if d.Attempt != 0 {
			return model.FieldErrorf("attempt", "only request_approval names an attempt")
		}
	default:
		return model.FieldErrorf("action", "unknown decision %q", d.Action)
	}
	return checkLen(field("comment"), d.Comment, model.MaxComment)
}
