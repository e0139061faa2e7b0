package fsm

import (
	"fmt"

	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/trigger"
)

// Protocol 7: a trigger's window of validity (startAt, endAt), its
// maxRuns and its jitter (DESIGN.md, "Protocol 7 triggers"). put_task
// refuses them until the cluster reaches protocol 7; fire honors them,
// counts the trigger's runs in the task state and keeps the jitter on the
// instance, from the entry after set_proto 7, so that an entry an older
// release logged replays as it was first applied.

// protoWindows is the protocol that adds these fields.
const protoWindows = 7

// windowField returns the first trigger field that needs protocol 7 (""
// when none): endAt, maxRuns, jitter, or startAt on a trigger other than
// interval (whose startAt is older).
func windowField(tr *model.Trigger) string {
	switch {
	case tr.StartAt != nil && tr.Type != model.TriggerInterval:
		return "trigger.startAt"
	case tr.EndAt != nil:
		return "trigger.endAt"
	case tr.MaxRuns != 0:
		return "trigger.maxRuns"
	case tr.Jitter != 0:
		return "trigger.jitter"
	}
	return ""
}

// windowRefusal is put_task's refusal of a protocol 7 field while the
// state is at protocol proto, below 7: an older replica would drop the
// fields it does not know and store another definition.
func windowRefusal(proto int, t *model.Task) *model.Error {
	if f := windowField(&t.Trigger); f != "" && proto < protoWindows {
		return &model.Error{Code: model.CodePrecondition, Field: f,
			Message: fmt.Sprintf("%s needs protocol %d, the cluster is at protocol %d: upgrade every member first", f, protoWindows, proto)}
	}
	return nil
}

// fireRefused says why a fire of t at at (Unix ms) creates nothing from
// protocol 7 ("" when it may): at is outside the trigger's window, or
// its maxRuns are used up. The leader does not propose such a fire; a
// replayed or stale proposal (a leader that had not yet seen the last
// run counted) is ignored here.
func fireRefused(t *model.Task, st *taskState, at int64) string {
	tr := &t.Trigger
	switch {
	case tr.StartAt != nil && at < tr.StartAt.UnixMilli():
		return "before startAt"
	case tr.EndAt != nil && at > tr.EndAt.UnixMilli():
		return "after endAt"
	case trigger.RunsLeft(tr.MaxRuns, st.Runs) == 0:
		return "maxRuns reached"
	}
	return ""
}

// fireJitter is the jitter a fire keeps on its instance: what the leader
// says it applied, if the task has a jitter and it is below it (else 0).
func fireJitter(t *model.Task, j int64) int64 {
	if j > 0 && j < t.Trigger.Jitter.Std().Milliseconds() {
		return j
	}
	return 0
}
