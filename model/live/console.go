package live

import "github.com/ax-scheduler/ax/model"

// Wire types of the console's aggregate reads (GET /v1/overview, task
// summaries, calendars, fire previews and counts).

// Overview is the answer of GET /v1/overview: what the cluster is doing
// now and did in the last hour and day.
type Overview struct {
	// Time is the answering node's clock.
	Time   model.Time  `json:"time"`
	Counts StateCounts `json:"counts"`
	Tasks  TaskTotals  `json:"tasks"`
	// LastHour and LastDay count fires and finishes in the minutes of the
	// last 60 and 1,440 (the current minute included).
	LastHour Outcomes `json:"lastHour"`
	LastDay  Outcomes `json:"lastDay"`
	// PerMinute is the last 60 minutes, oldest first, zero-filled.
	PerMinute []MinuteStats `json:"perMinute"`
	// RecentFailures are FAILED and TERMINATED instances, newest first.
	RecentFailures []RecentFailure `json:"recentFailures"`
	RecentMisfires []RecentMisfire `json:"recentMisfires"`
	// AlertsPending counts failures whose notify/onFailure the leader has
	// not recorded as handled.
	AlertsPending int `json:"alertsPending"`
	// Alerts are the firing alerts (critical first, then the newest),
	// at most 20; AlertsFiring counts them all. NotificationsPending
	// counts alert transitions whose notification is not recorded as
	// sent yet.
	Alerts               []model.Alert `json:"alerts"`
	AlertsFiring         int           `json:"alertsFiring"`
	NotificationsPending int           `json:"notificationsPending"`
	// Cluster is GET /v1/cluster's answer, nil with ClusterError when it
	// failed; Executors GET /v1/executors', nil with ExecutorsError.
	Cluster        *model.ClusterStatus   `json:"cluster"`
	ClusterError   string                 `json:"clusterError,omitempty"`
	Executors      []model.ExecutorStatus `json:"executors"`
	ExecutorsError string                 `json:"executorsError,omitempty"`
}

// StateCounts counts the instances in each unfinished state.
type StateCounts struct {
	Scheduled       int `json:"SCHEDULED"`
	Ready           int `json:"READY"`
	Running         int `json:"RUNNING"`
	Retrying        int `json:"RETRYING"`
	Blocked         int `json:"BLOCKED"`
	WaitingApproval int `json:"WAITING_APPROVAL"`
}

// TaskTotals counts tasks.
type TaskTotals struct {
	Total  int `json:"total"`
	Paused int `json:"paused"`
}

// Outcomes counts the instances that fired and those that entered each
// terminal state in a span of time.
type Outcomes struct {
	Fired      int `json:"fired"`
	Success    int `json:"SUCCESS"`
	Failed     int `json:"FAILED"`
	Terminated int `json:"TERMINATED"`
	Canceled   int `json:"CANCELED"`
	Skipped    int `json:"SKIPPED"`
}

// Add adds o2 to o.
func (o *Outcomes) Add(o2 Outcomes) {
	o.Fired += o2.Fired
	o.Success += o2.Success
	o.Failed += o2.Failed
	o.Terminated += o2.Terminated
	o.Canceled += o2.Canceled
	o.Skipped += o2.Skipped
}

// MinuteStats is one minute of the overview's chart: Succeeded counts
// SUCCESS, Failed counts FAILED.
type MinuteStats struct {
	Minute    model.Time `json:"minute"`
	Fired     int        `json:"fired"`
	Succeeded int        `json:"succeeded"`
	Failed    int        `json:"failed"`
}

// RecentFailure is one FAILED or TERMINATED instance as it finished.
type RecentFailure struct {
	ID         string     `json:"id"`
	Task       string     `json:"task"`
	State      string     `json:"state"`
	Attempts   int        `json:"attempts"`
	FinishedAt model.Time `json:"finishedAt"`
	LastError  string     `json:"lastError"`
}

// RecentMisfire is one misfire event of a task.
type RecentMisfire struct {
	Task    string     `json:"task"`
	Time    model.Time `json:"time"`
	Message string     `json:"message"`
}

// TaskSummaryList is the answer of GET /v1/tasks?summary=true: a TaskList
// whose tasks carry their summary.
type TaskSummaryList struct {
	Tasks      []SummarizedTask `json:"tasks"`
	NextCursor string           `json:"nextCursor,omitempty"`
}

// SummarizedTask is a task with its summary; it encodes as the task's
// fields plus "summary". (A field of Task itself would be a field that
// a PUT could carry into the log.)
type SummarizedTask struct {
	model.Task
	Summary TaskSummary `json:"summary"`
}

// TaskSummary is what GET /v1/tasks?summary=true adds to each task.
type TaskSummary struct {
	// NextFire is nil for a paused task and for one that will not fire
	// again (event triggers, a once trigger that fired).
	NextFire *model.Time `json:"nextFire"`
	// LastRun is the newest instance that fired (RecentRuns[0]).
	LastRun    *RunBrief  `json:"lastRun"`
	RecentRuns []RunBrief `json:"recentRuns"`
}

// RunBrief is an instance in a task summary.
type RunBrief struct {
	ID          string     `json:"id"`
	State       string     `json:"state"`
	Source      string     `json:"source"`
	ScheduledAt model.Time `json:"scheduledAt"`
	FinishedAt  model.Time `json:"finishedAt"`
}

// Summary run counts: DefaultSummaryRuns by default, at most
// MaxSummaryRuns.
const (
	DefaultSummaryRuns = 30
	MaxSummaryRuns     = 100
)

// TaskCalendar is the answer of GET /v1/tasks/{name}/calendar: instance
// counts by state per scheduled date in the task's timezone, oldest first,
// only dates that have instances.
type TaskCalendar struct {
	Task     string        `json:"task"`
	Timezone string        `json:"timezone"`
	Days     []CalendarDay `json:"days"`
}

// CalendarDay is one date of a calendar.
type CalendarDay struct {
	Date   string         `json:"date"`
	Counts map[string]int `json:"counts"`
}

// TaskFires is the answer of GET /v1/tasks/{name}/fires: the next fire
// times from now, and Task.Completed when there are none for that reason.
type TaskFires struct {
	Timezone  string        `json:"timezone"`
	Fires     []FirePreview `json:"fires"`
	Completed string        `json:"completed,omitempty"`
}

// FirePreview is one coming fire time, with its wall time in the task's
// timezone; DSTChange says its UTC offset differs from the previous
// fire's (from now's for the first).
type FirePreview struct {
	Time      model.Time `json:"time"`
	Local     string     `json:"local"`
	Zone      string     `json:"zone"`
	Offset    int        `json:"offset"`
	DSTChange bool       `json:"dstChange"`
}

// CountFilter selects a task's instances to count: scheduled in
// [From, To] (each optional) and, with Source, of that source.
type CountFilter struct {
	Source string
	From   model.Time
	To     model.Time
}

// InstanceCounts is the answer of GET /v1/tasks/{name}/counts.
type InstanceCounts struct {
	Total  int            `json:"total"`
	Counts map[string]int `json:"counts"`
	// Slots is the task's concurrency: how many of its maxConcurrency
	// slots are busy (whatever the filter), nil for a deleted task.
	Slots *SlotUse `json:"slots,omitempty"`
}

// SlotUse is how many of a task's concurrency slots are busy. Busy
// counts the instances READY, RUNNING, RETRYING or waiting for a mid-run
// approval; more BLOCKED instances wait while Busy is at Limit.
type SlotUse struct {
	Busy  int `json:"busy"`
	Limit int `json:"limit"`
}
