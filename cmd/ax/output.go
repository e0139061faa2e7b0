package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/ax-scheduler/ax/model"
)

// Output formats of -o.
const (
	formatTable = "table"
	formatJSON  = "json"
	formatYAML  = "yaml"
)

// output is the -o flag of a read command: a table for people (the
// default), or the API's JSON, or the same as YAML. -json stays as an
// alias of -o json for the scripts that use it.
type output struct {
	format string
	asJSON bool
}

func (o *output) register(fs *flag.FlagSet) {
	fs.StringVar(&o.format, "o", formatTable, "output format: table, json or yaml")
	fs.BoolVar(&o.asJSON, "json", false, "same as -o json")
}

// check validates the flags; call it after parsing, before any request.
func (o *output) check() error {
	if o.format == "" { // a subcommand without -o
		o.format = formatTable
	}
	if o.asJSON {
		if o.format != formatTable && o.format != formatJSON {
			return fmt.Errorf("-json and -o %s contradict each other", o.format)
		}
		o.format = formatJSON
	}
	switch o.format {
	case formatTable, formatJSON, formatYAML:
		return nil
	}
	return fmt.Errorf("-o %q: want table, json or yaml", o.format)
}

// print writes v to w as JSON (indented) or YAML (the JSON's fields, in
// its order, and values: toYAML, as task export writes), or, for a table,
// calls table.
func (o *output) print(w io.Writer, v any, table func(io.Writer) error) error {
	switch o.format {
	case formatJSON:
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	case formatYAML:
		b, err := toYAML(v)
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	}
	return table(w)
}

// newTable returns the aligned writer of every table; the caller
// flushes it.
func newTable(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
}

// row writes one tab-separated table row.
func row(w io.Writer, cells ...any) {
	for i, c := range cells {
		if i > 0 {
			fmt.Fprint(w, "\t")
		}
		fmt.Fprint(w, c)
	}
	fmt.Fprintln(w)
}

// fmtTime is t in UTC to the second, "-" for the zero time.
func fmtTime(t model.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

// age is how long ago t was ("3h12m"), or "in 5m" for a time to come;
// "-" for the zero time.
func age(t model.Time, now time.Time) string {
	if t.IsZero() {
		return "-"
	}
	if d := t.Sub(now); d > 0 {
		return "in " + human(d)
	}
	return human(now.Sub(t.Time))
}

// ago is age with "ago" after a past time: "3h12m ago", "in 5m".
func ago(t model.Time, now time.Time) string {
	a := age(t, now)
	if a == "-" || strings.HasPrefix(a, "in ") {
		return a
	}
	return a + " ago"
}

// human is d in at most two units, as people read a duration: 350ms,
// 12s, 3m12s, 3h12m, 2d3h.
func human(d time.Duration) string {
	switch {
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < 10*time.Second:
		return d.Round(100 * time.Millisecond).String()
	case d < time.Minute:
		return d.Round(time.Second).String()
	case d < time.Hour:
		d = d.Round(time.Second)
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	case d < 24*time.Hour:
		d = d.Round(time.Minute)
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	}
	d = d.Round(time.Hour)
	return fmt.Sprintf("%dd%dh", int(d.Hours())/24, int(d.Hours())%24)
}

// orDash is s, or "-" when it is empty.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// ellipsis cuts s to n runes on one line, marking a cut with "...".
func ellipsis(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-3]) + "..."
	}
	return s
}
