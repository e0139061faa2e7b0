package command

import (
	"maps"
	"slices"

	"github.com/ax-scheduler/ax/model"
)

// The bodies of the alert, silence and channel commands (protocol 4).

// Bounds of the alert bodies.
const (
	maxAlertItems   = 4096
	maxAlertText    = 4096
	maxAlertDetails = 32
	maxAlertID      = 1024
)

// Alert update operations.
const (
	AlertRaise   = "raise"   // the condition holds: raise, or refresh a firing alert
	AlertResolve = "resolve" // the condition cleared
)

// AlertChange is one rule's finding for one alert id.
type AlertChange struct {
	Op       string             `json:"op"`
	ID       string             `json:"id"`
	Rule     string             `json:"rule,omitempty"`
	Severity string             `json:"severity,omitempty"`
	Subject  model.AlertSubject `json:"subject,omitempty"`
	Summary  string             `json:"summary,omitempty"`
	Details  map[string]string  `json:"details,omitempty"`
	// Key names what was seen (e.g. a failed instance's id): a raise whose
	// key equals the firing alert's latest changes nothing, so a new
	// leader proposing a finding again does not count it twice. Empty
	// keys always refresh.
	Key string `json:"key,omitempty"`
}

// AlertUpdate is the body of TypeAlertUpdate: the watchdog's findings.
type AlertUpdate struct {
	Items []AlertChange `json:"items"`
}

// AlertNotified is the body of TypeAlertNotified: the notification of
// transition Seq of alert ID was sent.
type AlertNotified struct {
	ID  string `json:"id"`
	Seq uint64 `json:"seq"`
}

// PutSilence is the body of TypePutSilence. Created and By come from the
// command (leader time, actor).
type PutSilence struct {
	Silence model.Silence `json:"silence"`
}

// SilenceRef is the body of TypeDeleteSilence.
type SilenceRef struct {
	ID string `json:"id"`
}

// Validate checks every finding: its op, id, rule and texts.
func (u *AlertUpdate) Validate(*Command) *model.Error {
	if len(u.Items) == 0 || len(u.Items) > maxAlertItems {
		return model.FieldErrorf("items", "%d items, want 1 to %d", len(u.Items), maxAlertItems)
	}
	for i, it := range u.Items {
		if it.Op != AlertRaise && it.Op != AlertResolve {
			return model.FieldErrorf(item("items", i, "op").String(), "unknown op %q", it.Op)
		}
		if it.ID == "" || len(it.ID) > maxAlertID {
			return model.FieldErrorf(item("items", i, "id").String(), "want 1 to %d bytes", maxAlertID)
		}
		if it.Op == AlertRaise && (it.Rule == "" || len(it.Rule) > 64) {
			return model.FieldErrorf(item("items", i, "rule").String(), "want 1 to 64 bytes")
		}
		for _, s := range []struct {
			f string
			v string
		}{{"severity", it.Severity}, {"summary", it.Summary}, {"key", it.Key}, {"subject.task", it.Subject.Task},
			{"subject.instance", it.Subject.Instance}, {"subject.node", it.Subject.Node}, {"subject.executor", it.Subject.Executor}} {
			if len(s.v) > maxAlertText {
				return model.FieldErrorf(item("items", i, s.f).String(), "longer than %d bytes", maxAlertText)
			}
		}
		if len(it.Details) > maxAlertDetails {
			return model.FieldErrorf(item("items", i, "details").String(), "more than %d entries", maxAlertDetails)
		}
		for _, k := range slices.Sorted(maps.Keys(it.Details)) {
			if len(k) > 256 || len(it.Details[k]) > maxAlertText {
				return model.FieldErrorf(item("items", i, "details").String(), "entry %q too long", k)
			}
		}
	}
	return nil
}

// Validate checks the alert id and the transition.
func (n *AlertNotified) Validate(*Command) *model.Error {
	if n.ID == "" || len(n.ID) > maxAlertID {
		return model.FieldErrorf("id", "want 1 to %d bytes", maxAlertID)
	}
	if n.Seq == 0 {
		return model.FieldErrorf("seq", "transition 0")
	}
	return nil
}

func checkSilenceID(id string) *model.Error {
	if id == "" || len(id) > 64 {
		return model.FieldErrorf("id", "want 1 to 64 bytes")
	}
	return nil
}

// Validate checks the silence: its id, what it matches, its end and its
// comment.
func (p *PutSilence) Validate(*Command) *model.Error {
	s := &p.Silence
	if e := checkSilenceID(s.ID); e != nil {
		return e
	}
	if s.Task == "" && s.Rule == "" && len(s.Labels) == 0 {
		return model.FieldErrorf("silence", "name a task, a rule or labels")
	}
	if s.Task != "" {
		if e := checkName(field("task"), s.Task); e != nil {
			return e
		}
	}
	if len(s.Rule) > 64 {
		return model.FieldErrorf("rule", "longer than 64 bytes")
	}
	if len(s.Labels) > maxAlertDetails {
		return model.FieldErrorf("labels", "more than %d labels", maxAlertDetails)
	}
	for _, k := range slices.Sorted(maps.Keys(s.Labels)) {
		if k == "" || len(k) > 256 || len(s.Labels[k]) > 1024 {
			return model.FieldErrorf("labels", "label %q invalid", k)
		}
	}
	if s.Until.IsZero() {
		return model.FieldErrorf("until", "required")
	}
	if e := checkTime(field("until"), s.Until.Millis()); e != nil {
		return e
	}
	return checkLen(field("comment"), s.Comment, maxAlertText)
}

// Validate checks the silence id.
func (r *SilenceRef) Validate(*Command) *model.Error { return checkSilenceID(r.ID) }
