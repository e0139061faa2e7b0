package command

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"strconv"

	"github.com/ax-scheduler/ax/model"
)

// CompleteBatch bodies, one per batch of executor reports, are written on
// the hottest execution path and decoded by every replica, so they use a
// compact binary form. A body that starts with '[' is the JSON form of
// earlier versions, still accepted when a log is replayed.

// CompleteBatchVersion is the first byte of a binary complete_batch body.
const CompleteBatchVersion = 1

// flagResult marks an item that carries a result after its output
// (protocol 8).
const flagResult = 1 << 5

// errComplete's words are those of the release that had the codec in
// package fsm: they reach results.
var errComplete = errors.New("fsm: corrupt complete_batch body")

// EncodeCompleteBatch encodes the body of a TypeCompleteBatch command.
func EncodeCompleteBatch(cs []Complete) []byte {
	size := 8
	for i := range cs {
		r := &cs[i].Report
		size += 32 + len(r.Executor) + len(r.Host) + len(r.Error) + len(r.Output) + len(r.Result)
	}
	b := make([]byte, 0, size)
	b = append(b, CompleteBatchVersion)
	b = binary.AppendUvarint(b, uint64(len(cs)))
	for i := range cs {
		c := &cs[i]
		r := &c.Report
		var flags byte
		for bit, on := range []bool{r.Success, r.Retryable, r.TimedOut, r.Canceled, r.Interrupted, len(r.Result) > 0} {
			if on {
				flags |= 1 << bit
			}
		}
		b = append(b, flags)
		b = binary.AppendUvarint(b, c.ID)
		for _, v := range []int64{int64(c.Attempt), int64(r.PID), int64(r.ExitCode), int64(r.HTTPStatus)} {
			b = binary.AppendVarint(b, v)
		}
		for _, s := range []string{r.Executor, r.Host, r.Error, r.Output} {
			b = binary.AppendUvarint(b, uint64(len(s)))
			b = append(b, s...)
		}
		if len(r.Result) > 0 {
			// Protocol 8: only then does the leader keep a result in a
			// report (an older decoder would refuse the body).
			b = binary.AppendUvarint(b, uint64(len(r.Result)))
			b = append(b, r.Result...)
		}
	}
	return b
}

// DecodeCompleteBatch parses the body of a TypeCompleteBatch command,
// binary or (as earlier versions wrote it) JSON.
func DecodeCompleteBatch(b []byte) ([]Complete, error) {
	if len(b) > 0 && b[0] == '[' {
		var cs []Complete
		err := json.Unmarshal(b, &cs)
		return cs, legacyJSONError(err)
	}
	if len(b) < 2 || b[0] != CompleteBatchVersion {
		return nil, errComplete
	}
	b = b[1:]
	n, k := binary.Uvarint(b)
	// Every item takes at least 10 bytes (flags, id, four varints, four
	// lengths): a count the body cannot hold must not make it allocate.
	if k <= 0 || n > uint64(len(b)-k)/10 {
		return nil, errComplete
	}
	b = b[k:]
	cs := make([]Complete, n)
	for i := range cs {
		c := &cs[i]
		r := &c.Report
		if len(b) == 0 {
			return nil, errComplete
		}
		flags := b[0]
		b = b[1:]
		r.Success, r.Retryable, r.TimedOut, r.Canceled = flags&1 != 0, flags&2 != 0, flags&4 != 0, flags&8 != 0
		r.Interrupted = flags&16 != 0 // protocol 6; ignored before
		if c.ID, k = binary.Uvarint(b); k <= 0 {
			return nil, errComplete
		}
		b = b[k:]
		var v [4]int64
		for j := range v {
			if v[j], k = binary.Varint(b); k <= 0 {
				return nil, errComplete
			}
			b = b[k:]
		}
		c.Attempt, r.PID, r.ExitCode, r.HTTPStatus = int(v[0]), int(v[1]), int(v[2]), int(v[3])
		var s [4][]byte
		for j := range s {
			f, rest, err := readBytes(b)
			if err != nil {
				return nil, errComplete
			}
			s[j], b = f, rest
		}
		r.Executor, r.Host, r.Error, r.Output = string(s[0]), string(s[1]), string(s[2]), string(s[3])
		if flags&flagResult != 0 {
			f, rest, err := readBytes(b)
			if err != nil || len(f) == 0 {
				return nil, errComplete
			}
			r.Result, b = append([]byte(nil), f...), rest
		}
	}
	if len(b) != 0 {
		return nil, errComplete
	}
	return cs, nil
}

// CompleteBatchBody decodes and validates the body of a complete_batch
// command.
func CompleteBatchBody(c *Command) ([]Complete, *model.Error) {
	cs, err := DecodeCompleteBatch(c.Body)
	if err != nil {
		return nil, model.Errorf(model.CodeInvalid, "undecodable %s body: %v", c.Type, err)
	}
	return cs, ValidateCompleteBatch(c, cs)
}

// ValidateCompleteBatch checks a batch of reports as the API does: 1 to
// model.MaxReports reports, all from one executor.
func ValidateCompleteBatch(c *Command, cs []Complete) *model.Error {
	if len(cs) == 0 || len(cs) > model.MaxReports {
		return model.FieldErrorf("", "%d reports, want 1 to %d", len(cs), model.MaxReports)
	}
	for i := range cs {
		if e := cs[i].Validate(c); e != nil {
			e.Field = "[" + strconv.Itoa(i) + "]." + e.Field
			return e
		}
		if cs[i].Report.Executor != cs[0].Report.Executor {
			return model.FieldErrorf(item("", i, "report.executor").String(), "all reports of a batch come from one executor")
		}
	}
	return nil
}
