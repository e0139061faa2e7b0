package trigger

import "errors"

// Names of the trigger fields an *Error can refer to.
const (
	// FieldExpression is the cron expression of a cron trigger.
	FieldExpression = "expression"
	// FieldTimezone is the IANA timezone of a cron trigger.
	FieldTimezone = "timezone"
	// FieldEvery is the period of an interval trigger.
	FieldEvery = "every"
	// FieldEndAt is the end of a trigger's window (Window).
	FieldEndAt = "endAt"
	// FieldMaxRuns is the number of fires a trigger may make.
	FieldMaxRuns = "maxRuns"
	// FieldJitter is the bound of a trigger's jitter (Jitter).
	FieldJitter = "jitter"
)

// ErrInvalid is wrapped by every error this package returns for bad trigger
// input, so callers can map it with errors.Is (for example to HTTP 400).
var ErrInvalid = errors.New("invalid trigger")

// Error describes invalid trigger input. Field says which input was wrong
// (one of the Field constants) and Message says why, in a
// form that can be shown to the user as is, for example
// `minute field "61": end of range (61) above maximum (59)`.
type Error struct {
	// Field is the name of the offending trigger field.
	Field string
	// Message is a human-readable explanation that names the bad cron field
	// when there is one.
	Message string
}

// Error returns "invalid <field>: <message>".
func (e *Error) Error() string {
	return "invalid " + e.Field + ": " + e.Message
}

// Unwrap returns ErrInvalid.
func (e *Error) Unwrap() error { return ErrInvalid }
