package fsm

import (
	"bytes"
	"encoding/binary"
	"encoding/json"

	bolt "go.etcd.io/bbolt"

	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/model/live"
)

// Reads for the console: task summaries, a task's instances in brief and
// the facts behind an unfinished instance's "why".

// maxSummaryScan bounds the instances one task's summary reads, so a task
// with a large backlog of SCHEDULED instances (which are not runs) does
// not make a summary page slow.
const maxSummaryScan = 2_000

// Brief is an instance reduced to what summaries, calendars and counts
// use, read without decoding the whole record.
type Brief struct {
	ID          uint64
	State       string
	Source      string
	ScheduledAt int64
	FinishedAt  int64
}

// peekBrief reads a Brief from a stored record: the state and source
// bytes and the times that precede the record's strings.
func peekBrief(id uint64, v []byte) (Brief, bool) {
	if len(v) < 3 || v[0] != recordVersion {
		return Brief{}, false
	}
	b := Brief{ID: id, State: name(stateNames, v[1]), Source: name(sourceNames, v[2])}
	_, n := binary.Uvarint(v[3:])
	if n <= 0 {
		return Brief{}, false
	}
	rest := v[3+n:]
	var times [5]int64 // created, scheduled, fired, started, finished
	for i := range times {
		t, n := binary.Varint(rest)
		if n <= 0 {
			return Brief{}, false
		}
		times[i], rest = t, rest[n:]
	}
	b.ScheduledAt, b.FinishedAt = times[1], times[4]
	return b, true
}

func (b *Brief) toRun() live.RunBrief {
	return live.RunBrief{ID: model.FormatID(b.ID), State: b.State, Source: b.Source,
		ScheduledAt: model.UnixMilli(b.ScheduledAt), FinishedAt: model.UnixMilli(b.FinishedAt)}
}

