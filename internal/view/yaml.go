package view

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"go.yaml.in/yaml/v3"
)

// YAML renders v as YAML through its JSON encoding, so that fields are
// named and ordered as in the API (model types encode themselves as
// JSON: durations, times, secret references). It is the one YAML encoder
// of the CLI: -o yaml of the read commands, task export and the diff of
// apply's dry run.
func YAML(v any) ([]byte, error) {
	j, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	n, err := yamlFromJSON(j)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(n); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// strNode is the YAML node of a string, styled so that YAML readers read
// the string back: a literal block when it spans lines, unless its first
// line with text starts with a space or a tab (yaml.v3 writes such a
// block but cannot always read it back: go-yaml issues 76, 383, 399), then
// double quotes; plain, unless a YAML 1.1 reader (PyYAML, yaml.v2) would
// read a bool or a number. yaml.v3 alone, given a node, quotes only what
// YAML 1.2 would misread, so "yes", "off" or "1:30" would come out plain.
func strNode(s string) *yaml.Node {
	n := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s}
	switch {
	case strings.Contains(s, "\n"):
		n.Style = yaml.LiteralStyle
		if t := strings.TrimLeft(s, "\n"); strings.HasPrefix(t, " ") || strings.HasPrefix(t, "\t") {
			n.Style = yaml.DoubleQuotedStyle
		}
	case yaml11Scalar(s):
		n.Style = yaml.DoubleQuotedStyle
	}
	return n
}

// base60 is YAML 1.1's sexagesimal number (190:20:30), as yaml.v3 and
// yaml.v2 quote it.
var base60 = regexp.MustCompile(`^[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?$`)

// yaml11Scalar reports whether plain s is a bool or a number in YAML 1.1
// but a string in YAML 1.2 (the cases yaml.v3 quotes in a Go string).
func yaml11Scalar(s string) bool {
	switch s {
	case "y", "Y", "yes", "Yes", "YES", "n", "N", "no", "No", "NO",
		"on", "On", "ON", "off", "Off", "OFF":
		return true
	}
	return base60.MatchString(s)
}

// yamlFromJSON builds the YAML node of a JSON value, keeping the order of
// object keys and the exact text of numbers.
func yamlFromJSON(data []byte) (*yaml.Node, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var value func() (*yaml.Node, error)
	value = func() (*yaml.Node, error) {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		switch x := tok.(type) {
		case json.Delim:
			n := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
			if x == '[' {
				n.Kind, n.Tag = yaml.SequenceNode, "!!seq"
			}
			for dec.More() {
				if n.Kind == yaml.MappingNode {
					k, err := dec.Token()
					if err != nil {
						return nil, err
					}
					n.Content = append(n.Content, strNode(k.(string)))
				}
				c, err := value()
				if err != nil {
					return nil, err
				}
				n.Content = append(n.Content, c)
			}
			if _, err := dec.Token(); err != nil { // the closing delimiter
				return nil, err
			}
			if len(n.Content) == 0 {
				n.Style = yaml.FlowStyle // {} or []
			}
			return n, nil
		case string:
			return strNode(x), nil
		case json.Number:
			tag := "!!int"
			if strings.ContainsAny(x.String(), ".eE") {
				tag = "!!float"
			}
			return &yaml.Node{Kind: yaml.ScalarNode, Tag: tag, Value: x.String()}, nil
		case bool:
			return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: fmt.Sprint(x)}, nil
		case nil:
			return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "null"}, nil
		}
		return nil, fmt.Errorf("unexpected JSON token %v", tok)
	}
	return value()
}
