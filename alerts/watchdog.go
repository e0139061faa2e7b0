package alerts

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/ax-scheduler/ax/fsm"
	"github.com/ax-scheduler/ax/fsm/command"
	axmetrics "github.com/ax-scheduler/ax/metrics"
	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/trigger"
)

// The watchdog (docs/alerts.md): a leader-only service that evaluates the
// alert rules every -watch-interval on the agent's clock and proposes what
// changed as one alert_update: a raise for a condition that appeared, a
// refresh (at most once per alertRefresh) while it holds, a resolve once
// it clears. The state machine turns these into incidents and pending
// notifications, so a new leader's watchdog simply evaluates again: a
// raise of a firing alert is a refresh, never a second incident.
//
// Its work is bounded by the active instances (the active index), the
// tasks (their definitions and watermarks) and the firing alerts: it
// reads no finished instance except the newest success of a task whose
// instance_failed alert fires.

// alertRefresh is how often a firing alert's LastSeen is brought up to
// date while its condition holds.
const alertRefresh = time.Minute

// misfireQuiet is how long after a task's last misfire its misfire alert
// resolves.
const misfireQuiet = 10 * time.Minute

// watchedRules are the rules the watchdog resolves when their condition
// is no longer seen.
var watchedRules = map[string]bool{
	model.RuleStuckReady: true, model.RuleStuckBlocked: true, model.RuleStuckApproval: true,
	model.RuleRunningOvertime: true, model.RuleTaskSilence: true, model.RuleMisfire: true, model.RuleDeadlineMissed: true,
	model.RuleMemberUnreachable: true, model.RuleClockSkew: true, model.RuleClockJump: true, model.RuleExecutorLost: true,
	model.RuleQueueFull: true, model.RuleFrequencyAnomaly: true, model.RuleClusterSilence: true,
}

// watchedTask is a task as the watchdog keeps it between evaluations:
// its definition and parsed schedule are re-read only when its version
// changes.
type watchedTask struct {
	version   uint64
	watermark int64
	runs      uint64 // the trigger's fires (Task.Runs)
	// What the rules read of the task's definition, not the decoded task:
	// the watchdog keeps one of these for every task, and a decoded task
	// (its maps, its policy, its action) was 43% of a leader's live heap
	// at 100,000 tasks.
	name     string
	paused   bool
	maxRuns  int64            // trigger.maxRuns
	jitter   time.Duration    // trigger.jitter
	catchup  time.Duration    // policy.catchupWindow (0: unset)
	timeout  model.Timeout    // policy.timeout
	actTime  time.Duration    // action.timeout
	sched    trigger.Schedule // nil: not a schedule the rules follow
	deadline *model.Deadline  // the task's policy.deadline (nil: none)
	loc      *time.Location   // the task's time zone (deadline.by)
}

// due returns when the fire of wt's schedule after ms is due at the
// latest, its jitter included (zero: none, or its maxRuns are used up).
func (wt *watchedTask) due(ms int64) time.Time {
	next := wt.sched.Next(time.UnixMilli(ms))
	if next.IsZero() || trigger.RunsLeft(wt.maxRuns, wt.runs) == 0 {
		return time.Time{}
	}
	return next.Add(wt.jitter)
}

// watchedTasks returns every task, decoding only new and changed ones.
// Only the watchdog's goroutine calls it.
func (a *Alerts) watchedTasks() (map[string]*watchedTask, error) {
	prev := a.watchCache
	next := make(map[string]*watchedTask, len(prev))
	var changed []string
	err := a.state.TaskVersions(func(name string, version uint64, wm int64, runs uint64) {
		if wt := prev[name]; wt != nil && wt.version == version {
			wt.watermark, wt.runs = wm, runs
			next[name] = wt
			return
		}
		next[name] = &watchedTask{version: version, watermark: wm, runs: runs}
		changed = append(changed, name)
	})
	if err != nil {
		return nil, err
	}
	for _, name := range changed {
		t, err := a.state.GetTask(name)
		if err != nil {
			delete(next, name)
			continue
		}
		wt := next[name]
		wt.name, wt.paused = t.Name, t.Paused
		wt.maxRuns, wt.jitter = t.Trigger.MaxRuns, t.Trigger.Jitter.Std()
		wt.catchup, wt.timeout, wt.actTime = t.Policy.CatchupWindow.Std(), t.Policy.Timeout, t.Action.Timeout.Std()
		if t.Policy.Deadline != nil {
			wt.deadline, wt.loc = t.Policy.Deadline, t.Location()
		}
		switch t.Trigger.Type {
		case model.TriggerCron, model.TriggerInterval, model.TriggerOnce:
			if sc, err := t.Schedule(); err == nil {
				wt.sched = sc
			}
		}
	}
	a.watchCache = next
	return next, nil
}

