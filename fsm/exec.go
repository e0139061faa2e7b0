package fsm

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"time"

	"github.com/ax-scheduler/ax/fsm/command"
	"github.com/ax-scheduler/ax/model"
)

// Execution commands: every transition of an instance after it fires is
// one of these, checked against the instance's current state (the
// compare-and-set of DESIGN §5).

// LeaseResult lists the instances actually leased (others were no longer
// READY) with their attempt numbers.
type LeaseResult struct {
	IDs      []uint64 `json:"i"`
	Attempts []int    `json:"a"`
}

// HeartbeatResult lists attempts the executor must stop, with why.
type HeartbeatResult struct {
	Stop []model.StopAttempt `json:"stop,omitempty"`
}

// protoLeases is the protocol from which leases are confirmed and
// attempts that may not have started are not charged (see
// command.Expire).
const protoLeases = 6

var (
	stScheduled = code(stateNames, model.StateScheduled)
	stReady     = code(stateNames, model.StateReady)
	stRunning   = code(stateNames, model.StateRunning)
	stSuccess   = code(stateNames, model.StateSuccess)
	stRetrying  = code(stateNames, model.StateRetrying)
	stFailed    = code(stateNames, model.StateFailed)
	stApproval  = code(stateNames, model.StateWaitingApproval)
	stTerm      = code(stateNames, model.StateTerminated)
	stBlocked   = code(stateNames, model.StateBlocked)
	stSkipped   = code(stateNames, model.StateSkipped)
	stCanceled  = code(stateNames, model.StateCanceled)
)

// holdsSlot reports whether an instance in this state counts against its
// task's maxConcurrency.
func holdsSlot(r *record) bool {
	if r.Parent != 0 {
		return false // a shard: its instance holds the slot
	}
	switch r.State {
	case stReady, stRunning, stRetrying:
		return true
	case stApproval:
		return r.Flags&flagMidRunApproval != 0
	case stBlocked:
		return r.Flags&flagWaitingRate != 0 // waiting for its turn under a rate limit
	}
	return false
}

func isActive(st uint8) bool {
	switch st {
	case stReady, stRunning, stRetrying, stBlocked, stApproval:
		return true
	}
	return false
}

func attemptKey(id uint64, attempt int) []byte {
	return binary.BigEndian.AppendUint32(u64key(id), uint32(attempt))
}

func blockedKey(task string, scheduledAt int64, id uint64) []byte {
	k := make([]byte, 0, len(task)+17)
	k = append(k, task...)
	k = append(k, 0)
	k = binary.BigEndian.AppendUint64(k, uint64(scheduledAt))
	return binary.BigEndian.AppendUint64(k, id)
}

// setState moves r to state st, keeping the active, due and finished
// indexes and the observer notes in step, and stores r. A terminal state
// is entered with r.FinishedAt already set.
func (w instanceWrites) setState(r *record, st uint8) {
	was := r.State
	r.State = st
	if w.slots().dropsMidRunFlag(was, st) {
		r.Flags &^= flagMidRunApproval
	}
	if was == stScheduled || was == stRetrying {
		w.del(bktDue, dueKey(dueOf(r, was), r.ID))
	}
	if isActive(st) {
		w.put(bktActive, u64key(r.ID), []byte{st})
		if !isActive(was) {
			w.es.active++
		}
	} else if isActive(was) {
		w.del(bktActive, u64key(r.ID))
		w.es.active--
	}
	if isTerminal(st) && !isTerminal(was) && r.Parent == 0 {
		// A shard is not in the finished index (it goes with its
		// instance) nor counted as an instance.
		w.put(bktFinished, finishedKey(r.Task, r.FinishedAt, r.ID), nil)
		w.stats().finished(r, st)
	}
	if st == stRetrying {
		w.put(bktDue, dueKey(r.RetryAt, r.ID), u64key(uint64(r.RetryAt)))
		w.notes.ids = append(w.notes.ids, r.ID)
		w.notes.dues = append(w.notes.dues, r.RetryAt)
	}
	w.putRecord(r)
	ch := InstanceChange{ID: r.ID, Task: r.Task, State: name(stateNames, st),
		Attempt: int(r.Attempts), LeaseUntil: r.LeaseUntil, Executor: r.Executor,
		From: name(stateNames, was), Source: name(sourceNames, r.Source),
		ScheduledAt: r.ScheduledAt, FiredAt: r.FiredAt, AttemptStart: r.AttemptStart, At: w.cmd.Now, Jitter: r.Jitter,
		Parent: r.Parent, Shards: int(r.Shards), Pin: r.Pin, Canary: r.Canary, RetryAt: r.RetryAt, Link: r.Link, Rerun: r.Flags&flagRerun != 0}
	if w.ended != nil && w.ended.id == r.ID {
		ch.Ended, w.ended = &w.ended.a, nil
		ch.Confirmed = r.Flags&flagConfirmed != 0
	}
	w.notes.changes = append(w.notes.changes, ch)
}

