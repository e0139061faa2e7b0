package chaos

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/ax-scheduler/ax/model"
)

// Check names, one per promise of DESIGN §8 the checker judges.
const (
	CheckLost           = "lost-write"      // an acknowledged write's instance is missing
	CheckDuplicateFire  = "duplicate-fire"  // two instances for one (task, scheduledAt)
	CheckDuplicateKey   = "duplicate-key"   // two instances for one idempotency key
	CheckDuplicateWrite = "duplicate-write" // one request id answered with two instances
	CheckOverlap        = "overlap"         // two attempts of one instance ran at once
	CheckEarly          = "early-fire"      // fired or started before its time
	CheckMissed         = "missed-fire"     // a cron second with no instance
	CheckFiringResume   = "firing-resume"   // a fire later than the firing bound
	CheckDispatchResume = "dispatch-resume" // a first start later than the dispatch bound
	CheckStuck          = "stuck"           // not finished when the history was collected
	CheckReplicas       = "replicas"        // a node disagrees on a finished instance
	CheckPhantom        = "phantom-attempt" // a run of an attempt the cluster never recorded
	CheckRecorded       = "records"         // a success the action log never saw run
	CheckSlots          = "slot-leak"       // a task's busy slots differ from its instances that hold one
	CheckCharged        = "charged-unrun"   // an attempt charged to maxRetries (lost) that never ran
	CheckAttemptOrder   = "attempt-order"   // a run whose attempt number is not above an earlier run's
	CheckShards         = "shards"          // a sharded instance whose outcome its shards do not give, or a shard without exactly one success
)

// Checks lists every check in the order results are reported.
var Checks = []string{CheckLost, CheckDuplicateFire, CheckDuplicateKey, CheckDuplicateWrite, CheckOverlap,
	CheckEarly, CheckMissed, CheckFiringResume, CheckDispatchResume, CheckStuck, CheckReplicas, CheckPhantom, CheckRecorded, CheckSlots, CheckShards,
	CheckCharged, CheckAttemptOrder}

// Bounds are the timing promises a history is held to.
type Bounds struct {
	// Firing bounds a cron second's lateness: firedAt - scheduledAt. An
	// election plus one second (DESIGN §8) while any single node is down
	// or cut off.
	Firing time.Duration
	// Dispatch bounds how long an instance waits for its first attempt to
	// start, from when it was due (test clock): the firing bound plus one
	// second.
	Dispatch time.Duration
}

// Violation is one broken promise, with its evidence.
type Violation struct {
	Check  string
	Detail string
}

// Stats summarise a history.
type Stats struct {
	Faults     int
	Elections  int // leadership changes seen
	Acks       int
	Unknown    int
	Refused    int
	Instances  int
	Attempts   int           // runs the action log saw
	Lost       int           // attempts the cluster recorded as lost
	RanTwice   int           // instances whose action ran to completion more than once
	MaxFire    time.Duration // worst firedAt - scheduledAt of a cron second
	MaxFireID  string
	MaxStart   time.Duration // worst first start - due
	MaxStartID string
	// Slowdown is how much slower CPU work ran during the scenario than
	// on an idle core; the timing bounds were scaled by it (1: not).
	Slowdown float64
	// NewLeader is the longest a fault waited for a new leader to be seen
	// (faults after which leadership did not move do not count).
	NewLeader time.Duration
}

// Result is what Check found.
type Result struct {
	Stats      Stats
	Violations []Violation
}

// Failed returns the violations of one check.
func (r *Result) Failed(check string) []Violation {
	var out []Violation
	for _, v := range r.Violations {
		if v.Check == check {
			out = append(out, v)
		}
	}
	return out
}

