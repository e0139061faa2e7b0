package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/ax-scheduler/ax/internal/cli"
	"github.com/ax-scheduler/ax/internal/view"
	"github.com/ax-scheduler/ax/model"
)

// completionCmd is ax completion.
type completionCmd struct{ base }

func newCompletionCmd(m *Main) command {
	c := &completionCmd{}
	c.init(m, "completion", `
Usage: ax completion bash|zsh|fish

Prints a shell completion script: commands, subcommands, flags, some
flag values (-o, -state, -source, -paused, -role) and, for trigger,
submit, backfill and task get|pause|resume|delete|history|events, the
task names of the cluster (-addr / AX_ADDR, asked with a 1s timeout).
The script asks the ax on the PATH (ax __complete), so completions
follow the binary's own commands and flags.

Examples:
	source <(ax completion bash)                          # in ~/.bashrc
	ax completion zsh > "${fpath[1]}/_ax"                 # then restart zsh
	ax completion fish > ~/.config/fish/completions/ax.fish
`)
	return c
}

func (c *completionCmd) Run(ctx context.Context, args []string) error {
	if err := c.fs.Parse(args); err != nil {
		return err
	}
	if c.fs.NArg() != 1 {
		return fmt.Errorf("completion: want one shell: bash, zsh or fish")
	}
	script, ok := completionScripts[c.fs.Arg(0)]
	if !ok {
		return fmt.Errorf("completion: unknown shell %q: want bash, zsh or fish", c.fs.Arg(0))
	}
	fmt.Fprint(c.m.Stdout, script)
	return nil
}

// completionScripts call "ax __complete -- WORDS", WORDS being the words
// after "ax" up to the cursor, the last one the word being completed;
// with no candidates they fall back to file names.
var completionScripts = map[string]string{
	"bash": `# ax completion for bash: source <(ax completion bash)
_ax_complete() {
    local IFS=$'\n'
    COMPREPLY=($(ax __complete -- "${COMP_WORDS[@]:1:$COMP_CWORD}" 2>/dev/null))
}
complete -o default -F _ax_complete ax
`,
	"zsh": `#compdef ax
# ax completion for zsh: ax completion zsh > "${fpath[1]}/_ax"
_ax() {
    local -a cands
    cands=("${(@f)$(ax __complete -- "${(@)words[2,CURRENT]}" 2>/dev/null)}")
    if [[ -n "${cands[1]}" ]]; then
        compadd -- "${cands[@]}"
    else
        _files
    fi
}
if [[ "$funcstack[1]" = "_ax" ]]; then _ax "$@"; else compdef _ax ax; fi
`,
	"fish": `# ax completion for fish: ax completion fish > ~/.config/fish/completions/ax.fish
function __ax_complete
    set -l words (commandline -opc) (commandline -ct)
    set -l cands (ax __complete -- $words[2..-1] 2>/dev/null)
    if test (count $cands) -gt 0
        printf '%s\n' $cands
    else
        __fish_complete_path (commandline -ct)
    end
end
complete -c ax -f -a '(__ax_complete)'
`,
}

// completeCmd is ax __complete, which the completion scripts call.
type completeCmd struct{ base }

func newCompleteCmd(m *Main) command {
	c := &completeCmd{}
	c.init(m, "__complete", "Usage: ax __complete -- WORDS...\n\nPrints the completions of the last word (called by the completion scripts).\n")
	return c
}

// Run prints the candidates for the last of the words after "--", one
// a line. The words are not parsed as its flags: they are a command line
// being typed.
func (c *completeCmd) Run(ctx context.Context, args []string) error {
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	if len(args) == 0 {
		args = []string{""}
	}
	cp := completer{m: c.m, tasks: c.m.clusterTasks}
	for _, cand := range cp.complete(ctx, args) {
		fmt.Fprintln(c.m.Stdout, cand)
	}
	return nil
}

// completer finds the candidates for the last of words (the words after
// "ax"): commands and subcommands from the command table, flags from the
// named command's own flag set, and some flag and argument values.
type completer struct {
	m *Main
	// tasks lists the cluster's task names; args are the command's
	// arguments so far (their -addr, -token...).
	tasks func(ctx context.Context, args []string) []string
}

// flagValues are the values offered for flags that take one of a few.
var flagValues = map[string][]string{
	"o":      {view.FormatTable, view.FormatJSON, view.FormatYAML},
	"state":  {model.StateScheduled, model.StateReady, model.StateRunning, model.StateRetrying, model.StateBlocked, model.StateWaitingApproval, model.StateSuccess, model.StateFailed, model.StateTerminated, model.StateSkipped, model.StateCanceled},
	"source": model.Sources,
	"paused": {"true", "false"},
	"role":   {model.RoleReader, model.RoleOperator, model.RoleWriter, model.RoleAdmin, model.RoleExecutor},
}

