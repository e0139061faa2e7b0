package main

import (
	"context"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestComplete walks the real command table, with the flags of each
// command's own flag set.
func TestComplete(t *testing.T) {
	t.Parallel()
	m, _, _ := newTestMain(nil, "")
	cp := completer{io: &m.IO, tasks: func(context.Context, []string) []string { return []string{"daily", "tick"} }}
	for _, tc := range []struct {
		words []string
		want  []string
	}{
		{[]string{""}, slices.Sorted(slices.Values(append(visibleCommands(), "help")))},
		{[]string{"ta"}, []string{"task"}},
		{[]string{"help", "cl"}, []string{"cluster"}},
		{[]string{"help", "task", ""}, nil},
		{[]string{"task", "h"}, []string{"history"}},
		{[]string{"acl", "token", ""}, []string{"create", "list", "revoke"}},
		{[]string{"acl", "token", "create", "-r"}, []string{"-role"}},
		{[]string{"acl", "token", "create", "-role", "o"}, []string{"operator"}},
		{[]string{"tls", ""}, []string{"ca", "cert"}},
		{[]string{"task", "list", "-l"}, []string{"-l", "-label"}},
		{[]string{"task", "list", "-paused", ""}, []string{"false", "true"}},
		{[]string{"instance", "list", "-o", ""}, []string{"json", "table", "yaml"}},
		{[]string{"instance", "list", "-o=", ""}, nil},
		{[]string{"instance", "list", "-task", "t"}, []string{"tick"}},
		{[]string{"instance", "list", "-state", "FA"}, []string{"FAILED"}},
		{[]string{"instance", "list", "-w", ""}, nil},
		{[]string{"trigger", ""}, []string{"daily", "tick"}},
		{[]string{"trigger", "-addr", "x", "d"}, []string{"daily"}},
		{[]string{"trigger", "-wait", "d"}, []string{"daily"}},
		{[]string{"trigger", "daily", ""}, nil},
		{[]string{"trigger", "-w"}, []string{"-wait"}},
		{[]string{"task", "pause", "t"}, []string{"tick"}},
		{[]string{"agent", "-raft-e"}, []string{"-raft-election-timeout"}},
		{[]string{"completion", ""}, []string{"bash", "fish", "zsh"}},
		{[]string{"completion", "bash", ""}, nil},
		{[]string{"nosuch", ""}, nil},
		{[]string{"__complete", ""}, nil},
		{[]string{"exec"}, []string{"executor"}},
	} {
		got := cp.complete(context.Background(), tc.words)
		if !slices.Equal(got, tc.want) {
			t.Errorf("complete %q = %q, want %q", tc.words, got, tc.want)
		}
	}
}

// TestComplete_Main: ax __complete prints the candidates one a line on
// Main's stdout; a cluster that cannot be reached offers no task names,
// within AX_COMPLETE_TIMEOUT.
func TestComplete_Main(t *testing.T) {
	t.Parallel()
	r := ax(t, nil, "__complete", "--", "instance", "l")
	if r.code != 0 || r.stdout != "list\nlog\n" {
		t.Errorf("exit %d, stdout %q", r.code, r.stdout)
	}
	r = ax(t, map[string]string{"AX_ADDR": "127.0.0.1:1", "AX_COMPLETE_TIMEOUT": "5s"}, "__complete", "--", "trigger", "")
	if r.code != 0 || r.stdout != "" || r.stderr != "" {
		t.Errorf("unreachable cluster: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
}

// TestREADME_CLIReference: the README's CLI reference names every
// command and subcommand of the table, and no command the table does not
// have.
func TestREADME_CLIReference(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, ref, ok := strings.Cut(string(b), "## CLI reference\n")
	if !ok {
		t.Fatal("README.md has no CLI reference")
	}
	_, block, _ := strings.Cut(ref, "```\n")
	block, _, _ = strings.Cut(block, "```")
	lines := map[string][]string{} // by command: its synopsis lines
	for _, l := range strings.Split(block, "\n") {
		f := strings.Fields(l)
		if len(f) < 2 || f[0] != "ax" {
			continue
		}
		if lookup(f[1]) == nil {
			t.Errorf("README's CLI reference names %q, which ax does not have: %s", f[1], l)
		}
		lines[f[1]] = append(lines[f[1]], strings.Join(f[2:], " "))
	}
	for _, e := range commands() {
		if e.hidden {
			continue
		}
		syn, ok := lines[e.name]
		if !ok {
			t.Errorf("README's CLI reference does not show ax %s", e.name)
		}
		for _, s := range e.subs {
			// A subcommand is a word of its group's lines: "task
			// get|history|events NAME", "acl bootstrap | token list".
			re := regexp.MustCompile(`(?m)(^|[ |])` + regexp.QuoteMeta(s.name) + `($|[ |])`)
			if !re.MatchString(strings.Join(syn, "\n")) {
				t.Errorf("README's CLI reference does not show ax %s %s", e.name, s.name)
			}
		}
	}
}

// TestCommands_GroupUsageNamesEverySub: a group's help names each of its
// subcommands, and each word of a subcommand's help line is one the
// table has (the help's Subcommands section is prose, the table the
// truth).
func TestCommands_GroupUsageNamesEverySub(t *testing.T) {
	t.Parallel()
	for _, e := range commands() {
		if e.subs == nil {
			continue
		}
		_, section, _ := strings.Cut(e.usage, "Subcommands:\n")
		section, _, _ = strings.Cut(section, "\n\n")
		for _, s := range e.subs {
			re := regexp.MustCompile(`(^|[\s|])` + regexp.QuoteMeta(s.name) + `($|[\s|])`)
			if !re.MatchString(e.usage) {
				t.Errorf("ax %s -h does not name its subcommand %q", e.name, s.name)
			}
		}
		for _, l := range strings.Split(section, "\n") {
			// A subcommand line starts with a tab and a word; a
			// continuation line starts with spaces.
			first, _, _ := strings.Cut(strings.TrimPrefix(l, "\t"), " ")
			if !strings.HasPrefix(l, "\t") || strings.HasPrefix(l, "\t ") || first == "" {
				continue
			}
			for _, w := range strings.Split(first, "|") {
				if sub, _ := e.sub(append(strings.Fields(w), "x")); sub == nil && !slices.ContainsFunc(e.subs, func(s entry) bool { return strings.HasPrefix(s.name, w+" ") }) {
					t.Errorf("ax %s -h names %q, which the table does not have", e.name, w)
				}
			}
		}
	}
}

// visibleCommands are the command names ax's usage lists.
func visibleCommands() []string {
	var names []string
	for _, e := range commands() {
		if !e.hidden {
			names = append(names, e.name)
		}
	}
	return names
}
