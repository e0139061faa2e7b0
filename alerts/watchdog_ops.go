package alerts

import (
	"fmt"
	"strconv"
	"time"

	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/model/member"
)

// The watchdog's cluster and frequency rules (docs/alerts.md): members
// the clock monitor no longer hears (member_unreachable) or finds off
// (clock_skew), members whose wall clock stepped (clock_jump), executors the dispatcher counts as lost (executor_lost),
// maxQueued overflows (queue_full), tasks firing more often than their
// schedule allows (frequency_anomaly) and a cluster where nothing fires
// while fires are due (cluster_silence). None of them scans the tasks'
// instances: they read what the clock monitor, the dispatcher and the
// observer's feed (watchfeed.go) already keep.

// queueFullQuiet is how long after a task's last maxQueued overflow its
// queue_full alert resolves.
const queueFullQuiet = 10 * time.Minute

// clusterSilenceID is the id of the one cluster_silence alert.
const clusterSilenceID = model.RuleClusterSilence + ":cluster"

// opsFindings adds the findings of the cluster and frequency rules to
// seen. It returns the rules whose source could not answer (they are
// neither refreshed nor resolved) and a hold for single alerts that must
// not resolve yet.
func (a *Alerts) opsFindings(now time.Time, tasks map[string]*watchedTask, firing []model.Alert, seen map[string]*finding) (held map[string]bool, hold func(model.Alert) bool) {
	held = map[string]bool{}
	add := func(id, rule, severity string, subject model.AlertSubject, summary string, details map[string]string) {
		seen[id] = &finding{change: changeRaise(id, rule, severity, subject, summary, details), since: now, n: 1}
	}
	// member_unreachable and clock_skew: the clock monitor's rounds.
	var jumpUnknown map[string]bool
	if m := a.cfg.Clocks; m == nil {
		held[model.RuleMemberUnreachable], held[model.RuleClockSkew], held[model.RuleClockJump] = true, true, true
	} else {
		silent, ok := m.Silent(a.cfg.MemberGrace)
		held[model.RuleMemberUnreachable] = !ok
		for _, s := range silent {
			last := "never since this node listed it"
			if !s.Last.IsZero() {
				last = s.Last.UTC().Format(time.RFC3339)
			}
			add(model.RuleMemberUnreachable+":"+s.ID, model.RuleMemberUnreachable, model.SeverityWarning, model.AlertSubject{Node: s.ID},
				fmt.Sprintf("member %s has not answered the leader for %s (more than %s)", s.ID, s.Dur.Round(time.Second), a.cfg.MemberGrace),
				map[string]string{"lastAnswer": last, "silentFor": s.Dur.Round(time.Second).String()})
		}
		if off, ok := m.Off(); !ok {
			held[model.RuleClockSkew] = true
		} else {
			for _, mc := range off {
				add(model.RuleClockSkew+":"+mc.ID, model.RuleClockSkew, model.SeverityWarning, model.AlertSubject{Node: mc.ID},
					fmt.Sprintf("member %s's clock is %s off from the cluster's (more than %s)", mc.ID, mc.Offset.Round(time.Millisecond), m.MaxSkew()),
					map[string]string{"offset": mc.Offset.String(), "maxClockSkew": m.MaxSkew().String()})
			}
		}
		// clock_jump: the steps each member reports (clockjump.go).
		var jumps map[string]*member.ClockJump
		jumps, jumpUnknown = m.MemberJumps()
		for id, j := range jumps {
			if j != nil {
				aid, summary, details := clockJumpAlert(id, j)
				add(aid, model.RuleClockJump, model.SeverityWarning, model.AlertSubject{Node: id}, summary, details)
			}
		}
	}
	// executor_lost: the dispatcher's leases and sightings.
	d := a.watchDispatcher()
	if d == nil {
		held[model.RuleExecutorLost] = true
	} else {
		for _, le := range d.LostExecutors() {
			last := "not since this leader's term started"
			if !le.LastSeen.IsZero() {
				last = le.LastSeen.UTC().Format(time.RFC3339)
			}
			add(model.RuleExecutorLost+":"+le.Name, model.RuleExecutorLost, model.SeverityWarning, model.AlertSubject{Executor: le.Name},
				fmt.Sprintf("executor %s stopped heartbeating: %d attempt(s) still leased to it, %d lease(s) expired (last heard from: %s)", le.Name, le.Running, le.Expired, last),
				map[string]string{"running": strconv.Itoa(le.Running), "expired": strconv.Itoa(le.Expired), "lastSeen": last})
		}
	}
	hold = func(al model.Alert) bool {
		if held[al.Rule] || al.Rule == model.RuleClockJump && jumpUnknown[al.Subject.Node] {
			return true
		}
		// A lost executor resolves when it is heard from again; a new
		// leader that has not heard from it keeps the alert.
		return al.Rule == model.RuleExecutorLost && d != nil && !d.HeardFrom(al.Subject.Executor)
	}
	if a.feed == nil {
		held[model.RuleQueueFull], held[model.RuleFrequencyAnomaly], held[model.RuleClusterSilence] = true, true, true
		return held, hold
	}
	// queue_full: overflows within the quiet period.
	for task, o := range a.feed.overflows(now, queueFullQuiet) {
		at := time.UnixMilli(o.at)
		id := model.FormatID(o.id)
		add(model.RuleQueueFull+":"+task, model.RuleQueueFull, model.SeverityWarning, model.AlertSubject{Task: task, Instance: id},
			fmt.Sprintf("task %s: %d instance(s) skipped since its queue was full (maxQueued), the latest %s", task, o.n, id),
			map[string]string{"skipped": strconv.Itoa(o.n), "lastAt": at.UTC().Format(time.RFC3339)})
	}
	// frequency_anomaly: the tasks that fired since the last evaluation
	// and those whose alert fires.
	check := a.feed.take()
	for _, al := range firing {
		if al.Rule == model.RuleFrequencyAnomaly {
			check[al.Subject.Task] = true
		}
	}
	window := a.cfg.AnomalyWindow
	for task := range check {
		wt := tasks[task]
		if wt == nil || wt.sched == nil {
			a.feed.forgetTask(task)
			continue
		}
		from := now.Add(-window)
		got := a.feed.firesIn(task, from.UnixMilli(), now.UnixMilli())
		if got <= 1 {
			continue
		}
		// Count the schedule's fire times in the window, no further
		// than needed to decide.
		allowed := 0
		for t := wt.sched.Next(from); !t.IsZero() && !t.After(now) && allowed+1 < got; t = wt.sched.Next(t) {
			allowed++
		}
		if got <= allowed+1 {
			continue
		}
		add(model.RuleFrequencyAnomaly+":"+task, model.RuleFrequencyAnomaly, model.SeverityCritical, model.AlertSubject{Task: task},
			fmt.Sprintf("task %s: %d schedule instances in the last %s, its trigger allows %d: suspected duplicate", task, got, window, allowed),
			map[string]string{"instances": strconv.Itoa(got), "allowed": strconv.Itoa(allowed), "window": window.String()})
	}
	// cluster_silence: nothing fired for -silence while a fire was due.
	last := time.UnixMilli(a.feed.last())
	if now.Sub(last) > a.cfg.Silence {
		from := max(last.UnixMilli(), now.Add(-a.cfg.Silence).UnixMilli())
		for _, wt := range tasks {
			sc := wt.sched
			if sc == nil || wt.paused || wt.watermark == 0 {
				continue
			}
			due := wt.due(max(from, wt.watermark))
			if due.IsZero() || due.Add(a.cfg.SilenceGrace).After(now) {
				continue
			}
			add(clusterSilenceID, model.RuleClusterSilence, model.SeverityCritical, model.AlertSubject{},
				fmt.Sprintf("nothing has fired for %s (since %s) while task %s was due at %s", now.Sub(last).Round(time.Second),
					last.UTC().Format(time.RFC3339), wt.name, due.UTC().Format(time.RFC3339)),
				map[string]string{"lastFire": last.UTC().Format(time.RFC3339), "dueTask": wt.name, "dueAt": due.UTC().Format(time.RFC3339)})
			break
		}
	}
	return held, hold
}

// watchDispatcher returns what the current term's dispatcher knows of
// the executors, or nil when this node does not lead.
func (a *Alerts) watchDispatcher() Executors {
	if a.cfg.Executors == nil {
		return nil
	}
	return a.cfg.Executors()
}
