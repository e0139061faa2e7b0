package action

import (
	"bytes"
	"context"
	"encoding/json"
	"strconv"

	"github.com/ax-scheduler/ax/action/redact"
	"github.com/ax-scheduler/ax/action/result"
)

// Results: what a successful attempt publishes for downstream tasks and
// readers (GET /v1/instances/{id}/result), see package action/result: a
// shell action writes it to the file named by $AX_RESULT_FILE, an SDK
// handler calls SetResult, an HTTP action's JSON response body is its
// result (or the part resultFrom points to).

// ResultEnv is the environment variable that names a shell attempt's
// result file: private to the attempt (mode 0600 in a directory of mode
// 0700 of its own), empty when the command starts, removed when the
// attempt ends.
const ResultEnv = result.Env

// MaxResult bounds a result: its JSON, compacted.
const MaxResult = result.Max

// refuseResult fails a successful attempt whose result is refused: not
// retryable (a retry runs the same code), with why.
func refuseResult(res *Result, why string) {
	res.Success, res.Retryable, res.Result = false, false, nil
	res.Error = "result refused: " + why
}

// shellResult sets res.Result from a successful shell attempt's result
// file, or refuses it.
func shellResult(res *Result, f *result.File, red *redact.Masker) {
	if !res.Success {
		return
	}
	v, err := f.Read(red)
	if err != nil {
		refuseResult(res, "$"+ResultEnv+": "+err.Error())
		return
	}
	res.Result = v
}

// SetResult publishes v, marshalled to JSON (a json.RawMessage as it is),
// as the result of the SDK attempt whose handler's context is ctx, for
// downstream tasks ({{.Upstream.<task>.Result}}) and readers (GET
// /v1/instances/{id}/result). A later call replaces it; it is kept only
// if the handler returns nil. An error says why v cannot be a result (not
// JSON, over MaxResult, or ctx not a handler's context); such a result,
// or one that holds the value of a secret, fails the attempt without
// retry even if the handler returns nil.
func SetResult(ctx context.Context, v any) error { return result.Set(ctx, v) }

// sdkResult sets res.Result from what a successful SDK attempt's handler
// published, or refuses it.
func sdkResult(res *Result, box *result.Box, red *redact.Masker) {
	if !res.Success {
		return
	}
	v, err := box.Get(red)
	if err != nil {
		refuseResult(res, "SetResult: "+err.Error())
		return
	}
	res.Result = v
}

// Upstream results in templates: {{.Upstream.<task>.Result}} is the
// result's JSON text, {{.Upstream.<task>.Result.field}} a field of an
// object (and so on down), {{index .Upstream.<task>.Result.list 0}} an
// element of an array. Strings are marked values (quoted or escaped for
// their place like params); other values are JSON text, inserted as JSON
// values in a JSON body like a payload. Reading a result or a field that
// is not there fails the attempt: a missing upstream value never becomes
// an empty string silently.

// upstream is one upstream task's entry in templates.
type upstream struct {
	// Result is the task's result: a value, jsonValue, jsonObject or
	// jsonArray.
	Result any
}

// jsonObject is a JSON object of a result in a template: its fields by
// name, and its JSON text where it is printed.
type jsonObject map[string]any

// String returns the marker of o's JSON text.
func (o jsonObject) String() string { return jsonText(o) }

// jsonArray is a JSON array of a result in a template.
type jsonArray []any

// String returns the marker of a's JSON text.
func (a jsonArray) String() string { return jsonText(a) }

// MarshalJSON returns v, JSON text already.
func (v jsonValue) MarshalJSON() ([]byte, error) { return []byte(v), nil }

// jsonText is the marker of v's JSON text.
func jsonText(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	return jsonValue(bytes.TrimSuffix(b.Bytes(), []byte("\n"))).String()
}

// upstreamData returns the template entries of a job's upstream results;
// a result that does not decode (it was checked when it was kept) is left
// out.
func upstreamData(results map[string]json.RawMessage) map[string]upstream {
	out := make(map[string]upstream, len(results))
	for task, raw := range results {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		var v any
		if dec.Decode(&v) == nil {
			out[task] = upstream{Result: templateValue(v)}
		}
	}
	return out
}

// templateValue is v, decoded JSON, as templates see it.
func templateValue(v any) any {
	switch v := v.(type) {
	case string:
		return value(v)
	case map[string]any:
		o := make(jsonObject, len(v))
		for k, e := range v {
			o[k] = templateValue(e)
		}
		return o
	case []any:
		a := make(jsonArray, len(v))
		for i, e := range v {
			a[i] = templateValue(e)
		}
		return a
	case json.Number:
		return jsonValue(v)
	case bool:
		return jsonValue(strconv.FormatBool(v))
	}
	return jsonValue("null")
}

// noValue is what text/template prints for a value that is not there: an
// upstream task without a result, or a field its result does not have.
const noValue = "<no value>"

// errNoValue refuses a template that printed noValue.
var errNoValue = &valueError{msg: "it reads an upstream result, or a field of one, that is not there ({{.Upstream.<task>.Result...}}: the task published no result, or not that field)"}
