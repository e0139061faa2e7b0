package api

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"

	"github.com/ax-scheduler/ax/model"
)

// status maps an error to its HTTP status and wire form.
func status(err error) (int, *model.Error) {
	var me *model.Error
	if !errors.As(err, &me) {
		me = &model.Error{Code: model.CodeInternal, Message: err.Error()}
		for _, s := range []error{model.ErrInvalid, model.ErrNotFound, model.ErrConflict, model.ErrPrecondition,
			model.ErrTooLarge, model.ErrUnauthorized, model.ErrForbidden, model.ErrTooMany, model.ErrUnavailable} {
			if errors.Is(err, s) {
				me.Code = s.Error()
				break
			}
		}
	}
	switch me.Code {
	case model.CodeInvalid:
		return http.StatusBadRequest, me
	case model.CodeNotFound:
		return http.StatusNotFound, me
	case model.CodeConflict, model.CodePrecondition:
		return http.StatusConflict, me
	case model.CodeTooLarge:
		return http.StatusRequestEntityTooLarge, me
	case model.CodeUnauthorized:
		return http.StatusUnauthorized, me
	case model.CodeForbidden:
		return http.StatusForbidden, me
	case model.CodeTooMany:
		return http.StatusTooManyRequests, me
	case model.CodeUnavailable:
		return http.StatusServiceUnavailable, me
	default:
		return http.StatusInternalServerError, me
	}
}

// WriteError answers err as every handler does: its status and
// {"error": {...}} body (a 503 with Retry-After).
func WriteError(w http.ResponseWriter, err error) { writeError(w, err) }

func writeError(w http.ResponseWriter, err error) {
	code, me := status(err)
	if code == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", "1")
	}
	writeJSON(w, code, model.ErrorBody{Error: me})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// writeBody answers with an already encoded JSON body.
func writeBody(w http.ResponseWriter, code int, body []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(code)
	_, _ = w.Write(body)
}

// reply returns a function that writes a handler's result: the value as
// JSON with 200, or the error with its status. Use it as
// reply(w)(s.b.role.Method(...)).
func reply(w http.ResponseWriter) func(any, error) {
	return func(v any, err error) {
		if err != nil {
			writeError(w, err)
			return
		}
		writeJSON(w, http.StatusOK, v)
	}
}
