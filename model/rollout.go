package model

// RolloutSpec asks a task write (PUT /v1/tasks/{name} with "rollout") to
// roll the new definition out as a canary (protocol 8), as Argo Rollouts
// and Flagger do: the current version stays the stable one and Percent of
// the fires (chosen by fire time) run the new one, on executors carrying
// TestLabels beside the task's executorLabels, until PromoteAfter of them
// succeeded; then it is promoted. A canary instance that fails rolls the
// task back to the stable version, unless AbortOnFailure is false. A new
// task has no stable version: every fire is a canary until it is promoted.
// The spec is not part of the stored definition.
type RolloutSpec struct {
	// Percent is the share of fires that run the canary, 1 to 100
	// (default 100).
	Percent      int               `json:"percent,omitempty"`
	PromoteAfter int               `json:"promoteAfter"`
	TestLabels   map[string]string `json:"testLabels,omitempty"`
	// AbortOnFailure (default true): a canary failure rolls back.
	AbortOnFailure *bool `json:"abortOnFailure,omitempty"`
}

// MaxPromoteAfter bounds RolloutSpec.PromoteAfter.
const MaxPromoteAfter = 10_000

// Rollout phases.
const (
	RolloutProgressing = "progressing" // canary fires running
	RolloutPromoted    = "promoted"    // the canary became the task
	RolloutRolledBack  = "rolled_back" // a canary failed: the stable version stays
	RolloutAborted     = "aborted"     // an operator aborted it
)

// Rollout is a task's latest rollout (GET /v1/tasks/{name}/rollout):
// the versions, the progress and how it ended. Stable is 0 for a new task.
type Rollout struct {
	Task           string            `json:"task"`
	Phase          string            `json:"phase"`
	Stable         uint64            `json:"stableVersion"`
	Canary         uint64            `json:"canaryVersion"`
	Percent        int               `json:"percent"`
	PromoteAfter   int               `json:"promoteAfter"`
	TestLabels     map[string]string `json:"testLabels,omitempty"`
	AbortOnFailure bool              `json:"abortOnFailure"`
	// Fires counts the canary instances created, Successes and Failures
	// those that ended SUCCESS and FAILED.
	Fires     uint64 `json:"canaryFires"`
	Successes uint64 `json:"canarySuccesses"`
	Failures  uint64 `json:"canaryFailures"`
	StartedAt Time   `json:"startedAt"`
	StartedBy string `json:"startedBy,omitempty"`
	EndedAt   *Time  `json:"endedAt,omitempty"`
	EndedBy   string `json:"endedBy,omitempty"`
	// Reason says why it ended (the failed canary instance, "promoteAfter
	// reached", who promoted or aborted it).
	Reason string `json:"reason,omitempty"`
	// Promoted is the version the promotion wrote.
	Promoted uint64 `json:"promotedVersion,omitempty"`
}

// Active reports whether canary fires still run.
func (r *Rollout) Active() bool { return r != nil && r.Phase == RolloutProgressing }

func (s *RolloutSpec) normalize() {
	if s.Percent == 0 {
		s.Percent = 100
	}
	if len(s.TestLabels) == 0 {
		s.TestLabels = nil
	}
}

func (s *RolloutSpec) validate() error {
	switch {
	case s.Percent < 0 || s.Percent > 100: // 0: the default, 100
		return FieldErrorf("rollout.percent", "must be between 1 and 100 (0 or absent: 100), got %d", s.Percent)
	case s.PromoteAfter < 1 || s.PromoteAfter > MaxPromoteAfter:
		return FieldErrorf("rollout.promoteAfter", "must be between 1 and %d, got %d", MaxPromoteAfter, s.PromoteAfter)
	case len(s.TestLabels) > 64:
		return FieldErrorf("rollout.testLabels", "at most 64 labels, got %d", len(s.TestLabels))
	}
	for _, k := range sortedKeys(s.TestLabels) {
		if err := ValidateLabel("rollout.testLabels", k, s.TestLabels[k]); err != nil {
			return err
		}
	}
	return nil
}
