package complete

import (
	"context"
	"flag"
	"slices"
	"testing"
)

// TestCompleter_Complete walks a small table: commands, a group's words,
// a leaf's flags, flag values and argument values, hidden commands left
// out.
func TestCompleter_Complete(t *testing.T) {
	t.Parallel()
	flags := func() *flag.FlagSet {
		fs := flag.NewFlagSet("get", flag.ContinueOnError)
		fs.String("o", "table", "")
		fs.Bool("w", false, "")
		return fs
	}
	c := Completer{
		Commands: []Command{
			{Name: "get", Flags: flags, Args: func(context.Context, []string) []string { return []string{"beta", "alpha"} }},
			{Name: "token", Subs: []Command{{Name: "create", Flags: flags}, {Name: "list", Flags: flags}}},
			{Name: "secret", Hidden: true, Flags: flags},
		},
		Values: func(_ context.Context, name string, _ []string) []string {
			if name == "o" {
				return []string{"yaml", "json"}
			}
			return nil
		},
	}
	for _, tc := range []struct {
		words, want []string
	}{
		{[]string{""}, []string{"get", "help", "token"}},
		{[]string{"help", "t"}, []string{"token"}},
		{[]string{"token", ""}, []string{"create", "list"}},
		{[]string{"token", "create", "-"}, []string{"-o", "-w"}},
		{[]string{"get", "-o", ""}, []string{"json", "yaml"}},
		{[]string{"get", "-o=", ""}, []string{"alpha", "beta"}},
		{[]string{"get", "-w", "a"}, []string{"alpha"}},
		{[]string{"get", "alpha", ""}, nil},
		{[]string{"secret", ""}, nil},
		{[]string{"token", "list", "x", ""}, nil},
	} {
		if got := c.Complete(context.Background(), tc.words); !slices.Equal(got, tc.want) {
			t.Errorf("Complete(%q) = %q, want %q", tc.words, got, tc.want)
		}
	}
}
