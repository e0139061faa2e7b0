package alerts

import (
	"fmt"
	"time"

	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/model/member"
)

// clockJumpAlert is the clock_jump finding for member id's step j.
func clockJumpAlert(id string, j *member.ClockJump) (alertID, summary string, details map[string]string) {
	dir := "forward"
	if j.Step < 0 {
		dir = "back"
	}
	summary = fmt.Sprintf("member %s's wall clock stepped %s by %s at %s", id, dir, absDuration(j.Step.Std()), j.At.UTC().Format(time.RFC3339))
	if j.Held != 0 {
		summary += fmt.Sprintf("; its time base holds %s of it", j.Held.Std().Round(time.Millisecond))
	}
	details = map[string]string{"step": j.Step.Std().String(), "at": j.At.UTC().Format(model.TimeLayout), "held": j.Held.Std().String(), "reason": j.Reason}
	return model.RuleClockJump + ":" + id, summary, details
}

// anotherStep reports whether a firing clock_jump alert's member has
// stepped again since: the alert is refreshed at once (no second
// notification) so that it shows the latest step.
func anotherStep(al model.Alert, f *finding) bool {
	return al.Rule == model.RuleClockJump && al.Details["at"] != f.change.Details["at"]
}

func absDuration(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}