// endedAttempt is an attempt that ended in this command, for the note of
// the transition it causes.
type endedAttempt struct {
	id uint64
	a  model.Attempt
}

func dueOf(r *record, st uint8) int64 {
	if st == stRetrying {
		return r.RetryAt
	}
	return r.ScheduledAt
}

// InstanceChange is an observer note: an instance entered a state.
type InstanceChange struct {
	ID         uint64
	Task       string
	State      string
	Attempt    int
	LeaseUntil int64
	Executor   string
	// Renewed marks a heartbeat's lease renewal: the state is unchanged.
	Renewed bool
	// From is the state the instance left ("" for an instance created
	// by this change; State itself on a renewal). Source is what created
	// the instance (model.Source*).
	From, Source string
	// The record's times (Unix ms, 0 when not reached): its fire time,
	// when it fired and when its current attempt started. At is when the
	// change was committed (the leader's stamp on the command): the fire
	// time of a firing, the start of a starting attempt, the end of an
	// ending one. Metrics derive latencies from them, on any node.
	ScheduledAt, FiredAt, AttemptStart, At int64
	// Jitter is how much after ScheduledAt a task fire was due (ms,
	// trigger.jitter): fire lateness is measured from ScheduledAt+Jitter.
	Jitter int64
	// Ended is the attempt whose end caused this transition, if one did.
	Ended *model.Attempt
	// Reason names why, for a transition the state machine decided on
	// its own: "queue_full" for an instance skipped by maxQueued,
	// ReasonRateLimited for one a rate limit made wait or skipped.
	Reason string
	// Parent is, for a shard, its sharded instance (shards.go); Pin the
	// executor a broadcast shard runs on. Shards is a sharded
	// instance's count of shards once it fanned out (0 before).
	Parent uint64
	Shards int
	Pin    string
	// Canary: the instance runs its task's canary (fsm/rollout.go): the
	// dispatcher routes it by CanaryTask.
	Canary bool
	// RetryAt is the record's retry time (when a RETRYING instance is
	// READY again). Confirmed marks the renewal by which the current
	// attempt's executor first confirmed it, and on a change that ended
	// an attempt (Ended) that its executor had confirmed it. Link is the
	// caller's trace context the instance was created with (tracing; nil
	// if none). Rerun marks an instance that runs again after a re-run
	// (rerun.go), from the re-run on.
	RetryAt   int64
	Confirmed bool
	Link      []byte
	Rerun     bool
}