func (c completer) complete(ctx context.Context, words []string) []string {
	cur, done := words[len(words)-1], words[:len(words)-1]
	if len(done) == 0 {
		return matching(cur, append(visibleCommands(), "help"))
	}
	if done[0] == "help" {
		if len(done) == 1 {
			return matching(cur, visibleCommands())
		}
		return nil
	}
	e := lookup(done[0])
	if e == nil || e.hidden {
		return nil
	}
	rest := done[1:]
	if e.subs != nil {
		sub, n := e.sub(rest)
		if sub == nil { // still in the subcommand's words
			var next []string
			for _, s := range e.subs {
				w := strings.Fields(s.name)
				if len(rest) < len(w) && slices.Equal(rest, w[:len(rest)]) && !slices.Contains(next, w[len(rest)]) {
					next = append(next, w[len(rest)])
				}
			}
			return matching(cur, next)
		}
		e, rest = sub, rest[n:]
	}
	fs := e.new(c.m).Flags()
	// The value of the flag before the cursor?
	if len(rest) > 0 {
		last := rest[len(rest)-1]
		if f := fs.Lookup(flagName(last)); f != nil && takesValue(f) && !strings.Contains(last, "=") {
			if f.Name == "task" {
				return matching(cur, c.tasks(ctx, rest))
			}
			return matching(cur, flagValues[f.Name])
		}
	}
	if strings.HasPrefix(cur, "-") {
		var names []string
		fs.VisitAll(func(f *flag.Flag) { names = append(names, "-"+f.Name) })
		return matching(cur, names)
	}
	if positionals(rest, fs) > 0 {
		return nil
	}
	switch {
	case e.taskArg:
		return matching(cur, c.tasks(ctx, rest))
	case e.choices != nil:
		return matching(cur, e.choices)
	}
	return nil
}

// takesValue reports whether f takes a value (-o json), unlike a boolean
// (-w).
func takesValue(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return !ok || !b.IsBoolFlag()
}

// flagName is the name of a flag word ("-o", "--addr=x"), "" for an
// argument.
func flagName(w string) string {
	if !strings.HasPrefix(w, "-") {
		return ""
	}
	name, _, _ := strings.Cut(strings.TrimLeft(w, "-"), "=")
	return name
}

// positionals counts the arguments among words that are not flags of fs
// or their values.
func positionals(words []string, fs *flag.FlagSet) int {
	n := 0
	for i := 0; i < len(words); i++ {
		name := flagName(words[i])
		switch f := fs.Lookup(name); {
		case name == "":
			n++
		case f != nil && takesValue(f) && !strings.Contains(words[i], "="):
			i++ // its value
		}
	}
	return n
}

// matching are the candidates that start with prefix, sorted.
func matching(prefix string, cands []string) []string {
	var out []string
	for _, c := range cands {
		if strings.HasPrefix(c, prefix) {
			out = append(out, c)
		}
	}
	sort.Strings(out)
	return out
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

// clusterTasks lists the task names of the cluster that args (-addr,
// -token... or their environment variables) name, within a second (or
// AX_COMPLETE_TIMEOUT); none on any failure.
func (m *Main) clusterTasks(ctx context.Context, args []string) []string {
	fs := cli.NewFlagSet("complete", "", io.Discard)
	var cf clientFlags
	cf.register(fs, m.Getenv)
	// Only the client flags (and their values) of the line.
	var mine []string
	for i := 0; i < len(args); i++ {
		f := fs.Lookup(flagName(args[i]))
		if f == nil {
			continue
		}
		mine = append(mine, args[i])
		if !strings.Contains(args[i], "=") && i+1 < len(args) {
			mine = append(mine, args[i+1])
			i++
		}
	}
	if fs.Parse(mine) != nil {
		return nil
	}
	cl, err := cf.client()
	if err != nil {
		return nil
	}
	lctx, cancel := context.WithTimeout(ctx, m.completeWithin(time.Second))
	defer cancel()
	l, err := cl.ListTasks(lctx, model.TaskFilter{Limit: 1000})
	if err != nil {
		return nil
	}
	names := make([]string, len(l.Tasks))
	for i, t := range l.Tasks {
		names[i] = t.Name
	}
	return names
}

// completeWithin is how long asking the cluster may take: def, so that a
// Tab never hangs, unless AX_COMPLETE_TIMEOUT sets it (a slow or busy
// machine; the tests set it so that CPU contention does not fail them).
func (m *Main) completeWithin(def time.Duration) time.Duration {
	if d, err := time.ParseDuration(m.Getenv("AX_COMPLETE_TIMEOUT")); err == nil && d > 0 {
		return d
	}
	return def
}
