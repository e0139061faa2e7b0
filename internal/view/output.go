package view

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
)

// Output formats of -o.
const (
	FormatTable = "table"
	FormatJSON  = "json"
	FormatYAML  = "yaml"
)

// Output is the -o flag of a read command: a table for people (the
// default), or the API's JSON, or the same as YAML. -json stays as an
// alias of -o json for the scripts that use it.
type Output struct {
	format string
	asJSON bool
}

// Register registers -o and -json on fs.
func (o *Output) Register(fs *flag.FlagSet) {
	fs.StringVar(&o.format, "o", FormatTable, "output format: table, json or yaml")
	fs.BoolVar(&o.asJSON, "json", false, "same as -o json")
}

// Check validates the flags; call it after parsing, before any request.
func (o *Output) Check() error {
	if o.format == "" { // a subcommand without -o
		o.format = FormatTable
	}
	if o.asJSON {
		if o.format != FormatTable && o.format != FormatJSON {
			return fmt.Errorf("-json and -o %s contradict each other", o.format)
		}
		o.format = FormatJSON
	}
	switch o.format {
	case FormatTable, FormatJSON, FormatYAML:
		return nil
	}
	return fmt.Errorf("-o %q: want table, json or yaml", o.format)
}

// Print writes v to w as JSON (indented) or YAML (the JSON's fields, in
// its order, and values: YAML, as task export writes), or, for a table,
// calls table.
func (o *Output) Print(w io.Writer, v any, table func(io.Writer) error) error {
	switch o.format {
	case FormatJSON:
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	case FormatYAML:
		b, err := YAML(v)
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	}
	return table(w)
}
