package cli

import (
	"flag"
	"fmt"
	"strings"
)

// MultiFlag collects a repeatable string flag.
type MultiFlag []string

// String implements flag.Value.
func (m *MultiFlag) String() string { return strings.Join(*m, ",") }

// Set implements flag.Value: each use of the flag adds a value.
func (m *MultiFlag) Set(v string) error { *m = append(*m, v); return nil }

// Pairs turns key=value entries into a map (nil when there are none);
// what names the flag in the error.
func (m MultiFlag) Pairs(what string) (map[string]string, error) {
	var out map[string]string
	for _, p := range m {
		k, v, ok := strings.Cut(p, "=")
		if !ok {
			return nil, fmt.Errorf("%s wants key=value, got %q", what, p)
		}
		if out == nil {
			out = map[string]string{}
		}
		out[k] = v
	}
	return out, nil
}

// ListFlag collects a repeatable, comma-separable flag.
type ListFlag []string

// String implements flag.Value.
func (l *ListFlag) String() string { return strings.Join(*l, ",") }

// Set implements flag.Value: a use of the flag adds its comma-separated
// values.
func (l *ListFlag) Set(s string) error {
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			*l = append(*l, v)
		}
	}
	return nil
}

// ParseLabels reads labels given as k=v,k=v (nil for "").
func ParseLabels(s string) (map[string]string, error) {
	if s == "" {
		return nil, nil
	}
	out := map[string]string{}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("labels: want k=v, got %q", kv)
		}
		out[k] = v
	}
	return out, nil
}

// ParseInterspersed parses flags that may come after positional arguments
// ("ax task get foo -addr x").
func ParseInterspersed(fs *flag.FlagSet, args []string) error {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return err
		}
		args = fs.Args()
		if len(args) == 0 {
			break
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
	return fs.Parse(pos)
}

// SelectorFlag registers a selection by labels k=v on fs, spelled -l
// (kubectl's, documented) and -label (accepted for scripts): both add
// to m.
func SelectorFlag(fs *flag.FlagSet, m *MultiFlag, help string) {
	fs.Var(m, "l", help)
	fs.Var(m, "label", "same as -l")
}