// TaskSummaries lists tasks as ListTasks does, each with up to runs of
// its newest instances that fired (SCHEDULED ones are not runs), newest
// first, reading at most maxSummaryScan instances a task. NextFire is
// left to the caller, who has a clock.
func (q consoleReads) TaskSummaries(filter model.TaskFilter, runs int) (*live.TaskSummaryList, error) {
	out := &live.TaskSummaryList{Tasks: []live.SummarizedTask{}}
	err := q.f.view(func(tx *bolt.Tx) error {
		l, err := listTasks(tx, filter)
		if err != nil {
			return err
		}
		out.NextCursor = l.NextCursor
		insts := tx.Bucket(bktInstances)
		for _, t := range l.Tasks {
			st := live.SummarizedTask{Task: t, Summary: live.TaskSummary{RecentRuns: recentRuns(tx, insts, t.Name, runs)}}
			if len(st.Summary.RecentRuns) > 0 {
				last := st.Summary.RecentRuns[0]
				st.Summary.LastRun = &last
			}
			out.Tasks = append(out.Tasks, st)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// recentRuns returns up to runs of task's newest instances that are not
// SCHEDULED, newest first (maxSummaryScan instances looked at at most).
func recentRuns(tx *bolt.Tx, insts *bolt.Bucket, task string, runs int) []live.RunBrief {
	out := []live.RunBrief{}
	next := taskNewestFirst(tx, task, ^uint64(0))
	for scanned := 0; scanned < maxSummaryScan && len(out) < runs; scanned++ {
		id, ok := next()
		if !ok {
			break
		}
		b, ok := peekBrief(id, insts.Get(u64key(id)))
		if ok && b.State != model.StateScheduled {
			out = append(out, b.toRun())
		}
	}
	return out
}

// TaskLink is what the dependency graph reads of a task definition.
type TaskLink struct {
	Name    string `json:"name"`
	Paused  bool   `json:"paused"`
	Deleted bool   `json:"deleted"`
	Policy  struct {
		DependsOn []string      `json:"dependsOn"`
		OnSuccess []model.Chain `json:"onSuccess"`
		OnFailure []string      `json:"onFailure"`
	} `json:"policy"`
}

// TaskLinks returns every task's links (dependsOn, onSuccess, onFailure)
// and whether it is paused, decoding only those fields of each definition
// (a full decode and summary of 1,000 tasks took the graph 115 ms).
func (q consoleReads) TaskLinks() ([]TaskLink, error) {
	var out []TaskLink
	err := q.f.view(func(tx *bolt.Tx) error {
		return tx.Bucket(bktTasks).ForEach(func(_, v []byte) error {
			var l TaskLink
			if err := json.Unmarshal(v, &l); err != nil {
				return err
			}
			if !l.Deleted {
				out = append(out, l)
			}
			return nil
		})
	})
	return out, err
}

// LastRuns returns the newest run (an instance not SCHEDULED) of each
// named task that has one.
func (q consoleReads) LastRuns(names []string) (map[string]live.RunBrief, error) {
	out := map[string]live.RunBrief{}
	err := q.f.view(func(tx *bolt.Tx) error {
		insts := tx.Bucket(bktInstances)
		for _, n := range names {
			if r := recentRuns(tx, insts, n, 1); len(r) > 0 {
				out[n] = r[0]
			}
		}
		return nil
	})
	return out, err
}

// ScanTask calls fn for every instance of an existing task, oldest first,
// in brief.
func (q consoleReads) ScanTask(task string, fn func(b Brief)) error {
	return q.f.view(func(tx *bolt.Tx) error {
		if tx.Bucket(bktTasks).Get([]byte(task)) == nil {
			return taskNotFound(task)
		}
		prefix := append([]byte(task), 0)
		ic := tx.Bucket(bktInstances).Cursor()
		tc := tx.Bucket(bktTaskInst).Cursor()
		for k, v := tc.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = tc.Next() {
			first, last := binary.BigEndian.Uint64(k[len(prefix):]), binary.BigEndian.Uint64(v)
			// A range is consecutive ids: read it with the cursor.
			for ik, iv := ic.Seek(u64key(first)); ik != nil && binary.BigEndian.Uint64(ik) <= last; ik, iv = ic.Next() {
				if b, ok := peekBrief(binary.BigEndian.Uint64(ik), iv); ok {
					fn(b)
				}
			}
		}
		return nil
	})
}

// WhyFacts is what the state machine knows about why an unfinished
// instance waits; the agent words it, adding what only the leader knows
// (its executors) and the time.
type WhyFacts struct {
	State       string
	ScheduledAt int64
	Jitter      int64 // a task fire's jitter (ms)
	// Moved and Held: how calendars and windows moved the fire
	// (CalendarNote).
	Moved        int64
	Held         string
	RetryAt      int64
	LeaseUntil   int64
	AttemptStart int64
	Attempts     int
	// Free counts the attempts that ended interrupted (not charged to
	// maxRetries).
	Free     int
	Executor string
	Host     string
	// TaskGone: the task was deleted (nothing below it is known).
	TaskGone   bool
	MaxRetries int
	Labels     map[string]string
	ActionType string
	Handler    string
	// BLOCKED: the dependsOn tasks it still waits for (from the
	// waiting_deps index) and the scheduled date, or the task's slots.
	WaitingFor []string
	Date       string
	Inflight   int
	Limit      int
	// WAITING_APPROVAL: MidRun says a running attempt asked; Approval is
	// the latest approval_requested (mid-run) or waiting_approval event.
	MidRun   bool
	Approval *model.Event
	// LastAttempt is the latest ended attempt, if any.
	LastAttempt *model.Attempt
	// Base counts the attempts before the latest re-run (not charged to
	// maxRetries); Rerun is that re-run's event (nil if never re-run).
	Base  int
	Rerun *model.Event
	// Deadline is the task's policy.deadline (nil: none), Timezone its
	// trigger's time zone ("" for UTC).
	Deadline *model.Deadline
	Timezone string
	// Pool is the pool a BLOCKED instance waits for a slot of, with its
	// counts (nil: it does not).
	Pool *model.Pool
	// Shards counts a fanned-out sharded instance's shards by state;
	// Shard is a shard's place (and a broadcast shard's executor).
	Shards *model.ShardSummary
	Shard  *model.ShardRef
	// Rate is the rate limit a BLOCKED instance waits for its turn under
	// (nil: it does not).
	Rate *RateWait
}

// InstanceWhy returns the facts behind an instance's state.
func (q consoleReads) InstanceWhy(id uint64) (*WhyFacts, error) {
	var out *WhyFacts
	err := q.f.view(func(tx *bolt.Tx) error {
		r, err := readRecord(tx, id)
		if err != nil {
			return err
		}
		wf := &WhyFacts{State: name(stateNames, r.State), ScheduledAt: r.ScheduledAt, Jitter: r.Jitter, Moved: r.Moved, Held: r.Held, RetryAt: r.RetryAt,
			LeaseUntil: r.LeaseUntil, AttemptStart: r.AttemptStart, Attempts: int(r.Attempts), Free: int(r.Free), Executor: r.Executor,
			Host: r.Host, Date: r.Date, MidRun: r.Flags&flagMidRunApproval != 0, Base: int(r.Base)}
		out = wf
		wf.Pool, _ = q.f.waitingPool(tx, r)
		if r.FirstShard != 0 {
			wf.Shards = shardSummary(tx, r)
		}
		wf.Shard = r.toModel().Shard
		wf.Rate = q.f.rateWaiting(tx, r)
		w := &writer{tx: tx}
		t, ok := w.tasks().loadTask(r.Task)
		if w.err != nil {
			return w.err
		}
		if !ok {
			wf.TaskGone = true
		} else {
			p := &t.Policy
			wf.MaxRetries, wf.Labels, wf.ActionType, wf.Handler = p.MaxRetries, p.ExecutorLabels, t.Action.Type, t.Action.Handler
			if c, ok, err := canaryDefinition(tx, r); err != nil {
				return err
			} else if ok { // a canary waits for what its route needs (rollout.go)
				wf.Labels, wf.ActionType, wf.Handler = c.Policy.ExecutorLabels, c.Action.Type, c.Action.Handler
			}
			wf.Deadline, wf.Timezone = p.Deadline, t.Trigger.Timezone
			wf.Inflight, wf.Limit = int(w.loadState(r.Task).Inflight), max(p.MaxConcurrency, 1)
			if r.Flags&flagWaitingDeps != 0 {
				for _, dep := range p.DependsOn {
					k := binary.BigEndian.AppendUint64(append(depKey(dep, r.Date), 0), id)
					if tx.Bucket(bktWaitDeps).Get(k) != nil {
						wf.WaitingFor = append(wf.WaitingFor, dep)
					}
				}
			}
		}
		ac := tx.Bucket(bktAttempts).Cursor()
		prefix := u64key(id)
		var v []byte
		k, _ := ac.Seek(append(u64key(id), 0xff, 0xff, 0xff, 0xff))
		if k == nil {
			k, v = ac.Last()
		} else {
			k, v = ac.Prev()
		}
		wf.LastAttempt = lastAttempt(id, prefix, k, v)
		if r.State == stApproval || r.Flags&flagRerun != 0 {
			c := tx.Bucket(bktInstEvents).Cursor()
			for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
				var e model.Event
				switch {
				case json.Unmarshal(v, &e) != nil:
				case r.State == stApproval && (e.Type == "approval_requested" || e.Type == "waiting_approval"):
					wf.Approval = &e
				case e.Type == "rerun":
					wf.Rerun = &e
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// lastAttempt decodes the attempt at (k, v) if it is one of the instance
// (its key starts with prefix).
func lastAttempt(id uint64, prefix, k, v []byte) *model.Attempt {
	if k == nil || !bytes.HasPrefix(k, prefix) {
		return nil
	}
	a, err := decodeAttempt(id, v)
	if err != nil {
		return nil
	}
	return &a
}