// Check judges a history against every promise.
func Check(h *History, b Bounds) *Result {
	r := &Result{}
	for _, f := range []func(*History, Bounds, *Result){
		checkLost, checkDuplicates, checkOverlap, checkEarly, checkMissed, checkResume, checkStuck, checkReplicas, checkRecorded,
		checkSlots, checkCharged, checkAttemptOrder, checkShards,
	} {
		f(h, b, r)
	}
	r.Stats.Faults, r.Stats.Acks, r.Stats.Unknown, r.Stats.Refused = len(h.Faults), len(h.Acks), h.Unknown, h.Refused
	r.Stats.Instances, r.Stats.Attempts = len(h.Instances), len(h.Runs)
	r.Stats.Elections = max(len(h.Leaders)-1, 0)
	for i, f := range h.Faults {
		until := h.Collected
		if i+1 < len(h.Faults) {
			until = h.Faults[i+1].Start
		}
		if d, ok := newLeaderAfter(h, f.Start, until); ok && d > r.Stats.NewLeader {
			r.Stats.NewLeader = d
		}
	}
	for _, in := range h.Instances {
		for _, a := range in.AttemptList {
			if a.Outcome == model.OutcomeLost {
				r.Stats.Lost++
			}
		}
	}
	return r
}

func (r *Result) add(check, format string, args ...any) {
	r.Violations = append(r.Violations, Violation{Check: check, Detail: fmt.Sprintf(format, args...)})
}

// checkLost: every acknowledged write's instance exists.
func checkLost(h *History, _ Bounds, r *Result) {
	have := instancesByID(h)
	for _, a := range h.Acks {
		if a.ID == "" {
			r.add(CheckLost, "%s %s (key %q, request %s) acknowledged at %s with no instance id in the answer (%s)",
				a.Kind, a.Task, a.Key, a.Request, clock(a.At), a.Note)
			continue
		}
		if _, ok := have[a.ID]; !ok {
			r.add(CheckLost, "%s %s (key %q, request %s) acknowledged at %s as instance %s, which does not exist",
				a.Kind, a.Task, a.Key, a.Request, clock(a.At), a.ID)
		}
	}
}

// checkDuplicates: one instance per (task, scheduledAt) of a time
// trigger, one per idempotency key, and one answer per key and per
// request id.
func checkDuplicates(h *History, _ Bounds, r *Result) {
	byTime := map[string][]string{}
	byKey := map[string][]string{}
	for _, in := range h.Instances {
		if in.Parent != "" {
			continue // a shard shares its instance's fire time and key
		}
		switch in.Source {
		case model.SourceCron, model.SourceInterval, model.SourceOnce:
			k := in.Task + " at " + in.ScheduledAt.UTC().Format(model.TimeLayout)
			byTime[k] = append(byTime[k], in.ID)
		}
		if in.IdempotencyKey != "" {
			k := in.Task + " key " + in.IdempotencyKey
			byKey[k] = append(byKey[k], in.ID)
		}
	}
	for _, k := range sortedKeys(byTime) {
		if ids := byTime[k]; len(ids) > 1 {
			r.add(CheckDuplicateFire, "%s: %d instances %s", k, len(ids), strings.Join(ids, ", "))
		}
	}
	for _, k := range sortedKeys(byKey) {
		if ids := byKey[k]; len(ids) > 1 {
			r.add(CheckDuplicateKey, "%s: %d instances %s", k, len(ids), strings.Join(ids, ", "))
		}
	}
	ackKey := map[string]map[string]bool{}
	ackReq := map[string]map[string]bool{}
	for _, a := range h.Acks {
		if a.Key != "" {
			addTo(ackKey, a.Task+" key "+a.Key, a.ID)
		}
		if a.Request != "" {
			addTo(ackReq, a.Kind+" "+a.Task+" request "+a.Request, a.ID)
		}
	}
	for _, k := range sortedKeys(ackKey) {
		if len(ackKey[k]) > 1 {
			r.add(CheckDuplicateKey, "%s acknowledged as %d different instances %s", k, len(ackKey[k]), strings.Join(sortedKeys(ackKey[k]), ", "))
		}
	}
	for _, k := range sortedKeys(ackReq) {
		if len(ackReq[k]) > 1 {
			r.add(CheckDuplicateWrite, "%s answered with %d different instances %s", k, len(ackReq[k]), strings.Join(sortedKeys(ackReq[k]), ", "))
		}
	}
}

