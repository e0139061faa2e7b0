package model

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
)

// Value is the value of an action's env variable or HTTP header: literal
// Text, or the value of the secret named FromSecret, which the leader
// delivers with the job (Job.Secrets) and the executor puts in place. In
// JSON it is a string for Text, {"fromSecret": "name"} for a secret.
type Value struct {
	Text       string
	FromSecret string
}

// TextValue returns a literal Value.
func TextValue(s string) Value { return Value{Text: s} }

// SecretValue returns a Value taken from the secret name.
func SecretValue(name string) Value { return Value{FromSecret: name} }

type secretRef struct {
	FromSecret string `json:"fromSecret"`
}

// MarshalJSON encodes v as a JSON string, or {"fromSecret": name}.
func (v Value) MarshalJSON() ([]byte, error) {
	if v.FromSecret != "" {
		return json.Marshal(secretRef{v.FromSecret})
	}
	return json.Marshal(v.Text)
}

// UnmarshalJSON decodes a JSON string or {"fromSecret": name}; an object
// with other fields, and other JSON types, are errors.
func (v *Value) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case bytes.Equal(b, []byte("null")):
		*v = Value{}
		return nil
	case len(b) > 0 && b[0] == '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*v = Value{Text: s}
		return nil
	case len(b) > 0 && b[0] == '{':
		var r secretRef
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&r); err != nil {
			if strings.HasPrefix(err.Error(), "json: unknown field") {
				return valueTypeError(b, `object with fields other than "fromSecret"`)
			}
			return valueTypeError(b, `object whose "fromSecret" is not a string`)
		}
		if r.FromSecret == "" {
			return valueTypeError(b, `object without "fromSecret"`)
		}
		*v = Value{FromSecret: r.FromSecret}
		return nil
	}
	return valueTypeError(b, "")
}

// valueTypeError is the error of a JSON value that is not a Value; the
// decoder adds the field's path to it.
func valueTypeError(b []byte, what string) error {
	if what == "" {
		what = "JSON " + string(b[:min(len(b), 20)])
	}
	return &json.UnmarshalTypeError{Value: what + ` (want a string or {"fromSecret": "name"})`, Type: reflect.TypeFor[Value]()}
}

// String returns the Text, or "fromSecret:name": never a secret's value.
func (v Value) String() string {
	if v.FromSecret != "" {
		return "fromSecret:" + v.FromSecret
	}
	return v.Text
}

// validate checks v, the value of field.
func (v Value) validate(field string) error {
	if v.FromSecret == "" {
		return nil
	}
	if v.Text != "" {
		return FieldErrorf(field, "give a text or fromSecret, not both")
	}
	return ValidateName(field+".fromSecret", v.FromSecret)
}