// finish moves r to a terminal state, freeing its slot.
func (w instanceWrites) finish(r *record, st uint8) {
	held := holdsSlot(r)
	if r.State == stBlocked && r.Flags&(flagWaitingDeps|flagWaitingPool|flagWaitingRate) == 0 {
		w.del(bktBlocked, blockedKey(r.Task, r.ScheduledAt, r.ID))
		st := w.loadState(r.Task)
		if st.Blocked > 0 {
			st.Blocked--
		}
		w.saveState(r.Task, st)
	}
	if r.State == stScheduled {
		w.pending(-1)
	}
	heldPool, waitingPool := r.Pool, r.Flags&flagWaitingPool != 0
	r.Flags &^= flagWaitingPool // poolLeave, below, frees what they say
	w.slots().rateLeave(r)
	r.Pool = ""
	r.FinishedAt = w.cmd.Now
	r.LeaseUntil = 0
	w.setState(r, st)
	if held {
		w.slots().release(r.Task)
	}
	// Then the pool slot it holds (or its place in the pool's wait): an
	// instance its task's slot let through waits for the pool first, so
	// the pool's oldest waiter gets the slot.
	w.slots().poolLeave(r, heldPool, waitingPool)
	if r.Parent != 0 {
		// A shard: its instance counts it, and alerts, chains and
		// records dependencies when it ends itself.
		w.shardEnded(r, st)
		return
	}
	if r.FirstShard != 0 {
		w.endShards(r, st)
	}
	if st == stSuccess && r.Date != "" {
		w.deps().succeeded(r)
	}
	if st == stSuccess {
		w.deps().chain(r)
	}
	if st == stFailed || st == stTerm {
		w.deps().upstreamFailed(r)
	}
	if r.Canary {
		w.tasks().canaryFinished(r, st)
	}
	if st == stFailed {
		// A failure the task wants to be told about (notify webhooks,
		// onFailure tasks) waits in the alerts index until the leader
		// records that it handled it, so a leader change loses none. From
		// protocol 4 every failure does: it raises the task's
		// instance_failed alert, which channels matching the task's labels
		// receive whatever its policy.notify says.
		if t, ok := w.tasks().definition(r.Task); ok && (w.protoAt() >= protoPolicies || len(t.Policy.Notify) > 0 || len(t.Policy.OnFailure) > 0) {
			w.put(bktAlerts, u64key(r.ID), present)
		}
	}
}

func (w attemptWrites) lease(l *command.Lease) *Result {
	var out LeaseResult
	for _, id := range l.IDs {
		r, ok := w.instances().loadRecord(id)
		if w.err != nil {
			return nil
		}
		if !ok || r.State != stReady || r.FirstShard != 0 || r.Pin != "" && r.Pin != l.Executor {
			continue // a fanned-out instance runs as its shards, a broadcast shard on its executor
		}
		r.Attempts++
		r.Flags &^= flagConfirmed
		if r.StartedAt == 0 {
			r.StartedAt = w.cmd.Now
		}
		r.Executor, r.LeaseUntil = l.Executor, w.cmd.Now+l.LeaseMs
		r.AttemptStart, r.Host = w.cmd.Now, l.Host
		w.instances().setState(r, stRunning)
		out.IDs = append(out.IDs, id)
		out.Attempts = append(out.Attempts, int(r.Attempts))
	}
	return okResult(out)
}

// currentAttempt is the running attempt of r as far as it is known
// before it ends (its record is written when it ends).
func currentAttempt(r *record) model.Attempt {
	return model.Attempt{Number: int(r.Attempts), ExecutionID: model.FormatID(r.ID) + "-" + strconv.Itoa(int(r.Attempts)),
		Executor: r.Executor, Host: r.Host, StartedAt: model.UnixMilli(r.AttemptStart)}
}

func (w attemptWrites) saveAttempt(id uint64, a model.Attempt) {
	w.put(bktAttempts, attemptKey(id, a.Number), encodeAttempt(&a))
}

// heartbeatCheck is heartbeat's check: a heartbeat none of whose
// attempts may renew its lease is answered with why each must stop.
func (w attemptWrites) heartbeatCheck(h *command.Heartbeat) (none, *Result) {
	var out HeartbeatResult
	for _, it := range h.Items {
		r, ok := w.instances().loadRecord(it.ID)
		if w.err != nil {
			return none{}, nil
		}
		reason := heartbeatStop(r, ok, it, h.Executor)
		if reason == "" {
			return none{}, nil // at least one lease is renewed
		}
		out.Stop = append(out.Stop, model.StopAttempt{InstanceID: model.FormatID(it.ID), Attempt: it.Attempt, Reason: reason})
	}
	return none{}, okResult(out)
}