// checkOverlap: no two runs of one instance were alive at once, and no
// attempt started twice.
func checkOverlap(h *History, _ Bounds, r *Result) {
	byInst := map[string][]Run{}
	for _, run := range h.Runs {
		byInst[run.Instance] = append(byInst[run.Instance], run)
		if run.Starts > 1 {
			r.add(CheckOverlap, "instance %s attempt %d started %d times", run.Instance, run.Attempt, run.Starts)
		}
	}
	for _, id := range sortedKeys(byInst) {
		runs := byInst[id]
		sort.Slice(runs, func(i, j int) bool { return runs[i].Start.Before(runs[j].Start) })
		completed := 0
		for i, a := range runs {
			if a.Ended == "end" {
				completed++
			}
			for _, b := range runs[i+1:] {
				if !b.Start.Before(a.Last) {
					continue
				}
				end := a.Last
				if b.Last.Before(end) {
					end = b.Last
				}
				r.add(CheckOverlap, "instance %s: attempt %d on %s (started %s, last alive %s, %s) and attempt %d on %s (started %s) ran at once for %s",
					id, a.Attempt, a.Executor, clock(a.Start), clock(a.Last), endedWord(a.Ended), b.Attempt, b.Executor, clock(b.Start),
					end.Sub(b.Start).Round(time.Millisecond))
			}
		}
		if completed > 1 {
			r.Stats.RanTwice++
		}
	}
}

// checkEarly: nothing fired before its time (the cluster's stamps), and
// no cron second or delayed submission started before it was due by the
// test's clock.
func checkEarly(h *History, _ Bounds, r *Result) {
	first := firstStarts(h)
	for _, in := range h.Instances {
		if !in.FiredAt.IsZero() && in.FiredAt.Before(in.ScheduledAt.Time) {
			r.add(CheckEarly, "instance %s (%s, %s) fired at %s, %s before its scheduledAt %s",
				in.ID, in.Task, in.Source, clock(in.FiredAt.Time), in.ScheduledAt.Sub(in.FiredAt.Time).Round(time.Millisecond), clock(in.ScheduledAt.Time))
		}
		if in.Source != model.SourceCron && in.Source != model.SourceDelay {
			continue
		}
		if s, ok := first[in.ID]; ok && s.Before(in.ScheduledAt.Time) {
			r.add(CheckEarly, "instance %s (%s, %s) started at %s, %s before it was due at %s (test clock)",
				in.ID, in.Task, in.Source, clock(s), in.ScheduledAt.Sub(s).Round(time.Millisecond), clock(in.ScheduledAt.Time))
		}
	}
}

// checkMissed: every second of every cron span has an instance.
func checkMissed(h *History, _ Bounds, r *Result) {
	have := map[string]bool{}
	for _, in := range h.Instances {
		if in.Source == model.SourceCron {
			have[in.Task+"@"+fmt.Sprint(in.ScheduledAt.UnixMilli())] = true
		}
	}
	for _, c := range h.Crons {
		var missing []string
		for s := c.From.Truncate(time.Second); !s.After(c.To); s = s.Add(time.Second) {
			if s.Before(c.From) {
				continue
			}
			if !have[c.Task+"@"+fmt.Sprint(s.UnixMilli())] {
				missing = append(missing, clock(s))
			}
		}
		if len(missing) > 0 {
			r.add(CheckMissed, "%s: %d of the seconds %s..%s have no instance: %s",
				c.Task, len(missing), clock(c.From), clock(c.To), abbreviate(missing, 8))
		}
	}
}

// checkResume: fires and first starts stay within their bounds, however
// the faults went.
func checkResume(h *History, b Bounds, r *Result) {
	inSpan := map[string]bool{}
	for _, c := range h.Crons {
		inSpan[c.Task] = true
	}
	var lateFires, lateStarts []string
	for _, in := range h.Instances {
		if in.Source != model.SourceCron || !inSpan[in.Task] || in.FiredAt.IsZero() || !in.ScheduledAt.Before(h.End) {
			continue
		}
		late := in.FiredAt.Sub(in.ScheduledAt.Time)
		if late > r.Stats.MaxFire {
			r.Stats.MaxFire, r.Stats.MaxFireID = late, in.ID
		}
		if b.Firing > 0 && late > b.Firing {
			lateFires = append(lateFires, fmt.Sprintf("%s (%s due %s) fired %s late", in.ID, in.Task, clock(in.ScheduledAt.Time), late.Round(time.Millisecond)))
		}
	}
	due := dueTimes(h)
	first := firstStarts(h)
	for _, id := range sortedKeys(due) {
		s, ok := first[id]
		if !ok || !due[id].Before(h.End) {
			continue
		}
		late := s.Sub(due[id])
		if late > r.Stats.MaxStart {
			r.Stats.MaxStart, r.Stats.MaxStartID = late, id
		}
		if b.Dispatch > 0 && late > b.Dispatch {
			lateStarts = append(lateStarts, fmt.Sprintf("%s due %s started %s late", id, clock(due[id]), late.Round(time.Millisecond)))
		}
	}
	if len(lateFires) > 0 {
		r.add(CheckFiringResume, "%d cron fires later than %s (worst %s: %s): %s", len(lateFires), b.Firing,
			r.Stats.MaxFireID, r.Stats.MaxFire.Round(time.Millisecond), abbreviate(lateFires, 4))
	}
	if len(lateStarts) > 0 {
		r.add(CheckDispatchResume, "%d first attempts started later than %s after they were due (worst %s: %s): %s", len(lateStarts), b.Dispatch,
			r.Stats.MaxStartID, r.Stats.MaxStart.Round(time.Millisecond), abbreviate(lateStarts, 4))
	}
}

