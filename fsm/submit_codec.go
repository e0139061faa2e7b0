package fsm

import (
	"encoding/binary"
	"errors"

	"github.com/ax-scheduler/ax/model"
)

// Submit commands and their results use a compact binary form rather than
// JSON: they carry up to 10,000 submissions each and are decoded on every
// replica, so encoding cost is paid three times per instance.

var errSubmit = errors.New("fsm: corrupt submit")

// EncodeSubmit returns the body of a CmdSubmit command.
func EncodeSubmit(s *Submit) []byte {
	size := 16 + len(s.Task)
	for _, it := range s.Items {
		size += 24 + len(it.Key) + len(it.Payload)
	}
	b := make([]byte, 0, size)
	b = binary.AppendUvarint(b, uint64(len(s.Task)))
	b = append(b, s.Task...)
	b = binary.AppendUvarint(b, uint64(len(s.Items)))
	for _, it := range s.Items {
		b = binary.AppendVarint(b, it.DelayMs)
		b = binary.AppendVarint(b, it.AtMs)
		b = binary.AppendUvarint(b, uint64(len(it.Key)))
		b = append(b, it.Key...)
		b = binary.AppendUvarint(b, uint64(len(it.Payload)))
		b = append(b, it.Payload...)
	}
	return b
}

func decodeSubmit(b []byte) (*Submit, error) {
	task, b, err := readBytes(b)
	if err != nil {
		return nil, errSubmit
	}
	n, k := binary.Uvarint(b)
	// An item takes at least 4 bytes (two varints, two lengths): a count
	// the body cannot hold must not make it allocate.
	if k <= 0 || n > 1<<20 || n > uint64(len(b)-k)/4 {
		return nil, errSubmit
	}
	b = b[k:]
	s := &Submit{Task: string(task), Items: make([]SubmitItem, n)}
	for i := range s.Items {
		it := &s.Items[i]
		if it.DelayMs, k = binary.Varint(b); k <= 0 {
			return nil, errSubmit
		}
		b = b[k:]
		if it.AtMs, k = binary.Varint(b); k <= 0 {
			return nil, errSubmit
		}
		b = b[k:]
		var key, payload []byte
		if key, b, err = readBytes(b); err != nil {
			return nil, errSubmit
		}
		if payload, b, err = readBytes(b); err != nil {
			return nil, errSubmit
		}
		it.Key = string(key)
		if len(payload) > 0 {
			it.Payload = payload
		}
	}
	return s, nil
}

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
		return nil, errSubmit
	}
	b = b[k:]
	out := &model.SubmitResult{Instances: make([]model.Submitted, n)}
	for i := range out.Instances {
		if len(b) < 8 {
			return nil, errSubmit
		}
		id := binary.BigEndian.Uint64(b)
		due, k := binary.Varint(b[8:])
		if k <= 0 || len(b) < 8+k+2 {
			return nil, errSubmit
		}
		st, ex := b[8+k], b[9+k]
		b = b[10+k:]
		out.Instances[i] = model.Submitted{ID: model.FormatID(id), ScheduledAt: model.UnixMilli(due), State: name(stateNames, st), Existing: ex == 1}
	}
	return out, nil
}
