package fsm

import (
	"encoding/binary"
	"errors"

	"github.com/ax-scheduler/ax/model"
)

// A submit's result is compact binary, as its body is
// (fsm/command/submit_codec.go): one item per submission, in order.

var errSubmitResult = errors.New("fsm: corrupt submit")

// submitted is one item of a Submit result.
type submitted struct {
	id       uint64
	due      int64
	state    uint8
	existing bool
}

func encodeSubmitResult(items []submitted) []byte {
	b := make([]byte, 0, 2+len(items)*14)
	b = binary.AppendUvarint(b, uint64(len(items)))
	for _, it := range items {
		b = binary.BigEndian.AppendUint64(b, it.id)
		b = binary.AppendVarint(b, it.due)
		ex := uint8(0)
		if it.existing {
			ex = 1
		}
		b = append(b, it.state, ex)
	}
	return b
}

// DecodeSubmitResult turns a Submit command's result into the API answer.
func DecodeSubmitResult(r *Result) (*model.SubmitResult, error) {
	if r.Err != nil {
		return nil, r.Err
	}
	b := r.Data
	n, k := binary.Uvarint(b)
	if k <= 0 || n > 1<<20 || n > uint64(len(b)-k)/11 { // an item takes 11 bytes or more
		return nil, errSubmitResult
	}
	b = b[k:]
	out := &model.SubmitResult{Instances: make([]model.Submitted, n)}
	for i := range out.Instances {
		if len(b) < 8 {
			return nil, errSubmitResult
		}
		id := binary.BigEndian.Uint64(b)
		due, k := binary.Varint(b[8:])
		if k <= 0 || len(b) < 8+k+2 {
			return nil, errSubmitResult
		}
		st, ex := b[8+k], b[9+k]
		b = b[10+k:]
		out.Instances[i] = model.Submitted{ID: model.FormatID(id), ScheduledAt: model.UnixMilli(due), State: name(stateNames, st), Existing: ex == 1}
	}
	return out, nil
}