// checkStuck: every instance due before the workload ended has finished
// by the collection, or is making progress then (an attempt of it was
// alive within the last 5 s before the collection, or started since):
// that is "RUNNING with a live lease". Slow progress is judged by the
// resume bounds, not here.
func checkStuck(h *History, _ Bounds, r *Result) {
	last := map[string]Run{}
	for _, run := range h.Runs {
		if run.Last.After(last[run.Instance].Last) {
			last[run.Instance] = run
		}
	}
	for _, in := range h.Instances {
		if Terminal(in.State) || !in.ScheduledAt.Before(h.End) {
			continue
		}
		seen := "no attempt seen running"
		if run, ok := last[in.ID]; ok {
			if run.Last.After(h.Collected.Add(-5 * time.Second)) {
				continue
			}
			seen = fmt.Sprintf("attempt %d last seen alive at %s", run.Attempt, clock(run.Last))
		}
		r.add(CheckStuck, "instance %s (%s, due %s) still %s at %s, %s after the workload ended (attempts %d, %s)",
			in.ID, in.Task, clock(in.ScheduledAt.Time), in.State, clock(h.Collected), h.Collected.Sub(h.End).Round(time.Second), in.Attempts, seen)
	}
}

// checkCharged: every attempt the cluster charged to maxRetries as lost
// (its executor confirmed it, then went silent) was started: the action
// log saw it, or its executor's log says it launched it (an attempt its
// executor killed at once may die before its action writes a line). An
// attempt that never started must be given back (interrupted), never use
// up a retry.
func checkCharged(h *History, _ Bounds, r *Result) {
	ran := map[string]bool{}
	for _, run := range h.Runs {
		ran[fmt.Sprintf("%s-%d", run.Instance, run.Attempt)] = true
	}
	for _, in := range h.Instances {
		for _, a := range in.AttemptList {
			exec := fmt.Sprintf("%s-%d", in.ID, a.Number)
			if _, launched := h.Launched[exec]; a.Outcome == model.OutcomeLost && !ran[exec] && !launched {
				r.add(CheckCharged, "instance %s (%s): attempt %d on %s recorded lost (a retry used) but neither the action log nor its executor saw it start",
					in.ID, in.Task, a.Number, a.Executor)
			}
		}
	}
}

// checkAttemptOrder: attempt numbers only grow (the fencing promise):
// the runs of an instance, in the order they started, have increasing
// attempt numbers, all at least 1.
func checkAttemptOrder(h *History, _ Bounds, r *Result) {
	byInst := map[string][]Run{}
	for _, run := range h.Runs {
		byInst[run.Instance] = append(byInst[run.Instance], run)
	}
	for _, id := range sortedKeys(byInst) {
		runs := byInst[id]
		sort.Slice(runs, func(i, j int) bool { return runs[i].Start.Before(runs[j].Start) })
		for i, run := range runs {
			if run.Attempt < 1 {
				r.add(CheckAttemptOrder, "instance %s ran as attempt %d on %s at %s", id, run.Attempt, run.Executor, clock(run.Start))
			} else if i > 0 && run.Attempt <= runs[i-1].Attempt {
				r.add(CheckAttemptOrder, "instance %s: attempt %d on %s started at %s, after attempt %d on %s started at %s",
					id, run.Attempt, run.Executor, clock(run.Start), runs[i-1].Attempt, runs[i-1].Executor, clock(runs[i-1].Start))
			}
		}
	}
}

