package command

import (
	"slices"

	"github.com/ax-scheduler/ax/model"
)

// Rerun runs finished instances again, each as the same instance with a
// new attempt chain (protocol 7; fsm/rerun.go). A lone re-run (Task
// empty) names one instance, which must exist and be in a terminal state.
// A task's re-run (Task set) carries the leader's plan, the instances of
// the task in a fire-time range that were in one of States when it
// looked: each of them still of the task and in one of States is re-run,
// the others are passed over.
//
// HoldMs is how long an attempt an operator stopped may still run on its
// executor after the stop (the proposer's lease, its expiry grace and
// the clock skew): an instance whose last attempt was stopped less than
// that before the command's time, and whose executor has not reported
// its end since, is not re-run yet (refused, or passed over), so that two
// attempts of it never run at once.
type Rerun struct {
	IDs    []uint64 `json:"i,omitempty"`
	Task   string   `json:"t,omitempty"`
	States []string `json:"s,omitempty"`
	HoldMs int64    `json:"h,omitempty"`
}

// TerminalStates are the states an instance can be re-run from, in the
// order the API lists them.
var TerminalStates = []string{model.StateFailed, model.StateTerminated, model.StateCanceled, model.StateSkipped, model.StateSuccess}

// Validate checks the hold, the ids (one for a lone re-run; for a task's,
// at most model.MaxBackfill, in increasing order so that none is named
// twice), the task and the states (terminal ones, without a lone
// re-run).
func (r *Rerun) Validate(c *Command) *model.Error {
	if e := checkSpan(field("holdMs"), c, r.HoldMs, 0); e != nil {
		return e
	}
	if r.Task == "" {
		if len(r.States) > 0 {
			return model.FieldErrorf("states", "only a task's re-run selects states")
		}
		if len(r.IDs) != 1 || r.IDs[0] == 0 {
			return model.FieldErrorf("ids", "a re-run names one instance")
		}
		return nil
	}
	if e := checkName(field("task"), r.Task); e != nil {
		return e
	}
	if len(r.IDs) > model.MaxBackfill {
		return model.FieldErrorf("ids", "%d instances, more than %d", len(r.IDs), model.MaxBackfill)
	}
	for i, id := range r.IDs {
		if id == 0 || i > 0 && id <= r.IDs[i-1] {
			return model.FieldErrorf(item("ids", i, "").String(), "instance id %d: ids are non-zero and increasing", id)
		}
	}
	if len(r.States) == 0 {
		return model.FieldErrorf("states", "a task's re-run names the states it re-runs")
	}
	for i, s := range r.States {
		if !slices.Contains(TerminalStates, s) {
			return model.FieldErrorf(item("states", i, "").String(), "%q is not a finished state", s)
		}
	}
	return nil
}
