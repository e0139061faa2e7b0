package tasks

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/ax-scheduler/ax/fsm"
	"github.com/ax-scheduler/ax/model"
)

// whyWait bounds how long an instance read waits for the leader's
// executor list (READY instances only).
const whyWait = 2 * time.Second

// why says in one sentence what the unfinished instance id waits for ("" for
// a finished one, or when its facts cannot be read).
func (ts *Tasks) why(ctx context.Context, id uint64) string {
	f, err := ts.state.InstanceWhy(id)
	if err != nil {
		return ""
	}
	var execs []model.ExecutorStatus
	var execErr error
	if f.State == model.StateReady && !f.TaskGone {
		ctx, cancel := context.WithTimeout(ctx, whyWait)
		defer cancel()
		var l *model.ExecutorList
		if l, execErr = ts.cfg.Executors(ctx); execErr == nil {
			execs = l.Executors
		}
	}
	s := whySentence(f, execs, execErr, ts.cfg.Clock.Now())
	if e := f.Rerun; e != nil && s != "" {
		s = fmt.Sprintf("re-run by %s at %s: %s", e.Actor, e.Time.Format(model.TimeLayout), s)
	}
	return s
}

func at(ms int64) string { return model.UnixMilli(ms).Format(model.TimeLayout) }

// whySentence words the facts of an instance's state as of now, with the
// leader's executors for a READY one (execErr when they are unknown),
// and how its trigger's jitter moved it.
func whySentence(f *fsm.WhyFacts, execs []model.ExecutorStatus, execErr error, now time.Time) string {
	why := stateWhy(f, execs, execErr, now)
	if f.Jitter != 0 && why != "" {
		why += " (" + fsm.JitterNote(f.ScheduledAt, f.Jitter) + ")"
	}
	if n := fsm.CalendarNote(f.Moved, f.Held); n != "" && why != "" {
		why += " (" + n + ")"
	}
	if f.Deadline != nil && why != "" && f.ScheduledAt > 0 {
		why += "; " + deadlineNote(f, now)
	}
	return why
}

// deadlineNote words where an unfinished instance stands against its
// task's policy.deadline: "deadline 06:00 CET (in 1h2m)" or "past its
// deadline 06:00 CET by 5m (deadline_missed)".
func deadlineNote(f *fsm.WhyFacts, now time.Time) string {
	loc := model.ZoneOr(f.Timezone)
	dl := f.Deadline.At(time.UnixMilli(f.ScheduledAt), loc)
	when := dl.In(loc).Format(model.TimeLayout)
	if now.After(dl) {
		return fmt.Sprintf("past its deadline %s by %s (deadline_missed)", when, now.Sub(dl).Round(time.Second))
	}
	return fmt.Sprintf("deadline %s (in %s)", when, dl.Sub(now).Round(time.Second))
}

// stateWhy is whySentence but for the jitter.
func stateWhy(f *fsm.WhyFacts, execs []model.ExecutorStatus, execErr error, now time.Time) string {
	switch f.State {
	case model.StateScheduled:
		d := time.UnixMilli(f.ScheduledAt).Sub(now).Round(time.Second)
		if d < 0 {
			return fmt.Sprintf("due at %s (%s ago): the leader fires it at its next tick", at(f.ScheduledAt), -d)
		}
		return fmt.Sprintf("due at %s (in %s)", at(f.ScheduledAt), d)
	case model.StateReady:
		if f.TaskGone {
			return "its task no longer exists: nothing will lease it; cancel it"
		}
		if f.Shard != nil && f.Shard.Executor != "" {
			return fmt.Sprintf("shard %d of %d of a broadcast: waiting for executor %s to poll (it ends FAILED if that executor leaves)", f.Shard.Index, f.Shard.Total, f.Shard.Executor)
		}
		return readyWhy(f, execs, execErr)
	case model.StateRunning:
		if f.Shards != nil {
			return "running as " + shardCounts(f.Shards)
		}
		s := fmt.Sprintf("attempt %d on executor %s", f.Attempts, f.Executor)
		if f.Host != "" {
			s += " (host " + f.Host + ")"
		}
		return s + " since " + at(f.AttemptStart) + ", lease until " + at(f.LeaseUntil)
	case model.StateRetrying:
		s := fmt.Sprintf("attempt %d of %d %s; retry at %s", f.Attempts-f.Free-f.Base, f.MaxRetries+1, attemptEnd(f.LastAttempt), at(f.RetryAt))
		if f.Free > 0 {
			s += fmt.Sprintf(" (and %d %s, not counted)", f.Free, plural(f.Free, "interrupted attempt", "interrupted attempts"))
		}
		return s
	case model.StateBlocked:
		if len(f.WaitingFor) > 0 {
			return fmt.Sprintf("waiting for upstream %s to succeed for %s", plural(len(f.WaitingFor), "task", "tasks")+" "+strings.Join(f.WaitingFor, ", "), f.Date)
		}
		if f.Rate != nil {
			return fmt.Sprintf("waiting for its turn under the rate limit of %s (%d per %s): it starts at %s, %d waiting (rateLimit)",
				f.Rate.What, f.Rate.Limit.Count, f.Rate.Limit.Per.Std(), at(f.Rate.At), f.Rate.Waiting)
		}
		if f.Pool != nil {
			return fmt.Sprintf("waiting for a slot of pool %s: %d of its %d busy, %d waiting (policy.pool)", f.Pool.Name, f.Pool.Busy, f.Pool.Slots, f.Pool.Queued)
		}
		return fmt.Sprintf("waiting for a free slot: %d of the task's %d %s busy (policy overlap=queue)",
			f.Inflight, f.Limit, plural(f.Limit, "slot is", "slots are"))
	case model.StateWaitingApproval:
		if f.MidRun {
			s := fmt.Sprintf("waiting for approval requested by attempt %d on executor %s", f.Attempts, f.Executor)
			if f.Approval != nil {
				s += " at " + f.Approval.Time.Format(model.TimeLayout)
				if f.Approval.Message != "" {
					s += ": " + f.Approval.Message
				}
			}
			return s
		}
		s := "waiting for approval before it runs (policy approval=before_run)"
		if f.Approval != nil {
			s += " since " + f.Approval.Time.Format(model.TimeLayout)
		}
		return s
	}
	return ""
}