// checkSlots: no finished instance holds a concurrency slot, and no slot
// is counted twice: at the end, each task counts busy exactly the slots
// its unfinished instances hold. A slot busy with no instance holding it
// (the leak of a mid-run approval that ended) blocks the task for good.
func checkSlots(h *History, _ Bounds, r *Result) {
	// A pool's counts are its task's instances that hold one of its
	// slots or wait for one (none once they have all finished).
	for _, p := range h.Pools {
		holding, waiting := 0, 0
		for _, in := range h.Instances {
			if in.Task != p.Task {
				continue
			}
			switch in.State {
			case model.StateReady, model.StateRunning, model.StateRetrying:
				holding++
			case model.StateBlocked:
				waiting++
			}
		}
		if p.Busy != holding || p.Queued != waiting {
			r.add(CheckSlots, "pool %s: %d slots busy and %d waiting, while %d instances hold one and %d wait", p.Pool, p.Busy, p.Queued, holding, waiting)
		}
	}
	for _, s := range h.Slots {
		if s.Busy != len(s.Holders) {
			held := "none"
			if len(s.Holders) > 0 {
				held = abbreviate(s.Holders, 5)
			}
			r.add(CheckSlots, "task %s: %d concurrency slots busy, %d instances hold one (%s)", s.Task, s.Busy, len(s.Holders), held)
		}
	}
}

// checkReplicas: every node holds every finished instance, in the same
// state.
func checkReplicas(h *History, _ Bounds, r *Result) {
	for _, node := range sortedKeys(h.Replicas) {
		states := h.Replicas[node]
		var diff []string
		for _, in := range h.Instances {
			if !Terminal(in.State) || !in.ScheduledAt.Before(h.End) {
				continue
			}
			if got, ok := states[in.ID]; !ok {
				diff = append(diff, in.ID+" missing")
			} else if got != in.State {
				diff = append(diff, fmt.Sprintf("%s %s (leader: %s)", in.ID, got, in.State))
			}
		}
		if len(diff) > 0 {
			r.add(CheckReplicas, "node %s disagrees on %d finished instances: %s", node, len(diff), abbreviate(diff, 6))
		}
	}
}

// checkRecorded: every run is an attempt the cluster recorded (a job
// handed out with any other attempt number was never leased), and an
// instance that succeeded was seen running (a guard on the harness
// itself: the action log must be complete).
func checkRecorded(h *History, _ Bounds, r *Result) {
	seen := map[string]bool{}
	have := instancesByID(h)
	for _, run := range h.Runs {
		seen[run.Instance] = true
		// Only a finished instance's attempts are final: a run may start
		// between the collection of the instances and that of the log.
		if in, ok := have[run.Instance]; ok && (run.Attempt < 1 || Terminal(in.State) && run.Attempt > in.Attempts) {
			r.add(CheckPhantom, "instance %s (%s) ran as attempt %d on %s at %s, an attempt the cluster never recorded (it has %d)",
				in.ID, in.Task, run.Attempt, run.Executor, clock(run.Start), in.Attempts)
		}
	}
	for _, in := range h.Instances {
		if in.State == model.StateSuccess && !seen[in.ID] && in.Shards == nil { // a sharded instance runs as its shards
			r.add(CheckRecorded, "instance %s (%s) succeeded but the action log has no run of it", in.ID, in.Task)
		}
	}
}

