package command

import (
	"encoding/binary"
	"errors"

	"github.com/ax-scheduler/ax/model"
)

// Submit commands (and their results, fsm/submit_result.go) use a compact
// binary form rather than JSON: they carry up to 10,000 submissions each
// and are decoded on every replica, so encoding cost is paid three times
// per instance.

// errSubmit's words are those of the release that had the codec in
// package fsm: they reach results.
var errSubmit = errors.New("fsm: corrupt submit")

// EncodeSubmit returns the body of a TypeSubmit command.
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
	if len(s.Link) > 0 { // trailing, only when set (protocol 8)
		b = binary.AppendUvarint(b, uint64(len(s.Link)))
		b = append(b, s.Link...)
	}
	return b
}

// DecodeSubmit parses the body of a TypeSubmit command.
func DecodeSubmit(b []byte) (*Submit, error) {
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
	if len(b) > 0 {
		link, rest, err := readBytes(b)
		if err != nil || len(rest) > 0 {
			return nil, errSubmit
		}
		s.Link = link
	}
	return s, nil
}

// SubmitBody decodes and validates the body of a submit command.
func SubmitBody(c *Command) (*Submit, *model.Error) {
	s, err := DecodeSubmit(c.Body)
	if err != nil {
		return nil, model.Errorf(model.CodeInvalid, "undecodable submit body: %v", err)
	}
	return s, s.Validate(c)
}
