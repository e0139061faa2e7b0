package fsm

import (
	"fmt"

	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/trigger"
)

// Protocol 8: policy.overlap "replace" (model.OverlapReplace), which
// admit honors from the entry after set_proto 8; the history limits
// policy.keepSuccessful and policy.keepFailed, which retention reads
// (Expired); Quartz's L, W and # in cron expressions (trigger/quartz.go),
// which an older replica's validation refuses; a trigger's calendars
// (calendars.go), which need the calendar types; policy.priority, which
// the leader's dispatcher orders READY work by; and a task's parameter
// declarations (Task.Params), which
// every instance's creation resolves (instanceParams);
// policy.rateLimit, which admission honors (ratelimit.go); an HTTP
// action's resultFrom. put_task refuses them until the cluster reaches
// protocol 8: an older replica would take replace for queue and drop the
// others. From protocol 8 a successful report's result is kept
// (results.go) and the success index names the instance that succeeded.

// proto8 is the protocol that adds them.
const proto8 = 8

// proto8Field returns the first policy field of t that needs protocol 8
// ("" when none).
func proto8Field(t *model.Task) string {
	switch p := &t.Policy; {
	case t.Trigger.Type == model.TriggerCron && trigger.UsesQuartz(t.Trigger.Expression):
		return "trigger.expression"
	case len(t.Trigger.Calendars) > 0:
		return "trigger.calendars"
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
	case p.Priority != 0:
		return "policy.priority"
	case p.Pool != "":
		return "policy.pool"
	case p.Shards != 0:
		return "policy.shards"
	case p.Broadcast:
		return "policy.broadcast"
	case p.RateLimit != nil:
		return "policy.rateLimit"
	case t.Rollout != nil:
		return "rollout"
	case t.Action.ResultFrom != "":
		return "action.resultFrom"
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
		case "rollout":
			what = "a canary rollout"
		}
		return &model.Error{Code: model.CodePrecondition, Field: f,
			Message: fmt.Sprintf("%s needs protocol %d, the cluster is at protocol %d: upgrade every member first", what, proto8, proto)}
	}
	return nil
}
