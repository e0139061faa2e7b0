// Package yamljson turns YAML task definitions into the JSON the API
// takes, one way for ax task apply (which converts before sending) and
// for PUT /v1/tasks/{name} with a YAML body (which the console sends):
// yaml.v3's reading, mappings with string keys, no infinite or NaN
// numbers.
package yamljson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"

	"go.yaml.in/yaml/v3"
)

// Document converts data, one YAML document holding a mapping, to JSON.
// Its errors say the line where yaml.v3 knows it.
func Document(data []byte) ([]byte, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var n yaml.Node
	if err := dec.Decode(&n); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errors.New("empty: a task definition (a YAML mapping) is required")
		}
		return nil, err
	}
	var more yaml.Node
	if err := dec.Decode(&more); !errors.Is(err, io.EOF) {
		if err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("line %d: a second document: one task definition is taken", more.Line)
	}
	if len(n.Content) == 0 || n.Content[0].Kind != yaml.MappingNode {
		return nil, errors.New("not a mapping: a task definition is a YAML mapping of its fields")
	}
	var v any
	if err := n.Content[0].Decode(&v); err != nil {
		return nil, err
	}
	j, err := Value(v, "")
	if err != nil {
		return nil, err
	}
	return json.Marshal(j)
}

// Value turns a value decoded from YAML into one encoding/json can
// encode: mappings with string keys (a number or boolean key is written
// as its text, as kubectl does), and no infinite or NaN floats. path
// names v in errors ("" for the document).
func Value(v any, path string) (any, error) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			j, err := Value(e, joinPath(path, k))
			if err != nil {
				return nil, err
			}
			x[k] = j
		}
		return x, nil
	case map[any]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			var ks string
			switch k.(type) {
			case string, int, int64, uint64, float64, bool:
				ks = fmt.Sprint(k)
			default:
				return nil, fmt.Errorf("%s: a mapping key must be a string, got %T", orTop(path), k)
			}
			j, err := Value(e, joinPath(path, ks))
			if err != nil {
				return nil, err
			}
			out[ks] = j
		}
		return out, nil
	case []any:
		for i, e := range x {
			j, err := Value(e, path+"["+strconv.Itoa(i)+"]")
			if err != nil {
				return nil, err
			}
			x[i] = j
		}
		return x, nil
	case float64:
		if math.IsInf(x, 0) || math.IsNaN(x) {
			return nil, fmt.Errorf("%s: %v is not a JSON number", orTop(path), x)
		}
	}
	return v, nil
}

func joinPath(path, k string) string {
	if path == "" {
		return k
	}
	return path + "." + k
}

func orTop(path string) string {
	if path == "" {
		return "the document"
	}
	return path
}
