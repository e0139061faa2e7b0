package fsm

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/trigger"
)

// Protocol 8: policy.overlap "replace" (model.OverlapReplace), which
// admit honors from the entry after set_proto 8; the history limits
// policy.keepSuccessful and policy.keepFailed, which retention reads
// (Expired); Quartz's L, W and # in cron expressions (trigger/quartz.go),
// which an older replica's validation refuses; and a task's parameter
// declarations (Task.Params), which
// every instance's creation resolves (instanceParams). put_task refuses
// them until the cluster reaches protocol 8: an older replica would take
// replace for queue and drop the others.

// proto8 is the protocol that adds them.
const proto8 = 8

// proto8Field returns the first policy field of t that needs protocol 8
// ("" when none).
func proto8Field(t *model.Task) string {
	switch p := &t.Policy; {
	case t.Trigger.Type == model.TriggerCron && trigger.UsesQuartz(t.Trigger.Expression):
		return "trigger.expression"
	case len(t.Params) > 0:
		return "params"
	case p.Overlap == model.OverlapReplace:
		return "policy.overlap"
	case p.KeepSuccessful != 0:
		return "policy.keepSuccessful"
	case p.KeepFailed != 0:
		return "policy.keepFailed"
	case p.Deadline != nil:
		return "policy.deadline"
	}
	return ""
}

// proto8Refusal is put_task's refusal of a protocol 8 field while the
// state is at protocol proto, below 8.
func proto8Refusal(proto int, t *model.Task) *model.Error {
	if f := proto8Field(t); f != "" && proto < proto8 {
		what := f
		switch f {
		case "policy.overlap":
			what = "overlap replace"
		case "trigger.expression":
			what = "Quartz's L, W and # in a cron expression"
		}
		return &model.Error{Code: model.CodePrecondition, Field: f,
			Message: fmt.Sprintf("%s needs protocol %d, the cluster is at protocol %d: upgrade every member first", what, proto8, proto)}
	}
	return nil
}

// replaces reports whether r, admitted with every slot of t busy, ends
// the oldest instance holding one instead of queueing: t's overlap is
// replace (protocol 8), and r was fired or triggered, not submitted,
// backfilled or re-run (work asked for by name queues).
func (w slotWrites) replaces(r *record, t *model.Task) bool {
	if t.Policy.Overlap != model.OverlapReplace || w.protoAt() < proto8 || r.Flags&flagRerun != 0 {
		return false
	}
	switch name(sourceNames, r.Source) {
	case model.SourceDelay, model.SourceBackfill:
		return false
	}
	return true
}

// replace ends the oldest instance of r's task that holds a concurrency
// slot as TERMINATED, replaced by r: its running attempt (if any) is
// recorded terminated, and the executor running it is told to stop it at
// its next heartbeat (within its grace, as an operator's terminate). The
// slot it frees goes to the head of the overlap queue if one waits (a
// task switched from queue), else to r. It reports whether there was one
// to replace. The scan is over the cluster's active instances, oldest
// first; it runs only when a replace task's slots are all busy.
func (w slotWrites) replace(r *record) bool {
	var old *record
	err := w.tx.Bucket(bktActive).ForEach(func(k, _ []byte) error {
		if old != nil {
			return nil
		}
		o, err := readRecord(w.tx, binary.BigEndian.Uint64(k))
		if err == nil && o.ID != r.ID && o.Task == r.Task && holdsSlot(o) {
			old = o
		}
		return err
	})
	if err != nil {
		if w.err == nil {
			w.err = err
		}
		return false
	}
	if old == nil {
		return false
	}
	why := fmt.Sprintf("replaced by %s (overlap=replace)", model.FormatID(r.ID))
	if old.State == stRunning || old.State == stApproval {
		attemptWrites(w).stopAttempt(old, model.OutcomeTerminated, why)
	}
	old.LastError = why
	w.instances().event(old.ID, "replaced", why)
	w.instances().finish(old, stTerm)
	w.instances().event(r.ID, "replacing", fmt.Sprintf("overlap=replace: ended %s, which held a concurrency slot", model.FormatID(old.ID)))
	return true
}

// instanceParams resolves the params of a new instance of task
// (model.ResolveParams: from protocol 8 a task may declare them) and
// encodes them, keys sorted (nil for none). A refusal is the *model.Error
// naming the parameter; a task that declares none takes given as it is.
func (w taskWrites) instanceParams(task string, given map[string]string) ([]byte, *model.Error) {
	if t, ok := w.definition(task); ok && len(t.Params) > 0 {
		p, err := model.ResolveParams(t.Params, given)
		if err != nil {
			var e *model.Error
			if errors.As(err, &e) {
				return nil, e
			}
			return nil, model.FieldErrorf("params", "%v", err)
		}
		given = p
	}
	if len(given) == 0 {
		return nil, nil
	}
	b, err := json.Marshal(given) // sorted keys: deterministic
	if err != nil {
		w.err = err
	}
	return b, nil
}
