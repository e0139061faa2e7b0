// Package strictjson decodes request bodies as the API takes them: one
// JSON value, no unknown fields, no trailing data, and every failure an
// invalid_argument (or too_large) model.Error that names the field, with
// its full path for an unknown field ("trigger.bogus"), which
// encoding/json leaves out of its error.
package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"reflect"
	"strconv"
	"strings"

	"github.com/ax-scheduler/ax/internal/jsonpath"
	"github.com/ax-scheduler/ax/model"
)

var errTrailing = errors.New("trailing data")

// Decode reads body, one JSON value, into v, rejecting unknown fields and
// trailing data.
func Decode(body []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		me := Error(err)
		if jsonpath.IsUnknownField(err) {
			if p := jsonpath.UnknownFieldPath(body, reflect.TypeOf(v)); p != "" {
				me.Field = p
				me.Message = "unknown field " + strconv.Quote(p)
			}
		}
		return me
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		if err != nil {
			return Error(err)
		}
		return Error(errTrailing)
	}
	return nil
}

// Error turns an error reading or decoding a JSON body into an
// invalid_argument error naming the field (too_large for a body past
// http.MaxBytesReader's limit).
func Error(err error) *model.Error {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return &model.Error{Code: model.CodeTooLarge, Message: "request body larger than " + strconv.FormatInt(mbe.Limit, 10) + " bytes"}
	}
	var ute *json.UnmarshalTypeError
	if errors.As(err, &ute) {
		field := ute.Field
		msg := "cannot use " + ute.Value
		if !strings.Contains(ute.Value, "(want") {
			msg += " as " + ute.Type.String()
		}
		return &model.Error{Code: model.CodeInvalid, Field: field, Message: msg}
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return &model.Error{Code: model.CodeInvalid, Message: "malformed JSON at byte " + strconv.FormatInt(se.Offset, 10) + ": " + se.Error()}
	}
	msg := err.Error()
	if f, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
		f = strings.Trim(f, `"`)
		return &model.Error{Code: model.CodeInvalid, Field: f, Message: "unknown field " + strconv.Quote(f)}
	}
	if errors.Is(err, errTrailing) {
		return &model.Error{Code: model.CodeInvalid, Message: "request body holds more than one JSON value"}
	}
	if msg == "EOF" {
		return &model.Error{Code: model.CodeInvalid, Message: "request body is empty; a JSON object is required"}
	}
	return &model.Error{Code: model.CodeInvalid, Message: "bad JSON: " + strings.TrimPrefix(msg, "json: ")}
}