// shardCounts words a sharded instance's shards by state: "4 shards: 1
// SUCCESS, 3 RUNNING".
func shardCounts(s *model.ShardSummary) string {
	var parts []string
	for _, st := range slices.Sorted(maps.Keys(s.ByState)) {
		parts = append(parts, fmt.Sprintf("%d %s", s.ByState[st], st))
	}
	return fmt.Sprintf("%d %s: %s", s.Total, plural(s.Total, "shard", "shards"), strings.Join(parts, ", "))
}

// attemptEnd says how an attempt ended: "failed (exit status 3)".
func attemptEnd(a *model.Attempt) string {
	if a == nil {
		return "failed"
	}
	outcome := a.Outcome
	if outcome == "" {
		outcome = model.OutcomeFailed
	}
	switch {
	case a.HTTPStatus != 0:
		return fmt.Sprintf("%s (HTTP status %d)", outcome, a.HTTPStatus)
	case a.ExitCode != nil && *a.ExitCode != 0:
		return fmt.Sprintf("%s (exit status %d)", outcome, *a.ExitCode)
	case a.Error != "":
		return fmt.Sprintf("%s (%s)", outcome, a.Error)
	}
	return outcome
}

// readyWhy words what a READY instance waits for: an executor that may
// run it (labels and capabilities) with a free slot.
func readyWhy(f *fsm.WhyFacts, execs []model.ExecutorStatus, execErr error) string {
	need := "an executor"
	if f.ActionType == model.ActionSDK {
		need = "an SDK worker that runs handler " + f.Handler
	}
	if len(f.Labels) > 0 {
		var ls []string
		for _, k := range slices.Sorted(maps.Keys(f.Labels)) {
			ls = append(ls, k+"="+f.Labels[k])
		}
		need += " with " + plural(len(ls), "label", "labels") + " " + strings.Join(ls, ", ")
	}
	need = "waiting for " + need + " and a free slot"
	if execErr != nil {
		return need + " (the leader's executor list is unavailable: " + execErr.Error() + ")"
	}
	action := &model.Action{Type: f.ActionType, Handler: f.Handler}
	labelled, match, free := 0, 0, 0
	for _, e := range execs {
		if !model.LabelsMatch(f.Labels, e.Labels) {
			continue
		}
		labelled++
		if e.Capabilities.Runs(action) {
			match++
			free += e.Free
		}
	}
	switch {
	case len(execs) == 0:
		return need + ": no executor is connected"
	case labelled == 0:
		return need + ": no connected executor has these labels"
	case match == 0 && f.ActionType == model.ActionSDK:
		return need + fmt.Sprintf(": %d connected %s the labels, none runs handler %s", labelled, plural(labelled, "executor has", "executors have"), f.Handler)
	case match == 0:
		return need + fmt.Sprintf(": %d connected %s the labels, none runs %s actions", labelled, plural(labelled, "executor has", "executors have"), f.ActionType)
	case free == 0:
		return need + fmt.Sprintf(": %d %s, all slots busy", match, plural(match, "executor matches", "executors match"))
	}
	return need + fmt.Sprintf(": %d %s with %d free %s; it is leased at their next poll", match,
		plural(match, "executor matches", "executors match"), free, plural(free, "slot", "slots"))
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
