package fsm

import (
	"encoding/binary"
	"encoding/json"
	"errors"
)

// CompleteBatch bodies, one per batch of executor reports, are written on
// the hottest execution path and decoded by every replica, so they use a
// compact binary form. A body that starts with '[' is the JSON form of
// earlier versions, still accepted when a log is replayed.

const completeVersion = 1

var errComplete = errors.New("fsm: corrupt complete_batch body")

// EncodeCompleteBatch encodes the body of a CmdCompleteBatch command.
func EncodeCompleteBatch(cs []Complete) []byte {
	size := 8
	for i := range cs {
		r := &cs[i].Report
		size += 32 + len(r.Executor) + len(r.Host) + len(r.Error) + len(r.Output)
	}
	b := make([]byte, 0, size)
	b = append(b, completeVersion)
	b = binary.AppendUvarint(b, uint64(len(cs)))
	for i := range cs {
		c := &cs[i]
		r := &c.Report
		var flags byte
		for bit, on := range []bool{r.Success, r.Retryable, r.TimedOut, r.Canceled, r.Interrupted} {
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
	}
	return b
}

// DecodeCompleteBatch decodes the body of a CmdCompleteBatch command.
func DecodeCompleteBatch(b []byte) ([]Complete, error) { return decodeCompleteBatch(b) }

func decodeCompleteBatch(b []byte) ([]Complete, error) {
	if len(b) > 0 && b[0] == '[' {
		var cs []Complete
		err := json.Unmarshal(b, &cs)
		return cs, err
	}
	if len(b) < 2 || b[0] != completeVersion {
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
	}
	if len(b) != 0 {
		return nil, errComplete
	}
	return cs, nil
}
