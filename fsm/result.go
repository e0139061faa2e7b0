package fsm

import (
	"encoding/json"

	"github.com/ax-scheduler/ax/model"
)

// Result is what applying one command returns: an error the caller should
// see (a deterministic rejection such as not found or a failed
// precondition), or an encoded value: JSON for most commands, a compact
// binary form for the high-volume Submit (see DecodeSubmitResult).
type Result struct {
	Err  *model.Error `json:"err,omitempty"`
	Data []byte       `json:"data,omitempty"`
}

// BatchResult is the response of a batch entry: one Result per command,
// in order.
type BatchResult struct {
	Results []*Result
}

// Decode unmarshals r's data into v, or returns r's error.
func (r *Result) Decode(v any) error {
	if r.Err != nil {
		return r.Err
	}
	if v == nil || len(r.Data) == 0 {
		return nil
	}
	return json.Unmarshal(r.Data, v)
}

func okResult(v any) *Result {
	b, err := json.Marshal(v)
	if err != nil {
		return errResult(model.Errorf(model.CodeInternal, "encode result: %v", err))
	}
	return &Result{Data: b}
}

func errResult(e *model.Error) *Result { return &Result{Err: e} }

// refusal is the answer of a check that found e: nil when e is.
func refusal(e *model.Error) *Result {
	if e == nil {
		return nil
	}
	return errResult(e)
}
