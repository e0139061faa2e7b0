package fsm

import (
	"encoding/binary"
	"errors"
	"strconv"

	"github.com/ax-scheduler/ax/model"
)

// Attempt records use a compact binary form: one is written for every
// attempt that ends, on every replica.

var outcomeNames = []string{"", model.OutcomeSuccess, model.OutcomeFailed, model.OutcomeTimeout,
	model.OutcomeLost, model.OutcomeCanceled, model.OutcomeTerminated, model.OutcomeInterrupted}

var errAttempt = errors.New("fsm: corrupt attempt record")

const attemptVersion = 1

func encodeAttempt(a *model.Attempt) []byte {
	b := make([]byte, 0, 64+len(a.Executor)+len(a.Host)+len(a.Error)+len(a.Output))
	b = append(b, attemptVersion, code(outcomeNames, a.Outcome))
	hasExit := int64(0)
	exit := int64(0)
	if a.ExitCode != nil {
		hasExit, exit = 1, int64(*a.ExitCode)
	}
	for _, v := range []int64{int64(a.Number), int64(a.PID), a.StartedAt.Millis(), a.EndedAt.Millis(), hasExit, exit, int64(a.HTTPStatus)} {
		b = binary.AppendVarint(b, v)
	}
	for _, s := range []string{a.Executor, a.Host, a.Error, a.Output} {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	return b
}

func decodeAttempt(id uint64, b []byte) (model.Attempt, error) {
	var a model.Attempt
	if len(b) < 2 || b[0] != attemptVersion {
		return a, errAttempt
	}
	a.Outcome = name(outcomeNames, b[1])
	b = b[2:]
	var v [7]int64
	for i := range v {
		x, n := binary.Varint(b)
		if n <= 0 {
			return a, errAttempt
		}
		v[i] = x
		b = b[n:]
	}
	a.Number, a.PID = int(v[0]), int(v[1])
	a.StartedAt, a.EndedAt = model.UnixMilli(v[2]), model.UnixMilli(v[3])
	if v[4] == 1 {
		ec := int(v[5])
		a.ExitCode = &ec
	}
	a.HTTPStatus = int(v[6])
	var s [4][]byte
	for i := range s {
		f, rest, err := readBytes(b)
		if err != nil {
			return a, errAttempt
		}
		s[i] = f
		b = rest
	}
	a.Executor, a.Host, a.Error, a.Output = string(s[0]), string(s[1]), string(s[2]), string(s[3])
	a.ExecutionID = model.FormatID(id) + "-" + strconv.Itoa(a.Number)
	return a, nil
}