// checkShards: a finished sharded instance has all its shards, each
// finished, and its outcome is theirs: SUCCESS exactly when every shard
// succeeded (then each with exactly one successful attempt), FAILED or
// stopped otherwise; a shard of a successful instance ran (the action
// log saw it).
func checkShards(h *History, _ Bounds, r *Result) {
	shards := map[string][]model.Instance{}
	for _, in := range h.Instances {
		if in.Parent != "" {
			shards[in.Parent] = append(shards[in.Parent], in)
		}
	}
	ran := map[string]bool{}
	for _, run := range h.Runs {
		ran[run.Instance] = true
	}
	for _, in := range h.Instances {
		if in.Shards == nil || !Terminal(in.State) {
			continue
		}
		got := shards[in.ID]
		if len(got) != in.Shards.Total {
			r.add(CheckShards, "instance %s (%s) %s with %d shards, %d found", in.ID, in.Task, in.State, in.Shards.Total, len(got))
			continue
		}
		succeeded := 0
		for _, s := range got {
			if !Terminal(s.State) {
				r.add(CheckShards, "instance %s ended %s while its shard %s is %s", in.ID, in.State, s.ID, s.State)
			}
			if s.State != model.StateSuccess {
				continue
			}
			succeeded++
			wins := 1 // one attempt, a success (its attempts are not listed)
			if len(s.AttemptList) > 0 {
				wins = 0
				for _, a := range s.AttemptList {
					if a.Outcome == model.OutcomeSuccess {
						wins++
					}
				}
			}
			if wins != 1 {
				r.add(CheckShards, "shard %s of instance %s: %d successful attempts, want exactly 1", s.ID, in.ID, wins)
			}
			if !ran[s.ID] {
				r.add(CheckShards, "shard %s of instance %s succeeded but the action log has no run of it", s.ID, in.ID)
			}
		}
		if all := succeeded == len(got); all != (in.State == model.StateSuccess) {
			r.add(CheckShards, "instance %s ended %s with %d of its %d shards successful", in.ID, in.State, succeeded, len(got))
		}
	}
}

// newLeaderAfter returns how long after t a leader of a newer term than
// the one known at t was first seen, if one was before until.
func newLeaderAfter(h *History, t, until time.Time) (time.Duration, bool) {
	var term uint64
	for _, l := range h.Leaders {
		if !l.Seen.After(t) && l.Term > term {
			term = l.Term
		}
	}
	for _, l := range h.Leaders {
		if l.Seen.After(t) && l.Seen.Before(until) && l.Term > term {
			return l.Seen.Sub(t), true
		}
	}
	return 0, false
}

// firstStarts returns, per instance, when its first attempt started.
func firstStarts(h *History) map[string]time.Time {
	out := map[string]time.Time{}
	for _, run := range h.Runs {
		if run.Attempt == 1 {
			out[run.Instance] = run.Start
		}
	}
	return out
}

// dueTimes returns when each instance was due by the test's clock: its
// scheduledAt for a cron second or a delayed submission (the test chose
// it), the first acknowledgement for a trigger; not for the instances of
// a pool's task, which may wait for a slot.
func dueTimes(h *History) map[string]time.Time {
	out := map[string]time.Time{}
	for _, in := range h.Instances {
		if in.Source == model.SourceCron || in.Source == model.SourceDelay {
			out[in.ID] = in.ScheduledAt.Time
		}
	}
	for _, a := range h.Acks {
		if a.Kind != "trigger" {
			continue
		}
		if d, ok := out[a.ID]; !ok || a.At.Before(d) {
			out[a.ID] = a.At
		}
	}
	for _, in := range h.Instances {
		if d, ok := out[in.Parent]; ok && in.Parent != "" {
			out[in.ID] = d // a shard is due with its instance
		}
	}
	// A pool's instances may wait for a slot by design: the dispatch
	// bound is not theirs.
	for _, p := range h.Pools {
		for _, in := range h.Instances {
			if in.Task == p.Task {
				delete(out, in.ID)
			}
		}
	}
	return out
}

func instancesByID(h *History) map[string]*model.Instance {
	out := make(map[string]*model.Instance, len(h.Instances))
	for i := range h.Instances {
		out[h.Instances[i].ID] = &h.Instances[i]
	}
	return out
}

func addTo(m map[string]map[string]bool, k, v string) {
	if m[k] == nil {
		m[k] = map[string]bool{}
	}
	m[k][v] = true
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func abbreviate(items []string, n int) string {
	if len(items) <= n {
		return strings.Join(items, "; ")
	}
	return strings.Join(items[:n], "; ") + fmt.Sprintf("; and %d more", len(items)-n)
}

func endedWord(e string) string {
	switch e {
	case "end":
		return "ran to completion"
	case "stop":
		return "stopped by a signal"
	}
	return "no last word"
}

// clock renders a time of day with milliseconds, in UTC.
func clock(t time.Time) string { return t.UTC().Format("15:04:05.000") }
