package live

import (
	"strconv"
	"strings"
	"time"

	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/trigger"
)

// Event types of GET /v1/events (the SSE "event:" field).
const (
	TypeInstance = "instance"
	TypeTask     = "task"
	// TypeResync tells a subscriber that events were dropped because
	// it fell behind: it reloads what it shows.
	TypeResync = "resync"
)

// Event is one change a node applied, as GET /v1/events streams it.
// Exactly one of Instance and Task is set, as Type says.
type Event struct {
	Type     string
	Instance *Instance
	Task     *Task
}

// Index is the applied Raft index the event carries.
func (e *Event) Index() uint64 {
	switch {
	case e.Instance != nil:
		return e.Instance.Index
	case e.Task != nil:
		return e.Task.Index
	}
	return 0
}

// Instance is an "instance" event: the instance entered a state
// (READY onward; a lease renewal is not an event).
type Instance struct {
	ID       string `json:"id"`
	Task     string `json:"task"`
	State    string `json:"state"`
	Attempt  int    `json:"attempt"`
	Executor string `json:"executor"`
	Index    uint64 `json:"index"`
}

// Task is a "task" event: the task was created, updated, paused,
// resumed or deleted.
type Task struct {
	Name  string `json:"name"`
	Index uint64 `json:"index"`
}

// Filter selects the events of a subscription; empty fields match
// everything. With Instance set, only that instance's events pass (no task
// events).
type Filter struct {
	Task     string
	Instance string
}

// Match reports whether e passes the filter.
func (f Filter) Match(e *Event) bool {
	switch {
	case e.Instance != nil:
		return (f.Task == "" || f.Task == e.Instance.Task) && (f.Instance == "" || f.Instance == e.Instance.ID)
	case e.Task != nil:
		return f.Instance == "" && (f.Task == "" || f.Task == e.Task.Name)
	}
	return false
}

// Whoami answers GET /v1/acl/whoami: the principal a request acts as.
type Whoami struct {
	Name string `json:"name"`
	Role string `json:"role"`
	// ACL is true when the node asks for credentials (ACLs bootstrapped or
	// a management token set); false means everyone is admitted as admin.
	ACL  bool   `json:"acl"`
	Node string `json:"node"`
}

// Upcoming answers GET /v1/upcoming.
type Upcoming struct {
	From  model.Time     `json:"from"`
	To    model.Time     `json:"to"`
	Fires []UpcomingFire `json:"fires"`
	// Truncated is true when more fire times fall in [From, To] than the
	// limit let through.
	Truncated bool `json:"truncated"`
}

// UpcomingFire is one fire time of a task.
type UpcomingFire struct {
	Task string     `json:"task"`
	Time model.Time `json:"time"`
}

// UpcomingQuery asks for the fire times in [From, To] of every unpaused
// task (or of Task only), at most Limit of them.
type UpcomingQuery struct {
	From, To time.Time
	Limit    int
	Task     string
}

// ParseWithin parses a look-ahead such as "90m", "1h" or "2d" (a Go
// duration, or a whole number of days with the suffix d).
func ParseWithin(s string) (time.Duration, bool) {
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil || n < 0 || n > 1<<16 {
			return 0, false
		}
		return time.Duration(n) * 24 * time.Hour, true
	}
	d, err := time.ParseDuration(s)
	return d, err == nil
}

// UpcomingFires answers q from tasks: the fire times of every unpaused
// cron, interval or once task (of q.Task only when set) in [q.From, q.To]
// that its maxRuns leaves, merged in time order, at most q.Limit. Each
// task's schedule is iterated only as far as its fires are returned.
func UpcomingFires(tasks []*model.Task, q UpcomingQuery) *Upcoming {
	out := &Upcoming{From: model.Time{Time: q.From.UTC()}, To: model.Time{Time: q.To.UTC()}, Fires: []UpcomingFire{}}
	names := make([]string, 0, len(tasks))
	scheds := make([]trigger.Schedule, 0, len(tasks))
	caps := make([]int, 0, len(tasks))
	for _, t := range tasks {
		if t.Paused || (q.Task != "" && t.Name != q.Task) {
			continue
		}
		s, err := t.Schedule()
		if err != nil || s == nil {
			continue
		}
		names = append(names, t.Name)
		scheds, caps = append(scheds, s), append(caps, trigger.RunsLeft(t.Trigger.MaxRuns, t.Runs))
	}
	fires, truncated := trigger.MergeCapped(scheds, caps, q.From, q.To, q.Limit)
	out.Truncated = truncated
	for _, f := range fires {
		out.Fires = append(out.Fires, UpcomingFire{Task: names[f.Index], Time: model.Time{Time: f.Time.UTC()}})
	}
	return out
}