func (w attemptWrites) heartbeat(h *command.Heartbeat) *Result {
	var out HeartbeatResult
	for _, it := range h.Items {
		r, ok := w.instances().loadRecord(it.ID)
		if w.err != nil {
			return nil
		}
		if reason := heartbeatStop(r, ok, it, h.Executor); reason != "" {
			out.Stop = append(out.Stop, model.StopAttempt{InstanceID: model.FormatID(it.ID), Attempt: it.Attempt, Reason: reason})
			continue
		}
		r.LeaseUntil = w.cmd.Now + h.LeaseMs
		confirmed := r.Flags&flagConfirmed != 0
		if w.protoAt() >= protoLeases && !it.Unstarted {
			// The executor runs the attempt: a lapse of its lease is a
			// lost attempt from now on.
			r.Flags |= flagConfirmed
		}
		w.instances().putRecord(r)
		w.notes.changes = append(w.notes.changes, InstanceChange{ID: r.ID, Task: r.Task, State: name(stateNames, r.State),
			Attempt: int(r.Attempts), LeaseUntil: r.LeaseUntil, Executor: r.Executor, Renewed: true,
			From: name(stateNames, r.State), Source: name(sourceNames, r.Source),
			ScheduledAt: r.ScheduledAt, FiredAt: r.FiredAt, AttemptStart: r.AttemptStart, At: w.cmd.Now, Parent: r.Parent,
			Confirmed: !confirmed && r.Flags&flagConfirmed != 0, Rerun: r.Flags&flagRerun != 0})
	}
	return okResult(out)
}

// heartbeatStop returns why the executor must stop the attempt it ran
// its heartbeat for ("" to renew its lease): the instance (r, found by
// ok) is unknown, runs a newer attempt or elsewhere, or no longer runs.
func heartbeatStop(r *record, ok bool, it command.AttemptRef, executor string) string {
	switch {
	case !ok:
		return "unknown instance"
	case int(r.Attempts) != it.Attempt || r.Executor != executor:
		return fmt.Sprintf("fenced: the current attempt is %d on %s", r.Attempts, r.Executor)
	case r.State == stRunning || (r.State == stApproval && r.Flags&flagMidRunApproval != 0):
		return ""
	}
	return "instance is " + name(stateNames, r.State)
}

// backoff returns the wait before retry number n (n >= 1).
func backoff(p *model.Policy, n int) time.Duration {
	d := p.RetryInterval.Std()
	if d <= 0 {
		d = time.Second
	}
	if p.Backoff == "exponential" {
		for i := 1; i < n && d < 24*time.Hour; i++ {
			d *= 2
		}
		if m := p.MaxRetryInterval.Std(); m > 0 && d > m {
			d = m
		}
	}
	return d
}

// endAttempt records an attempt's end and applies the retry policy.
func (w attemptWrites) endAttempt(r *record, rep model.CompleteRequest, outcome string) {
	a := currentAttempt(r)
	a.EndedAt, a.Outcome, a.Error, a.HTTPStatus = model.UnixMilli(w.cmd.Now), outcome, rep.Error, rep.HTTPStatus
	if rep.Host != "" {
		a.Host = rep.Host
	}
	if rep.PID != 0 {
		a.PID = rep.PID
	}
	if outcome != model.OutcomeLost {
		ec := rep.ExitCode
		a.ExitCode = &ec
	}
	out := rep.Output
	if len(out) > 1024 {
		out = out[len(out)-1024:]
	}
	a.Output = out
	w.saveAttempt(r.ID, a)
	w.ended = &endedAttempt{id: r.ID, a: a}
	w.ended.a.Output = ""
	if rep.Output != "" {
		w.put(bktLogs, attemptKey(r.ID, a.Number), []byte(rep.Output))
	}
	r.LeaseUntil = 0
	r.ExitCode = int64(rep.ExitCode)
	if rep.HTTPStatus != 0 {
		r.ExitCode = int64(rep.HTTPStatus)
	}
	if outcome == model.OutcomeInterrupted {
		w.interrupted(r, rep.Error)
		return
	}
	if rep.Success {
		r.LastError = ""
		w.keepResult(r, a.Number, rep.Result)
		w.instances().finish(r, stSuccess)
		return
	}
	r.LastError = rep.Error
	t, ok := w.tasks().definition(r.Task)
	charged := int(r.Attempts - r.Free - r.Base) // attempts that count against maxRetries
	if ok && rep.Retryable && charged <= t.Policy.MaxRetries {
		d := backoff(&t.Policy, charged)
		r.RetryAt = w.cmd.Now + d.Milliseconds()
		w.instances().setState(r, stRetrying)
		w.instances().event(r.ID, "retrying", fmt.Sprintf("attempt %d %s (%s); retry %d of %d in %s", a.Number, outcome, rep.Error, charged, t.Policy.MaxRetries, d))
		return
	}
	why := "not retryable"
	if rep.Retryable {
		why = fmt.Sprintf("no retries left (maxRetries %d)", 0)
		if ok {
			why = fmt.Sprintf("no retries left (maxRetries %d)", t.Policy.MaxRetries)
		}
	}
	w.instances().finish(r, stFailed)
	w.instances().event(r.ID, "failed", fmt.Sprintf("attempt %d %s: %s; %s", a.Number, outcome, rep.Error, why))
}

