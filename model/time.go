package model

import (
	"encoding/json"
	"fmt"
	"reflect"
	"time"
)

// badValue reports a value that does not parse. It is a
// *json.UnmarshalTypeError so that encoding/json adds the field path, which
// the API turns into the error's field; Value carries what was expected.
func badValue(got, want string) error {
	return &json.UnmarshalTypeError{Value: got + " (want " + want + ")", Type: reflect.TypeFor[string]()}
}

// TimeLayout is the wire format of every time: RFC 3339 with milliseconds.
const TimeLayout = "2006-01-02T15:04:05.000Z07:00"

// Time is a point in time that encodes as RFC 3339 with milliseconds in UTC.
// The zero Time encodes as null.
type Time struct{ time.Time }

// UnixMilli returns the Time for a count of milliseconds since the Unix
// epoch; 0 gives the zero Time.
func UnixMilli(ms int64) Time {
	if ms == 0 {
		return Time{}
	}
	return Time{time.UnixMilli(ms).UTC()}
}

// Or returns *t, the zero time for nil.
func (t *Time) Or() (z time.Time) {
	if t != nil {
		z = t.Time
	}
	return z
}

// Millis returns t as milliseconds since the Unix epoch, 0 for the zero Time.
func (t Time) Millis() int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

// MarshalJSON implements json.Marshaler.
func (t Time) MarshalJSON() ([]byte, error) {
	if t.IsZero() {
		return []byte("null"), nil
	}
	return t.AppendJSON(make([]byte, 0, len(TimeLayout)+2)), nil
}

// AppendJSON appends t as MarshalJSON encodes it.
func (t Time) AppendJSON(b []byte) []byte {
	if t.IsZero() {
		return append(b, "null"...)
	}
	b = append(b, '"')
	b = t.UTC().AppendFormat(b, TimeLayout) // nothing in the layout needs escaping
	return append(b, '"')
}

// plainString returns the contents of a JSON string literal that holds no
// escapes, sparing a full decode on the hot path; ok is false otherwise.
func plainString(b []byte) (string, bool) {
	if len(b) < 2 || b[0] != '"' || b[len(b)-1] != '"' {
		return "", false
	}
	for _, c := range b[1 : len(b)-1] {
		if c == '\\' || c == '"' || c < 0x20 {
			return "", false
		}
	}
	return string(b[1 : len(b)-1]), true
}

// UnmarshalJSON implements json.Unmarshaler; it accepts any RFC 3339 time.
func (t *Time) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*t = Time{}
		return nil
	}
	s, ok := plainString(b)
	if !ok {
		if err := json.Unmarshal(b, &s); err != nil {
			return badValue("a non-string", "an RFC 3339 time string")
		}
	}
	if s == "" {
		*t = Time{}
		return nil
	}
	v, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return badValue(fmt.Sprintf("%q", s), "an RFC 3339 time such as 2026-01-02T15:04:05Z")
	}
	*t = Time{v.UTC()}
	return nil
}

// Duration is a time.Duration that encodes as a Go duration string.
type Duration time.Duration

// Std returns d as a time.Duration.
func (d Duration) Std() time.Duration { return time.Duration(d) }

// MarshalJSON implements json.Marshaler.
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

// UnmarshalJSON implements json.Unmarshaler. It accepts Go duration strings
// ("90s", "1h30m"); a bare number is rejected because its unit is ambiguous.
func (d *Duration) UnmarshalJSON(b []byte) error {
	s, ok := plainString(b)
	if !ok {
		if err := json.Unmarshal(b, &s); err != nil {
			return badValue("a non-string", "a duration string such as \"30s\" or \"5m\"")
		}
	}
	if s == "" {
		*d = 0
		return nil
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return badValue(fmt.Sprintf("%q", s), "a Go duration such as \"30s\", \"5m\" or \"1h30m\"")
	}
	*d = Duration(v)
	return nil
}

// Timeout is policy.timeout: a Duration that can also say "no timeout"
// explicitly. Unset (0) takes the agent's -default-timeout when the job
// is built; "none", or an explicit zero ("0s", "0"), is NoTimeout.
type Timeout Duration

// NoTimeout is a timeout of "none": the attempt runs as long as it takes.
const NoTimeout Timeout = -1

// Std returns t as a time.Duration, 0 for unset and NoTimeout.
func (t Timeout) Std() time.Duration {
	if t < 0 {
		return 0
	}
	return time.Duration(t)
}

// MarshalJSON implements json.Marshaler: NoTimeout is "none".
func (t Timeout) MarshalJSON() ([]byte, error) {
	if t == NoTimeout {
		return []byte(`"none"`), nil
	}
	return Duration(t).MarshalJSON()
}

// UnmarshalJSON implements json.Unmarshaler: a Go duration string, or
// "none"; a zero duration given explicitly means none as well ("" is
// unset).
func (t *Timeout) UnmarshalJSON(b []byte) error {
	s, ok := plainString(b)
	if !ok {
		_ = json.Unmarshal(b, &s)
	}
	if s == "none" {
		*t = NoTimeout
		return nil
	}
	var d Duration
	if err := d.UnmarshalJSON(b); err != nil {
		return err
	}
	if d == 0 && s != "" {
		*t = NoTimeout
		return nil
	}
	*t = Timeout(d)
	return nil
}
