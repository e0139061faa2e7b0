package command

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"

	"github.com/ax-scheduler/ax/internal/jsonpath"
)

// MaxFile bounds a definition read by an apply command (-f).
const MaxFile = 1 << 20

// ReadFile reads the file name, stdin for "-" (an apply command's -f),
// at most max bytes.
func (o *IO) ReadFile(name string, max int) ([]byte, error) {
	var r io.Reader
	switch name {
	case "":
		return nil, errors.New("-f FILE (or - for stdin) is required")
	case "-":
		r = o.Stdin
	default:
		f, err := os.Open(name)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r = f
	}
	data, err := io.ReadAll(io.LimitReader(r, int64(max)+1))
	if err == nil && len(data) > max {
		err = fmt.Errorf("%s: larger than %d bytes", name, max)
	}
	return data, err
}

// DecodeJSON decodes the one JSON value of data into v as the API does:
// an unknown field is an error naming its path ("email.bogus"), and so
// is anything after the value.
func DecodeJSON(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		if jsonpath.IsUnknownField(err) {
			if p := jsonpath.UnknownFieldPath(data, reflect.TypeOf(v)); p != "" {
				return fmt.Errorf("unknown field %q", p)
			}
		}
		return err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("more than one JSON value")
	}
	return nil
}

// ReadJSON reads the file -f names (see ReadFile, at most MaxFile
// bytes) into v (see DecodeJSON).
func (o *IO) ReadJSON(name string, v any) error {
	data, err := o.ReadFile(name, MaxFile)
	if err != nil {
		return err
	}
	return DecodeJSON(data, v)
}
