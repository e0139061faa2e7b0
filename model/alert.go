package model

// Alert rules.
const (
	RuleInstanceFailed    = "instance_failed"   // a task's instances are failing (grouped per task)
	RuleTaskSilence       = "task_silence"      // an expected fire has no instance
	RuleClusterSilence    = "cluster_silence"   // nothing fired for -silence while tasks were due
	RuleFrequencyAnomaly  = "frequency_anomaly" // more schedule instances than the schedule allows
	RuleStuckReady        = "stuck_ready"
	RuleStuckBlocked      = "stuck_blocked"
	RuleStuckApproval     = "stuck_approval"
	RuleRunningOvertime   = "running_overtime"
	RuleDeadlineMissed    = "deadline_missed" // an instance not finished by its policy.deadline
	RuleMisfire           = "misfire"
	RuleQueueFull         = "queue_full"
	RuleClockSkew         = "clock_skew"
	RuleClockJump         = "clock_jump" // a member's wall clock stepped
	RuleMemberUnreachable = "member_unreachable"
	RuleExecutorLost      = "executor_lost"
	RuleQuorumLost        = "quorum_lost" // raised by a node that sees it; not a state-machine record
	RuleRollback          = "rollback"    // a canary rollout rolled back (raised by the state machine)
)

// Alert severities.
const (
	SeverityCritical = "critical"
	SeverityWarning  = "warning"
	SeverityInfo     = "info"
)

// Alert states.
const (
	AlertFiring   = "firing"
	AlertResolved = "resolved"
)

// AlertSubject is what an alert is about; empty fields do not apply.
type AlertSubject struct {
	Task     string `json:"task,omitempty"`
	Instance string `json:"instance,omitempty"`
	Node     string `json:"node,omitempty"`
	Executor string `json:"executor,omitempty"`
}

// Alert is one incident: raised by a rule for a subject, refreshed while
// the condition holds, resolved when it clears. ID is rule + ":" + the
// subject's key, so the same condition is one alert, not one per check.
type Alert struct {
	ID         string            `json:"id"`
	Rule       string            `json:"rule"`
	Severity   string            `json:"severity"`
	Subject    AlertSubject      `json:"subject"`
	Summary    string            `json:"summary"`
	Details    map[string]string `json:"details,omitempty"`
	State      string            `json:"state"`
	FirstSeen  Time              `json:"firstSeen"`
	LastSeen   Time              `json:"lastSeen"`
	ResolvedAt *Time             `json:"resolvedAt,omitempty"`
	// Count is how many times the condition was seen again while firing
	// (e.g. failed instances grouped into one incident).
	Count    int  `json:"count"`
	Silenced bool `json:"silenced,omitempty"`
}

// AlertList answers GET /v1/alerts, newest first.
type AlertList struct {
	Alerts     []Alert `json:"alerts"`
	NextCursor string  `json:"nextCursor,omitempty"`
}

// Silence mutes notifications of matching alerts until Until.
type Silence struct {
	ID      string            `json:"id"`
	Task    string            `json:"task,omitempty"`
	Rule    string            `json:"rule,omitempty"`
	Labels  map[string]string `json:"labels,omitempty"` // task labels
	Until   Time              `json:"until"`
	By      string            `json:"by,omitempty"`
	Comment string            `json:"comment,omitempty"`
	Created Time              `json:"created"`
}

// AlertNotification is what the notifier sends: an alert that started
// firing ("firing"), fired again after a quiet period ("firing", Count
// grown), or resolved ("resolved").
type AlertNotification struct {
	Event string `json:"event"` // firing | resolved
	Alert Alert  `json:"alert"`
	// TaskLabels route the notification to channels matching them;
	// Notify is the task's policy.notify list (channel names or URLs).
	TaskLabels map[string]string `json:"-"`
	Notify     []string          `json:"-"`
}