// RunWatchdog, a leader's per-term service, evaluates the rules every WatchInterval, and at once when a
// member's clock stepped (clock_jump), until ctx ends.
func (a *Alerts) RunWatchdog(ctx context.Context) error {
	timer := a.cfg.Clock.NewTimer(a.cfg.WatchInterval)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-timer.C():
		case <-a.clockSteps():
			timer.Stop()
		}
		if a.alertsOn() {
			items, err := a.evaluate(a.cfg.Clock.Now())
			if err == nil && len(items) > 0 {
				err = a.proposeAlerts(ctx, items)
				if err == nil {
					for range a.newMisses {
						a.notes.Alerted(axmetrics.EventDeadlineMissed)
					}
				}
			}
			if err != nil && ctx.Err() == nil {
				a.log.Warn("watchdog evaluation failed", "error", err)
			}
		}
		timer.Reset(a.cfg.WatchInterval)
	}
}

// finding is a rule's condition seen for one alert id in an evaluation.
type finding struct {
	change command.AlertChange
	since  time.Time // the oldest subject's start (for grouping)
	n      int
}

// evaluate runs every rule once against the state machine at now and
// returns the changes to propose.
func (a *Alerts) evaluate(now time.Time) ([]command.AlertChange, error) {
	tasks, err := a.watchedTasks()
	if err != nil {
		return nil, err
	}
	seen := map[string]*finding{}
	// see notes a condition for a task, keeping the oldest subject.
	see := func(rule, severity, task, instance string, since time.Time, summary string, details map[string]string) {
		id := rule + ":" + task
		f := seen[id]
		if f == nil {
			f = &finding{change: command.AlertChange{Op: command.AlertRaise, ID: id, Rule: rule, Severity: severity}}
			seen[id] = f
		}
		f.n++
		if f.n == 1 || since.Before(f.since) {
			f.since = since
			f.change.Subject = model.AlertSubject{Task: task, Instance: instance}
			f.change.Summary, f.change.Details = summary, details
		}
	}
	stuckAfter := a.cfg.StuckAfter
	err = a.state.ActiveInstances(func(in fsm.Active) {
		if wt := tasks[in.Task]; wt != nil && wt.deadline != nil && in.ScheduledAt > 0 && in.Parent == 0 { // a shard's instance has the deadline
			// deadline_missed: not finished by its policy.deadline.
			if dl := wt.deadline.At(time.UnixMilli(in.ScheduledAt), wt.loc); now.After(dl) {
				id := model.FormatID(in.ID)
				see(model.RuleDeadlineMissed, model.SeverityWarning, in.Task, id, dl,
					fmt.Sprintf("task %s: instance %s is %s past its deadline %s (%s late)", in.Task, id, in.State, dl.In(wt.loc).Format(model.TimeLayout), now.Sub(dl).Round(time.Second)),
					map[string]string{"deadline": dl.UTC().Format(time.RFC3339), "scheduledAt": time.UnixMilli(in.ScheduledAt).UTC().Format(time.RFC3339), "state": in.State})
			}
		}
		var rule string
		var since time.Time
		switch in.State {
		case model.StateReady:
			rule, since = model.RuleStuckReady, time.UnixMilli(max(in.FiredAt, in.RetryAt))
		case model.StateBlocked:
			rule, since = model.RuleStuckBlocked, time.UnixMilli(in.FiredAt)
		case model.StateWaitingApproval:
			rule, since = model.RuleStuckApproval, time.UnixMilli(in.FiredAt)
			if in.MidRun {
				since = time.UnixMilli(in.AttemptStart)
			}
		case model.StateRunning:
			wt := tasks[in.Task]
			if wt == nil || in.AttemptStart == 0 {
				return
			}
			// The timeout its attempt runs with: the task's, else the
			// agent's default (-default-timeout); none: no limit.
			timeout := wt.timeout.Std()
			switch {
			case wt.timeout == model.NoTimeout:
				return
			case timeout <= 0 && wt.actTime > 0:
				timeout = wt.actTime
			case timeout <= 0:
				timeout = a.cfg.DefaultTimeout
			}
			if timeout <= 0 {
				return
			}
			limit := timeout + a.cfg.OvertimeGrace
			if start := time.UnixMilli(in.AttemptStart); now.Sub(start) > limit {
				id := model.FormatID(in.ID)
				see(model.RuleRunningOvertime, model.SeverityWarning, in.Task, id, start,
					fmt.Sprintf("task %s: instance %s has run for %s, past its timeout of %s", in.Task, id, now.Sub(start).Round(time.Second), timeout),
					map[string]string{"attempt": strconv.Itoa(in.Attempt), "executor": in.Executor, "startedAt": start.UTC().Format(time.RFC3339), "timeout": timeout.String()})
			}
			return
		default:
			return
		}
		if in.FiredAt == 0 || now.Sub(since) <= stuckAfter {
			return
		}
		id := model.FormatID(in.ID)
		see(rule, model.SeverityWarning, in.Task, id, since,
			fmt.Sprintf("task %s: instance %s has been %s for %s (more than %s)", in.Task, id, in.State, now.Sub(since).Round(time.Second), stuckAfter),
			map[string]string{"state": in.State, "since": since.UTC().Format(time.RFC3339)})
	})
	if err != nil {
		return nil, err
	}
	// task_silence: the first fire time after a task's watermark (every
	// time at or before it is accounted for), moved by the most its jitter
	// may move it, is past its catch-up window and the grace without the
	// scheduler having handled it.
	for _, wt := range tasks {
		wm, sc := wt.watermark, wt.sched
		if sc == nil || wt.paused || wm == 0 {
			continue
		}
		next := wt.due(wm)
		window := wt.catchup
		if window == 0 {
			window = time.Minute
		}
		if next.IsZero() || now.Sub(next) <= window+a.cfg.SilenceGrace {
			continue
		}
		see(model.RuleTaskSilence, model.SeverityCritical, wt.name, "", next,
			fmt.Sprintf("task %s: its fire due at %s has no instance (%s late)", wt.name, next.UTC().Format(time.RFC3339), now.Sub(next).Round(time.Second)),
			map[string]string{"expectedAt": next.UTC().Format(time.RFC3339)})
	}
	// misfire: a misfire within the quiet period.
	misfires, err := a.state.RecentMisfires(100)
	if err != nil {
		return nil, err
	}
	for _, m := range misfires {
		if now.Sub(m.Time.Time) <= misfireQuiet && seen[model.RuleMisfire+":"+m.Task] == nil {
			see(model.RuleMisfire, model.SeverityWarning, m.Task, "", m.Time.Time, "task "+m.Task+": "+m.Message,
				map[string]string{"at": m.Time.UTC().Format(time.RFC3339)})
		}
	}
	firing, err := a.state.FiringAlerts()
	if err != nil {
		return nil, err
	}
	_, hold := a.opsFindings(now, tasks, firing, seen)
	firingMiss := map[string]bool{} // deadline_missed alerts firing already
	for _, al := range firing {
		firingMiss[al.ID] = al.Rule == model.RuleDeadlineMissed
	}
	a.newMisses = a.newMisses[:0]
	for id, f := range seen {
		if f.change.Rule == model.RuleDeadlineMissed && !firingMiss[id] {
			a.newMisses = append(a.newMisses, id)
		}
	}
	return a.diffAlerts(now, seen, firing, hold), nil
}