// report is what a report of an attempt's end finds: the instance, and
// whether the report only brings the output of an attempt an operator
// stopped (late, from protocol 6: see lateOutput).
type report struct {
	r    *record
	late *model.Attempt
}

// findReport returns what the report c finds, or why it is refused.
func (w attemptWrites) findReport(c *command.Complete) (report, *model.Error) {
	r, ok := w.instances().loadRecord(c.ID)
	if w.err != nil {
		return report{}, nil
	}
	if e := completeRefusal(r, ok, c); e != nil {
		if a, late := lateOutput(w.tx, r, ok, c); late && w.protoAt() >= protoSlots {
			return report{r: r, late: &a}, nil
		}
		return report{}, e
	}
	return report{r: r}, nil
}

// completeCheck is complete's check: the report's refusal.
func (w attemptWrites) completeCheck(c *command.Complete) (report, *Result) {
	rp, e := w.findReport(c)
	if e != nil {
		return rp, errResult(e)
	}
	return rp, nil
}

func (w attemptWrites) complete(c *command.Complete, rp report) *Result {
	state := w.endReported(c, rp)
	if w.err != nil {
		return nil
	}
	return okResult(struct {
		State string `json:"state"`
	}{state})
}

// completeBatchCheck is complete_batch's check: a batch every report of
// which is refused is answered with the refusals.
func (w attemptWrites) completeBatchCheck(cs []command.Complete) (none, *Result) {
	var out []model.CompleteOutcome
	for i := range cs {
		_, e := w.findReport(&cs[i])
		if e == nil || w.err != nil {
			return none{}, nil // at least one report applies
		}
		if out == nil {
			out = make([]model.CompleteOutcome, 0, len(cs))
		}
		out = append(out, completeOutcome(&cs[i], "", e))
	}
	return none{}, okResult(out)
}

// completeBatch applies several attempt reports; each gets its own
// outcome, so one fenced report does not refuse the others.
func (w attemptWrites) completeBatch(cs []command.Complete) *Result {
	out := make([]model.CompleteOutcome, len(cs))
	for i := range cs {
		rp, e := w.findReport(&cs[i])
		state := ""
		if e == nil && w.err == nil {
			state = w.endReported(&cs[i], rp)
		}
		if w.err != nil {
			return nil
		}
		out[i] = completeOutcome(&cs[i], state, e)
	}
	return okResult(out)
}

