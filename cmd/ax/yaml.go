package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"
)

// toYAML renders v as YAML through its JSON encoding, so that fields are
// named and ordered as in the API (model types encode themselves as
// JSON: durations, times, secret references). It is the one YAML encoder
// of the CLI: -o yaml of the read commands, task export and the diff of
// apply's dry run.
func toYAML(v any) ([]byte, error) {
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
					n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: k.(string)})
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
			n := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: x}
			if strings.Contains(x, "\n") {
				n.Style = yaml.LiteralStyle
			}
			return n, nil
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
