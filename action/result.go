package action

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/ax-scheduler/ax/action/redact"
	"github.com/ax-scheduler/ax/internal/jsonpath"
	"github.com/ax-scheduler/ax/model"
)

// Results: what a successful attempt publishes for downstream tasks and
// readers (GET /v1/instances/{id}/result): one JSON value of at most
// MaxResult bytes. A shell action writes it to the file named by
// $AX_RESULT_FILE, an SDK handler calls SetResult, an HTTP action's JSON
// response body is its result (or the part resultFrom points to).

// ResultEnv is the environment variable that names a shell attempt's
// result file: private to the attempt (mode 0600 in a directory of mode
// 0700 of its own), empty when the command starts, removed when the
// attempt ends.
const ResultEnv = "AX_RESULT_FILE"

// MaxResult bounds a result: its JSON, compacted.
const MaxResult = model.MaxResult

// resultReadLimit bounds what is read of a result file or of a response
// body a resultFrom pointer selects from.
const resultReadLimit = 1 << 20

// errResultSize refuses what is over resultReadLimit before compaction.
var errResultSize = fmt.Errorf("over the limit of %d bytes (64 KiB)", MaxResult)

// compactResult returns b (its surrounding white space trimmed) as
// compact JSON, nil for nothing, or why it cannot be a result: it is not
// JSON, it is over MaxResult, or it holds the value of one of the job's
// secrets (a result is readable with the reader role: a secret must not
// leak through it).
func compactResult(b []byte, red *redact.Masker) (json.RawMessage, error) {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return nil, nil
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err != nil {
		return nil, fmt.Errorf("not JSON: %v", err)
	}
	if buf.Len() > MaxResult {
		return nil, fmt.Errorf("%d bytes, over the limit of %d (64 KiB)", buf.Len(), MaxResult)
	}
	if s := buf.String(); red.Redact(s) != s {
		return nil, errors.New("it holds the value of a secret")
	}
	return buf.Bytes(), nil
}

// refuseResult fails a successful attempt whose result is refused: not
// retryable (a retry runs the same code), with why.
func refuseResult(res *Result, why string) {
	res.Success, res.Retryable, res.Result = false, false, nil
	res.Error = "result refused: " + why
}

// resultFile is a shell attempt's result file.
type resultFile struct {
	dir, path string
}

// newResultFile creates an empty result file in a new private directory.
func newResultFile() (*resultFile, error) {
	dir, err := os.MkdirTemp("", "ax-result-")
	if err != nil {
		return nil, fmt.Errorf("result file: %w", err)
	}
	path := filepath.Join(dir, "result.json")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err == nil {
		err = f.Close()
	}
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("result file: %w", err)
	}
	return &resultFile{dir: dir, path: path}, nil
}

// read returns what the command wrote to the file (nil for nothing, or a
// file it removed).
func (f *resultFile) read() ([]byte, error) {
	fh, err := os.Open(f.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	b, err := io.ReadAll(io.LimitReader(fh, resultReadLimit+1))
	if err == nil && len(b) > resultReadLimit {
		err = errResultSize
	}
	return b, err
}

func (f *resultFile) remove() { _ = os.RemoveAll(f.dir) }

// shellResult sets res.Result from a successful shell attempt's result
// file, or refuses it.
func shellResult(res *Result, f *resultFile, red *redact.Masker) {
	if !res.Success {
		return
	}
	b, err := f.read()
	if err == nil {
		res.Result, err = compactResult(b, red)
	}
	if err != nil {
		refuseResult(res, "$"+ResultEnv+": "+err.Error())
	}
}

// httpResult sets res.Result from a successful HTTP attempt's response
// body (body: what was read of it, over is true if there was more) with
// Content-Type ct, and returns a note for the output when a body that
// looks like a result is not kept ("" otherwise).
//
// With resultFrom, the body must be JSON and the pointer must select a
// value within the limits, else the result is refused and the attempt
// fails. Without it, a body declared JSON (application/json, */*+json)
// or that parses as JSON is the result when it is JSON within the
// limits; when it is not, the attempt is not failed (the action did not
// ask for a result): the output says why nothing was kept.
func httpResult(res *Result, resultFrom string, body []byte, over bool, ct string, red *redact.Masker) string {
	if !res.Success {
		return ""
	}
	if resultFrom != "" {
		if over {
			refuseResult(res, fmt.Sprintf("resultFrom %s: the response body is over %d bytes", resultFrom, resultReadLimit))
			return ""
		}
		if !json.Valid(body) {
			refuseResult(res, fmt.Sprintf("resultFrom %s: the response body is not JSON", resultFrom))
			return ""
		}
		v, err := jsonpath.Pointer(body, resultFrom)
		if err == nil {
			res.Result, err = compactResult(v, red)
		}
		if err != nil {
			refuseResult(res, "resultFrom "+resultFrom+": "+strings.TrimPrefix(err.Error(), resultFrom+": "))
		}
		return ""
	}
	declared := jsonContentType(ct)
	if !declared && (over || !json.Valid(body)) {
		return "" // not JSON: no result
	}
	var err error
	if over {
		err = errResultSize
	} else {
		res.Result, err = compactResult(body, red)
	}
	if err != nil {
		res.Result = nil
		return fmt.Sprintf("\n[ax: the response body is not kept as the attempt's result: %v; set resultFrom to pick a part]\n", err)
	}
	return ""
}

// jsonContentType reports whether a response's Content-Type is JSON.
func jsonContentType(ct string) bool {
	mt, _, _ := strings.Cut(strings.ToLower(ct), ";")
	mt = strings.TrimSpace(mt)
	return mt == "application/json" || strings.HasSuffix(mt, "+json")
}

// resultKey is the context key of an SDK attempt's result.
type resultKey struct{}

// resultBox holds what an SDK handler published with SetResult.
type resultBox struct {
	mu  sync.Mutex
	v   json.RawMessage
	err error
}

// SetResult publishes v, marshalled to JSON (a json.RawMessage as it is),
// as the result of the SDK attempt whose handler's context is ctx, for
// downstream tasks ({{.Upstream.<task>.Result}}) and readers (GET
// /v1/instances/{id}/result). A later call replaces it; it is kept only
// if the handler returns nil. An error says why v cannot be a result (not
// JSON, over MaxResult, holding a secret's value, or ctx not a handler's
// context); such a result fails the attempt without retry even if the
// handler returns nil.
func SetResult(ctx context.Context, v any) error {
	box, ok := ctx.Value(resultKey{}).(*resultBox)
	if !ok {
		return errors.New("SetResult: ctx is not the context of an SDK handler")
	}
	b, err := json.Marshal(v)
	if err == nil {
		b, err = compactResult(b, nil)
	}
	box.mu.Lock()
	defer box.mu.Unlock()
	box.v, box.err = b, err
	return err
}

// sdkResult sets res.Result from what a successful SDK attempt's handler
// published, or refuses it.
func sdkResult(res *Result, box *resultBox, red *redact.Masker) {
	if !res.Success {
		return
	}
	box.mu.Lock()
	v, err := box.v, box.err
	box.mu.Unlock()
	if err == nil {
		v, err = compactResult(v, red)
	}
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