// endReported ends the attempt c reports (found by findReport), or
// attaches its late output, and returns the instance's state.
func (w attemptWrites) endReported(c *command.Complete, rp report) string {
	r := rp.r
	if rp.late != nil {
		w.attachOutput(r.ID, *rp.late, &c.Report)
		return name(stateNames, r.State)
	}
	outcome := model.OutcomeFailed
	switch {
	case c.Report.Success:
		outcome = model.OutcomeSuccess
	case c.Report.Interrupted && w.protoAt() >= protoLeases:
		outcome = model.OutcomeInterrupted
	case c.Report.TimedOut:
		outcome = model.OutcomeTimeout
	case c.Report.Canceled:
		outcome = model.OutcomeCanceled
	}
	if w.protoAt() < protoSlots {
		// Before protocol 6 the flag went first, and the slot of an
		// attempt that ended while it waited for approval stayed busy.
		r.Flags &^= flagMidRunApproval
	}
	w.endAttempt(r, c.Report, outcome)
	return name(stateNames, r.State)
}

// completeRefusal returns why the report c cannot end an attempt of the
// instance r (found by ok), nil if it can. Fencing: a report from an older
// attempt (or after a terminate or a lost lease) must not change the
// instance.
func completeRefusal(r *record, ok bool, c *command.Complete) *model.Error {
	if !ok {
		return instanceNotFound(c.ID)
	}
	running := r.State == stRunning || (r.State == stApproval && r.Flags&flagMidRunApproval != 0)
	if !running || int(r.Attempts) != c.Attempt || r.Executor != c.Report.Executor {
		return &model.Error{Code: model.CodeConflict, Field: "attempt",
			Message: fmt.Sprintf("attempt %d of %s is not current (instance is %s, attempt %d on %s)", c.Attempt, model.FormatID(c.ID), name(stateNames, r.State), r.Attempts, r.Executor)}
	}
	return nil
}

// completeOutcome is one report's answer in a complete_batch result.
func completeOutcome(c *command.Complete, state string, e *model.Error) model.CompleteOutcome {
	o := model.CompleteOutcome{ExecutionID: model.FormatID(c.ID) + "-" + strconv.Itoa(c.Attempt), State: state}
	if e != nil {
		o.Code, o.Error = e.Code, e.Message
	}
	return o
}

func (w attemptWrites) expire(e *command.Expire) *Result {
	n := 0
	for _, it := range e.Items {
		r, ok := w.instances().loadRecord(it.ID)
		if w.err != nil {
			return nil
		}
		// From protocol 6 an attempt waiting for a mid-run approval whose
		// executor went silent ends too (its script is gone, nothing would
		// ever report it); before, it waited for an operator's decision.
		midRun := r.State == stApproval && r.Flags&flagMidRunApproval != 0 && w.protoAt() >= protoLeases
		if !ok || r.State != stRunning && !midRun || int(r.Attempts) != it.Attempt || r.LeaseUntil > w.cmd.Now {
			continue // renewed, finished or already handled
		}
		rep := model.CompleteRequest{Executor: r.Executor, Retryable: true,
			Error: fmt.Sprintf("lost: executor %s stopped renewing its lease", r.Executor)}
		outcome := model.OutcomeLost
		if w.protoAt() >= protoLeases {
			if why, charged := lapse(r, it); charged {
				rep.Error = why
			} else {
				rep.Error, outcome = why, model.OutcomeInterrupted
			}
		}
		w.endAttempt(r, rep, outcome)
		n++
	}
	return okResult(struct {
		Expired int `json:"expired"`
	}{n})
}

// lapse says why the lapsed lease of r (item it) ends its attempt, and
// whether it is charged (lost) or not (interrupted): charged when the
// attempt surely started, see Expire.
func lapse(r *record, it command.ExpireItem) (why string, charged bool) {
	confirmed := r.Flags&flagConfirmed != 0
	switch {
	case confirmed && !it.Interrupted:
		return fmt.Sprintf("lost: executor %s stopped renewing its lease", r.Executor), true
	case confirmed:
		return fmt.Sprintf("its lease lapsed across a leader change (executor %s did not renew it with the new leader)", r.Executor), false
	case it.Restarted:
		return fmt.Sprintf("lost: executor %s restarted without confirming the attempt (the attempt may have crashed it)", r.Executor), true
	}
	return fmt.Sprintf("its lease lapsed before executor %s confirmed it (no heartbeat for it arrived), so it may never have started", r.Executor), false
}

