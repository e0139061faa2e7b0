package model

import (
	"errors"
	"time"

	"github.com/ax-scheduler/ax/trigger"
)

// Bounds of request fields that the API checks and the state machine
// checks again when it applies a command.
const (
	// MaxIdempotencyKey bounds a caller's idempotency key (submit, trigger).
	MaxIdempotencyKey = 256
	// MaxParamValue bounds one trigger parameter's value.
	MaxParamValue = 4096
	// MaxParamName bounds a trigger parameter's name.
	MaxParamName = 64
	// MaxComment bounds an operator's comment or an approval summary.
	MaxComment = 4096
	// MaxReports bounds the attempt reports of one batch.
	MaxReports = 1024
	// MaxFireKey bounds an idempotency key rendered from a task's
	// template: with the task name (128 bytes at most) and a separator it
	// must fit a bbolt key (32 KiB). A longer rendering falls back to the
	// default key.
	MaxFireKey = 32<<10 - 129
)

// validName matches ^[a-z0-9][a-z0-9._-]{0,127}$ (the rule of task, node
// and executor names) without a regular expression: the state machine
// checks a name in every command it applies.
func validName(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || i > 0 && (c == '.' || c == '_' || c == '-')) {
			return false
		}
	}
	return true
}

// ValidParamName reports whether k is a valid trigger parameter name:
// letters, digits and '_', starting with a letter or '_', at most
// MaxParamName bytes.
func ValidParamName(k string) bool {
	if k == "" || len(k) > MaxParamName {
		return false
	}
	for i := 0; i < len(k); i++ {
		ch := k[i]
		letter := ch == '_' || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z')
		if !letter && (i == 0 || ch < '0' || ch > '9') {
			return false
		}
	}
	return true
}

// ValidateStatic is Validate without the checks that depend on the node
// or may run long: the trigger's timezone is checked for form, not looked
// up in the zone database (two nodes' databases may differ), and the
// idempotency key template is parsed, not executed (a template may loop
// for as long as it is told to). The state machine uses it, so that
// whether a command applies depends on nothing but the command, and an
// apply takes bounded time. It accepts every task Validate accepts.
func (t *Task) ValidateStatic() error {
	c := *t
	tz := ""
	if c.Trigger.Type == TriggerCron {
		tz, c.Trigger.Timezone = c.Trigger.Timezone, "" // only cron takes one
	}
	key := c.Policy.IdempotencyKey
	c.Policy.IdempotencyKey = ""
	if err := c.Validate(); err != nil {
		return err
	}
	if err := checkTemplate("policy.idempotencyKey", key); err != nil {
		return err
	}
	if tz != "" && !validZoneName(tz) {
		return FieldErrorf("trigger.timezone", "%q is not an IANA timezone name such as \"Europe/Berlin\"", tz)
	}
	return nil
}

// validZoneName reports whether s has the form of an IANA zone name
// ("Area/Location", "UTC", "Etc/GMT+5"): ASCII letters, digits, '/', '_',
// '+', '-', at most 64 bytes, no empty or dot element, not "Local".
func validZoneName(s string) bool {
	if s == "" || len(s) > 64 || s == "Local" || s[0] == '/' || s[len(s)-1] == '/' {
		return false
	}
	prev := byte('/')
	for i := 0; i < len(s); i++ {
		ch := s[i]
		ok := ch == '/' || ch == '_' || ch == '+' || ch == '-' || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9')
		if !ok || (ch == '/' && prev == '/') {
			return false
		}
		prev = ch
	}
	return true
}

// validateTimes checks that the trigger's times survive being stored: a
// time is written as RFC 3339, which has no year before 1 or after 9999
// (in UTC), and the zero time is written as null.
func (tr *Trigger) validateTimes() error {
	for _, f := range []struct {
		name string
		t    *Time
	}{{"trigger.at", tr.At}, {"trigger.startAt", tr.StartAt}, {"trigger.endAt", tr.EndAt}} {
		if y := f.t.Or().UTC().Year(); f.t != nil && (f.t.IsZero() || y < 1 || y > 9999) {
			return FieldErrorf(f.name, "%s is out of range: use a time between years 0001 and 9999 (UTC)", f.t.UTC().Format(time.RFC3339))
		}
	}
	return nil
}

// triggerError words a *trigger.Error as an *Error naming its field.
func triggerError(err error) error {
	if te := (*trigger.Error)(nil); errors.As(err, &te) {
		return FieldErrorf("trigger."+te.Field, "%s", te.Message)
	}
	return err
}
