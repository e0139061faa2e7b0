package result

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
	"strings"
	"sync"

	"github.com/ax-scheduler/ax/action/redact"
	"github.com/ax-scheduler/ax/internal/jsonpath"
	"github.com/ax-scheduler/ax/model"
)

// Env is the environment variable that names a shell attempt's result
// file.
const Env = "AX_RESULT_FILE"

// Max bounds a result: its JSON, compacted.
const Max = model.MaxResult

// ReadLimit bounds what is read of a result file or of a response body a
// resultFrom pointer selects from.
const ReadLimit = 1 << 20

// errSize refuses what is over ReadLimit before compaction.
var errSize = fmt.Errorf("over the limit of %d bytes (64 KiB)", Max)

// Compact returns b (its surrounding white space trimmed) as compact
// JSON, nil for nothing, or why it cannot be a result: it is not JSON,
// it is over Max, or it holds the value of a secret red masks (a result
// is readable with the reader role: a secret must not leak through it).
func Compact(b []byte, red *redact.Masker) (json.RawMessage, error) {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return nil, nil
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err != nil {
		return nil, fmt.Errorf("not JSON: %v", err)
	}
	if buf.Len() > Max {
		return nil, fmt.Errorf("%d bytes, over the limit of %d (64 KiB)", buf.Len(), Max)
	}
	if s := buf.String(); red.Redact(s) != s {
		return nil, errors.New("it holds the value of a secret")
	}
	return buf.Bytes(), nil
}

// File is a shell attempt's result file: empty when the command starts,
// mode 0600 in a directory of mode 0700 of its own.
type File struct {
	dir, path string
}

// NewFile creates an empty result file in a new private directory.
func NewFile() (*File, error) {
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
	return &File{dir: dir, path: path}, nil
}

// Path is the file's path, the value of Env.
func (f *File) Path() string { return f.path }

// Read returns the result the command wrote to the file (nil for
// nothing, or a file it removed), compacted, or why it cannot be one.
func (f *File) Read(red *redact.Masker) (json.RawMessage, error) {
	fh, err := os.Open(f.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	b, err := io.ReadAll(io.LimitReader(fh, ReadLimit+1))
	if err == nil && len(b) > ReadLimit {
		err = errSize
	}
	if err != nil {
		return nil, err
	}
	return Compact(b, red)
}

// Remove removes the file and its directory.
func (f *File) Remove() { _ = os.RemoveAll(f.dir) }

// BodyLimit is how much of a 2xx response body to read for its result:
// Max+1 bytes, or ReadLimit+1 for a resultFrom pointer to select from.
func BodyLimit(resultFrom string) int64 {
	if resultFrom != "" {
		return ReadLimit + 1
	}
	return Max + 1
}

// FromHTTP returns the result of a successful HTTP attempt from its
// response body (body: what was read of it, up to BodyLimit; over is true
// if there was more) with Content-Type ct.
//
// With resultFrom, the body must be JSON and the pointer must select a
// value within the limits, else the result is refused (refused says
// why). Without it, a body declared JSON (application/json, */*+json) or
// that parses as JSON is the result when it can be one; when it cannot,
// note says why for the attempt's output (the action did not ask for a
// result, so it is not refused).
func FromHTTP(resultFrom string, body []byte, over bool, ct string, red *redact.Masker) (res json.RawMessage, note string, refused error) {
	if resultFrom != "" {
		var err error
		switch {
		case over:
			err = fmt.Errorf("the response body is over %d bytes", ReadLimit)
		case !json.Valid(body):
			err = errors.New("the response body is not JSON")
		default:
			if res, err = jsonpath.Pointer(body, resultFrom); err == nil {
				res, err = Compact(res, red)
			}
		}
		if err != nil {
			return nil, "", fmt.Errorf("resultFrom %s: %s", resultFrom, strings.TrimPrefix(err.Error(), resultFrom+": "))
		}
		return res, "", nil
	}
	if !jsonContentType(ct) && (over || !json.Valid(body)) {
		return nil, "", nil // not JSON: no result
	}
	err := errSize
	if !over {
		res, err = Compact(body, red)
	}
	if err != nil {
		return nil, fmt.Sprintf("\n[ax: the response body is not kept as the attempt's result: %v; set resultFrom to pick a part]\n", err), nil
	}
	return res, "", nil
}

// jsonContentType reports whether a response's Content-Type is JSON.
func jsonContentType(ct string) bool {
	mt, _, _ := strings.Cut(strings.ToLower(ct), ";")
	mt = strings.TrimSpace(mt)
	return mt == "application/json" || strings.HasSuffix(mt, "+json")
}

// boxKey is the context key of an SDK attempt's Box.
type boxKey struct{}

// Box holds what an SDK handler published with Set.
type Box struct {
	mu  sync.Mutex
	v   json.RawMessage
	err error
}

// WithBox returns ctx with a new Box for Set, and the Box.
func WithBox(ctx context.Context) (context.Context, *Box) {
	b := &Box{}
	return context.WithValue(ctx, boxKey{}, b), b
}

// Set publishes v, marshalled to JSON (a json.RawMessage as it is), in
// the Box of ctx (see WithBox). A later call replaces it. The error says
// why v cannot be a result (not JSON, over Max, no Box in ctx); Get then
// says it again.
func Set(ctx context.Context, v any) error {
	box, ok := ctx.Value(boxKey{}).(*Box)
	if !ok {
		return errors.New("SetResult: ctx is not the context of an SDK handler")
	}
	b, err := json.Marshal(v)
	if err == nil {
		b, err = Compact(b, nil)
	}
	box.mu.Lock()
	defer box.mu.Unlock()
	box.v, box.err = b, err
	return err
}

// Get returns what was published in b (nil for nothing), checked against
// the secrets red masks, or why it cannot be a result.
func (b *Box) Get(red *redact.Masker) (json.RawMessage, error) {
	b.mu.Lock()
	v, err := b.v, b.err
	b.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return Compact(v, red)
}
