package model

import (
	"errors"
	"fmt"
)

// Error codes used in API errors. Each maps to one HTTP status in the api
// package and to one sentinel below.
const (
	CodeInvalid      = "invalid_argument"    // 400
	CodeNotFound     = "not_found"           // 404
	CodeConflict     = "conflict"            // 409
	CodePrecondition = "failed_precondition" // 409
	CodeTooLarge     = "too_large"           // 413
	CodeUnauthorized = "unauthorized"        // 401
	CodeForbidden    = "forbidden"           // 403
	CodeTooMany      = "resource_exhausted"  // 429
	CodeUnavailable  = "unavailable"         // 503
	CodeInternal     = "internal"            // 500
)

// Sentinel errors. Errors returned by ax packages match them with errors.Is.
var (
	ErrInvalid      = errors.New(CodeInvalid)
	ErrNotFound     = errors.New(CodeNotFound)
	ErrConflict     = errors.New(CodeConflict)
	ErrPrecondition = errors.New(CodePrecondition)
	ErrTooLarge     = errors.New(CodeTooLarge)
	ErrUnauthorized = errors.New(CodeUnauthorized)
	ErrForbidden    = errors.New(CodeForbidden)
	ErrTooMany      = errors.New(CodeTooMany)
	ErrUnavailable  = errors.New(CodeUnavailable)
)

var sentinels = map[string]error{
	CodeInvalid:      ErrInvalid,
	CodeNotFound:     ErrNotFound,
	CodeConflict:     ErrConflict,
	CodePrecondition: ErrPrecondition,
	CodeTooLarge:     ErrTooLarge,
	CodeUnauthorized: ErrUnauthorized,
	CodeForbidden:    ErrForbidden,
	CodeTooMany:      ErrTooMany,
	CodeUnavailable:  ErrUnavailable,
}

// Error is the error shape of the API ({"error": {...}}) and of deterministic
// state machine rejections. Field names the offending input field, if any.
type Error struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Field   string `json:"field,omitempty"`
}

// Error implements error.
func (e *Error) Error() string {
	if e.Field != "" {
		return fmt.Sprintf("%s: %s", e.Field, e.Message)
	}
	return e.Message
}

// Is reports whether target is the sentinel of e's code.
func (e *Error) Is(target error) bool {
	s, ok := sentinels[e.Code]
	return ok && s == target
}

// Errorf returns an *Error with the given code and formatted message.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// FieldErrorf returns an invalid_argument *Error naming field.
func FieldErrorf(field, format string, args ...any) *Error {
	return &Error{Code: CodeInvalid, Field: field, Message: fmt.Sprintf(format, args...)}
}

// ErrorBody is the JSON envelope of an API error response.
type ErrorBody struct {
	Error *Error `json:"error"`
}