// interrupted puts r, whose attempt ended interrupted (why), back to
// READY without using a retry: it keeps its concurrency slot, and the
// next lease is a new attempt. An instance whose task is gone is
// canceled instead.
func (w attemptWrites) interrupted(r *record, why string) {
	r.Free++
	r.LastError = why
	if _, ok := w.tasks().definition(r.Task); !ok {
		w.instances().finish(r, stCanceled)
		w.instances().event(r.ID, "canceled", fmt.Sprintf("attempt %d interrupted (%s); the task no longer exists", r.Attempts, why))
		return
	}
	w.instances().setState(r, stReady)
	w.instances().event(r.ID, "requeued", fmt.Sprintf("attempt %d interrupted; it runs again, not counted against maxRetries", r.Attempts))
}

// decideCheck is decide's check: the decision's refusal, or the
// instance it applies to.
func (w attemptWrites) decideCheck(d *command.Decide) (*record, *Result) {
	r, ok := w.instances().loadRecord(d.ID)
	if w.err != nil {
		return nil, nil
	}
	if e := decideRefusal(r, ok, d); e != nil {
		return nil, errResult(e)
	}
	return r, nil
}

func (w attemptWrites) decide(d *command.Decide, r *record) *Result {
	msg := d.Comment
	midRun := r.Flags&flagMidRunApproval != 0
	switch d.Action {
	case command.DecideApprove:
		w.instances().event(r.ID, "approved", msg)
		if midRun {
			r.Flags &^= flagMidRunApproval
			w.instances().setState(r, stRunning)
		} else {
			r.Flags |= flagApproved
			w.slots().admit(r)
		}
	case command.DecideReject, command.DecideCancel:
		verb := map[string]string{command.DecideReject: "rejected", command.DecideCancel: "canceled"}[d.Action]
		if midRun && w.protoAt() >= protoSlots {
			w.stopAttempt(r, model.OutcomeCanceled, verb+" by "+w.cmd.Actor)
		}
		w.instances().event(r.ID, verb, msg)
		w.instances().finish(r, stCanceled)
	case command.DecideTerminate:
		w.stopAttempt(r, model.OutcomeTerminated, "terminated by "+w.cmd.Actor)
		w.instances().event(r.ID, "terminated", msg)
		w.instances().finish(r, stTerm)
	case command.DecideRequestApproval:
		r.Flags |= flagMidRunApproval
		w.instances().setState(r, stApproval)
		w.instances().event(r.ID, "approval_requested", msg)
	}
	return okResult(struct {
		State string `json:"state"`
	}{name(stateNames, r.State)})
}

// decideRefusal returns why the decision d cannot apply to the instance r
// (found by ok), nil if it can.
func decideRefusal(r *record, ok bool, d *command.Decide) *model.Error {
	if !ok {
		return instanceNotFound(d.ID)
	}
	bad := func(want string) *model.Error {
		return &model.Error{Code: model.CodePrecondition, Field: "state",
			Message: fmt.Sprintf("cannot %s an instance that is %s (%s)", d.Action, name(stateNames, r.State), want)}
	}
	midRun := r.Flags&flagMidRunApproval != 0
	switch d.Action {
	case command.DecideApprove:
		if r.State != stApproval {
			return bad("only WAITING_APPROVAL can be approved")
		}
	case command.DecideReject:
		if r.State != stApproval {
			return bad("only WAITING_APPROVAL can be rejected")
		}
	case command.DecideCancel:
		switch r.State {
		case stScheduled, stReady, stBlocked, stApproval, stRetrying:
		default:
			return bad("cancel applies to SCHEDULED, READY, BLOCKED, WAITING_APPROVAL and RETRYING; use terminate for RUNNING")
		}
	case command.DecideTerminate:
		if r.State != stRunning && !(r.State == stApproval && midRun) {
			return bad("only RUNNING can be terminated")
		}
	case command.DecideRequestApproval:
		if r.State != stRunning || int(r.Attempts) != d.Attempt {
			return bad("approval can be requested by the running attempt only")
		}
	default:
		return model.FieldErrorf("action", "unknown decision %q", d.Action)
	}
	return nil
}