// diffAlerts compares the findings with the firing alerts: raises what is
// new, refreshes what is due, resolves what the watchdog no longer sees,
// and resolves instance_failed alerts whose task has succeeded since.
// A firing alert not seen that hold keeps is neither resolved nor
// refreshed (its rule's source could not tell).
func (a *Alerts) diffAlerts(now time.Time, seen map[string]*finding, firing []model.Alert, hold func(model.Alert) bool) []command.AlertChange {
	var out []command.AlertChange
	isFiring := make(map[string]bool, len(firing))
	for _, al := range firing {
		isFiring[al.ID] = true
		switch {
		case al.Rule == model.RuleInstanceFailed:
			if a.succeededSince(al) {
				out = append(out, command.AlertChange{Op: command.AlertResolve, ID: al.ID})
			}
		case !watchedRules[al.Rule]:
		case seen[al.ID] == nil && hold(al):
		case seen[al.ID] == nil:
			out = append(out, command.AlertChange{Op: command.AlertResolve, ID: al.ID})
		case now.Sub(al.LastSeen.Time) >= alertRefresh || anotherStep(al, seen[al.ID]):
			out = append(out, a.withCount(seen[al.ID]))
		}
	}
	// New ones, in id order (deterministic proposals are easier to test).
	ids := make([]string, 0, len(seen))
	for id := range seen {
		if !isFiring[id] {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	for _, id := range ids {
		out = append(out, a.withCount(seen[id]))
	}
	return out
}

// changeRaise is a raise of alert id.
func changeRaise(id, rule, severity string, subject model.AlertSubject, summary string, details map[string]string) command.AlertChange {
	return command.AlertChange{Op: command.AlertRaise, ID: id, Rule: rule, Severity: severity, Subject: subject, Summary: summary, Details: details}
}

func (a *Alerts) withCount(f *finding) command.AlertChange {
	c := f.change
	if f.n > 1 {
		d := make(map[string]string, len(c.Details)+1)
		for k, v := range c.Details {
			d[k] = v
		}
		d["instances"] = strconv.Itoa(f.n)
		c.Details = d
	}
	return c
}

// succeededSince reports whether the task of an instance_failed alert has
// a SUCCESS newer than the failure (its newest SUCCESS, one read): a
// newer instance, or the failed instance itself, re-run.
func (a *Alerts) succeededSince(al model.Alert) bool {
	failed, err := model.ParseID(al.Subject.Instance)
	if err != nil || al.Subject.Task == "" {
		return false
	}
	l, err := a.state.ListInstances(model.InstanceFilter{Task: al.Subject.Task, State: model.StateSuccess, Limit: 1})
	if err != nil {
		return errors.Is(err, model.ErrNotFound) // the task is gone
	}
	if len(l.Instances) == 0 {
		return false
	}
	id, err := model.ParseID(l.Instances[0].ID)
	return err == nil && id >= failed
}

// failedAlert is the instance_failed finding for a FAILED instance:
// grouped per task (one incident; Count grows with each failure), keyed by
// the instance so that a repeated proposal counts once.
func failedAlert(in *model.Instance, t *model.Task) command.AlertChange {
	maxAttempts := 1
	if t != nil {
		maxAttempts = t.Policy.MaxRetries + 1
	}
	failedAt := in.FinishedAt
	return command.AlertChange{Op: command.AlertRaise, ID: model.RuleInstanceFailed + ":" + in.Task, Rule: model.RuleInstanceFailed,
		Severity: model.SeverityCritical, Subject: model.AlertSubject{Task: in.Task, Instance: in.ID},
		Summary: fmt.Sprintf("task %s: instance %s failed after %d attempt(s): %s", in.Task, in.ID, in.Attempts, truncate(in.LastError, 200)),
		Details: map[string]string{"attempt": strconv.Itoa(in.Attempts), "maxAttempts": strconv.Itoa(maxAttempts),
			"error": truncate(in.LastError, 2000), "failedAt": failedAt.UTC().Format(time.RFC3339)},
		Key: failureKey(in)}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// clockSteps is signalled when a member's clock stepped (nil without a
// clock monitor: never).
func (a *Alerts) clockSteps() <-chan struct{} {
	if a.cfg.Clocks == nil {
		return nil
	}
	return a.cfg.Clocks.Stepped()
}
