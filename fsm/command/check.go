package command

import (
	"errors"
	"math"
	"strconv"

	"github.com/ax-scheduler/ax/model"
)

// The checks the bodies' Validate methods share.

// asModelError turns a validation error into the *model.Error a result
// carries (nil for nil).
func asModelError(err error) *model.Error {
	if err == nil {
		return nil
	}
	var me *model.Error
	if errors.As(err, &me) {
		return me
	}
	return model.Errorf(model.CodeInvalid, "%v", err)
}

// at names the field a check is about; for an item of a list the name
// is built only when an error needs it (a submission checks thousands).
type at struct {
	name string
	i    int // the item's index in list name, or -1
	sub  string
}

// field names a plain field.
func field(name string) at { return at{name: name, i: -1} }

// item names field sub of item i of list name.
func item(name string, i int, sub string) at { return at{name: name, i: i, sub: sub} }

func (f at) String() string {
	if f.i < 0 {
		return f.name
	}
	s := f.name + "[" + strconv.Itoa(f.i) + "]"
	if f.sub != "" {
		s += "." + f.sub
	}
	return s
}

func checkName(f at, s string) *model.Error {
	if !model.ValidName(s) {
		return asModelError(model.ValidateName(f.String(), s))
	}
	return nil
}

func checkLen(f at, s string, limit int) *model.Error {
	if len(s) > limit {
		return model.FieldErrorf(f.String(), "longer than %d bytes", limit)
	}
	return nil
}

func checkTime(f at, ms int64) *model.Error {
	if ms < 0 || ms > MaxTimeMs {
		return model.FieldErrorf(f.String(), "time %d out of range", ms)
	}
	return nil
}

// checkSpan checks a duration added to the command's time.
func checkSpan(f at, c *Command, ms int64, least int64) *model.Error {
	if ms < least || ms > MaxTimeMs-c.Now {
		return model.FieldErrorf(f.String(), "%d ms out of range", ms)
	}
	return nil
}

func checkAttempt(f at, n int) *model.Error {
	if n < 1 || n > math.MaxUint32 {
		return model.FieldErrorf(f.String(), "attempt %d out of range", n)
	}
	return nil
}

func checkIDs(name string, ids []uint64, least int) *model.Error {
	if len(ids) < least || len(ids) > maxIDs {
		return model.FieldErrorf(name, "%d ids, want %d to %d", len(ids), least, maxIDs)
	}
	for i, id := range ids {
		if id == 0 {
			return model.FieldErrorf(item(name, i, "").String(), "instance id 0")
		}
	}
	return nil
}

func checkNodeID(name, id string) *model.Error {
	if id == "" {
		return model.FieldErrorf(name, "required")
	}
	return checkLen(field(name), id, maxNodeID)
}
